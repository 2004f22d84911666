"""Whole-tensor equality: one flag raised by any program that finds a differing element."""

from __future__ import annotations

import triton
import triton.language as tl

from ...shape import coalesce
from ...tensor import NBXTensor
from ..launch import block_size, cdiv, launch
from .indexing import block_indices, needs_int64, strided_offsets


@triton.jit
def _differs_kernel(a_ptr, b_ptr, flag_ptr, n, shape, a_strides, b_strides, COMPUTE: tl.constexpr,
                    NDIM: tl.constexpr, BLOCK: tl.constexpr, INT64: tl.constexpr):
    idx, mask = block_indices(n, BLOCK, INT64)
    a = tl.load(a_ptr + strided_offsets(idx, shape, a_strides, NDIM), mask=mask).to(COMPUTE)
    b = tl.load(b_ptr + strided_offsets(idx, shape, b_strides, NDIM), mask=mask).to(COMPUTE)
    # NaN != NaN, as torch.equal wants.
    bad = tl.max(((a != b) & mask).to(tl.int32), axis=0)
    if bad != 0:
        tl.atomic_max(flag_ptr, bad)


def differs(a: NBXTensor, b: NBXTensor, flag: NBXTensor, compute: object) -> None:
    """Raise ``flag`` (an int32 tensor holding 0) if any element of ``a`` and ``b`` differ."""
    n = a.numel()
    shape, (sa, sb) = coalesce(a.shape, a.stride(), b.stride())
    block = block_size(n)
    launch(_differs_kernel, (cdiv(n, block),), a, b, flag, n, shape, sa, sb, COMPUTE=compute,
           NDIM=len(shape), BLOCK=block, INT64=needs_int64(n, a, b))
