"""``complex`` (build complex64 from real and imaginary parts) and ``angle`` (the argument of a
complex number; 0 or pi for reals). Complex data is read and written through float32 views of
its (real, imag) pairs (``view_as_real``), since kernels have no complex type."""

import triton
import triton.language as tl

from nbx_core import dtypes as D
from nbx_core.ops.views import select, view_as_real
from nbx_core.runtime.pointwise import pointwise
from nbx_core.shape import broadcast_shapes
from nbx_core.tensor import NBXTensor, check_device, empty_tensor
from nbx_core.tensor.args import check_dtype, tensor_arg

from . import mathlib as M


@triton.jit
def _part(x, sc):
    return x


@triton.jit
def _angle_real(x, sc):
    # pi for negatives, 0 otherwise (-0.0 included), NaN kept.
    return tl.where(x < 0, M.PI, tl.where(x != x, x, 0.0))


@triton.jit
def _angle_complex(re, im, sc):
    return M.atan2(im, re)


def complex(real: NBXTensor, imag: NBXTensor) -> NBXTensor:  # noqa: A001
    """``aten::complex``: ``real + 1j * imag`` as complex64; both parts float32 (NBX has no complex128
    or complex32), broadcast together."""
    op = "aten::complex"
    for arg, t in (("real", real), ("imag", imag)):
        check_dtype(
            op,
            tensor_arg(op, t, arg),
            arg,
            {D.float32},
            fix="NBX builds complex64 only, from float32 parts: cast both parts to float32",
        )
    device = check_device(op, real, imag)
    out = empty_tensor(broadcast_shapes(op, real.shape, imag.shape), D.complex64, device)
    pairs = view_as_real(out)
    pointwise(op, _part, real, out=select(pairs, -1, 0))
    pointwise(op, _part, imag, out=select(pairs, -1, 1))
    return out


def angle(self: NBXTensor, *, out: NBXTensor | None = None) -> NBXTensor:
    """``aten::angle``: ``atan2(imag, real)`` (float32) for complex64; 0 or pi for real inputs
    (integers give the default float), NaN kept."""
    op = "aten::angle"
    tensor_arg(op, self)
    if self.dtype.is_complex:
        pairs = view_as_real(self)
        return pointwise(op, _angle_complex, select(pairs, -1, 0), select(pairs, -1, 1), out=out)
    return pointwise(op, _angle_real, self, float_op=True, out=out)
