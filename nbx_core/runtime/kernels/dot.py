"""A workaround every ``tl.dot`` user needs on the cpu backend.

Triton's interpreter reads bfloat16 ``tl.dot`` operands' bits as integers
(:attr:`~nbx_core.runtime.traits.BackendTraits.widens_bf16_dot`). Widening them to float32 is
exact (bfloat16 products fit float32, and even tf32), and the GPU path is left as it is.
"""

import triton
import triton.language as tl

from ..launch import TRAITS

_WIDEN = tl.constexpr(TRAITS.widens_bf16_dot)


@triton.jit
def dot_operand(x):
    """``x`` ready for ``tl.dot``: bfloat16 widened to float32 on the interpreter, else unchanged."""
    if _WIDEN and x.dtype == tl.bfloat16:
        return x.to(tl.float32)
    else:
        return x
