"""``nbx::rotary``: rotary position embedding, ``x * cos + rotate_half(x) * sin``.

transformers' ``apply_rotary_pos_emb`` (Llama, Qwen2, Mistral) writes ``rotate_half(x)`` as
``cat((-x[..., half:], x[..., :half]), -1)``; the ``cat`` stops elementwise fusion, so a plan ran
four launches per tensor. The fusion pattern of :mod:`nbx_elementwise.patterns` makes the
expression one call of this op, which writes each half of the result in one elementwise launch:

- first half: ``x1 * cos1 - x2 * sin1``;
- second half: ``x2 * cos2 + x1 * sin2``,

the real and imaginary parts of ``(x1 + i x2) * (cos + i sin)``, with ``x1, x2`` the halves of
``x`` along its last dim, computed in float32 and rounded once (the unfused chain rounds each of
its four results). Any other case the pattern matched (the halves taken along another dim, mixed
dtypes, or ``cos``/``sin`` wider than ``x``) runs the ops the graph wrote, as do non-float tensors
and Python numbers for ``cos`` or ``sin``.
"""

from __future__ import annotations

from nbx_core.ops import views
from nbx_core.ops.join import cat
from nbx_core.ops.views import narrow
from nbx_core.runtime.pointwise import pointwise
from nbx_core.shape import broadcast_shapes
from nbx_core.tensor import NBXTensor, empty_tensor
from nbx_core.tensor.args import FLOATING, tensor_arg

from .complex_ops import product_imag, product_real

_END = 9223372036854775807  # torch.export's end of an open slice, ``x[..., half:]``


def rotary(x: NBXTensor, cos: NBXTensor, sin: NBXTensor, dim: int, half: int) -> NBXTensor:
    """``nbx::rotary``: ``x * cos + cat((-x2, x1), -1) * sin`` where ``x1 = x[:half]`` and
    ``x2 = x[half:]`` along ``dim`` (see the module docstring)."""
    op = "nbx::rotary"
    tensor_arg(op, x, "x")
    if (
        isinstance(cos, NBXTensor)
        and isinstance(sin, NBXTensor)
        and x.dtype in FLOATING
        and x.dtype is cos.dtype is sin.dtype
        and x.ndim
        and dim in (-1, x.ndim - 1)
        and 2 * half == x.shape[-1]
        and broadcast_shapes(op, x.shape, cos.shape, sin.shape) == x.shape
    ):
        out = empty_tensor(x.shape, x.dtype, x.device)
        x1, x2 = narrow(x, -1, 0, half), narrow(x, -1, half, half)
        for fn, at in ((product_real, 0), (product_imag, half)):
            c = narrow(cos, -1, at, half) if cos.shape[-1] != 1 else cos
            s = narrow(sin, -1, at, half) if sin.shape[-1] != 1 else sin
            pointwise(op, fn, x1, x2, c, s, out=narrow(out, -1, at, half))
        return out
    rotated = cat([-views.slice(x, dim, half, _END), views.slice(x, dim, 0, half)], -1)
    return x * cos + rotated * sin
