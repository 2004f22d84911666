"""``complex`` (build complex64 from real and imaginary parts), ``polar`` (from magnitude and
angle), complex multiplication (``aten::mul`` of a complex64 operand: rotary embeddings written
with complex numbers, as Llama 4's) and ``angle`` (the argument of a complex number; 0 or pi for
reals). Complex data is read and written through float32 views of
its (real, imag) pairs (``view_as_real``), since kernels have no complex type."""

import builtins
from typing import Any

import triton
import triton.language as tl

from nbx_core import dtypes as D
from nbx_core.errors import NbxTypeError
from nbx_core.ops.copy import copy_
from nbx_core.ops.views import select, view_as_real
from nbx_core.runtime.pointwise import pointwise
from nbx_core.shape import broadcast_shapes
from nbx_core.tensor import NBXTensor, check_device, empty_tensor
from nbx_core.tensor.args import check_dtype, out_arg, tensor_arg

from . import mathlib as M


@triton.jit
def _part(x, sc):
    return x


@triton.jit
def _polar_real(r, t, sc):
    return r * tl.cos(t)


@triton.jit
def _polar_imag(r, t, sc):
    return r * tl.sin(t)


@triton.jit
def product_real(ar, ai, br, bi, sc):
    """The real part of ``(ar + i ai) * (br + i bi)`` (a pointwise function; rotary embeddings too)."""
    return ar * br - ai * bi


@triton.jit
def product_imag(ar, ai, br, bi, sc):
    """The imaginary part of ``(ar + i ai) * (br + i bi)``."""
    return ar * bi + ai * br


@triton.jit
def _angle_real(x, sc):
    # pi for negatives, 0 otherwise (-0.0 included), NaN kept.
    return tl.where(x < 0, M.PI, tl.where(x != x, x, 0.0))


@triton.jit
def _angle_complex(re, im, sc):
    return M.atan2(im, re)


def _complex_out(op: str, a: tuple[str, NBXTensor], b: tuple[str, NBXTensor]) -> tuple[NBXTensor, NBXTensor]:
    """A complex64 result of the broadcast shape of two float32 arguments (name, tensor), and its
    (..., 2) float32 view of (real, imag) pairs."""
    for arg, t in (a, b):
        check_dtype(
            op,
            tensor_arg(op, t, arg),
            arg,
            {D.float32},
            fix="NBX builds complex64 only, from float32 parts: cast both parts to float32",
        )
    device = check_device(op, a[1], b[1])
    out = empty_tensor(broadcast_shapes(op, a[1].shape, b[1].shape), D.complex64, device)
    return out, view_as_real(out)


def complex(real: NBXTensor, imag: NBXTensor) -> NBXTensor:  # noqa: A001
    """``aten::complex``: ``real + 1j * imag`` as complex64; both parts float32 (NBX has no complex128
    or complex32), broadcast together."""
    op = "aten::complex"
    out, pairs = _complex_out(op, ("real", real), ("imag", imag))
    pointwise(op, _part, real, out=select(pairs, -1, 0))
    pointwise(op, _part, imag, out=select(pairs, -1, 1))
    return out


def polar(abs: NBXTensor, angle: NBXTensor) -> NBXTensor:  # noqa: A002
    """``aten::polar``: ``abs * (cos(angle) + 1j * sin(angle))`` as complex64; both float32 (NBX has
    no complex128), broadcast together."""
    op = "aten::polar"
    out, pairs = _complex_out(op, ("abs", abs), ("angle", angle))
    pointwise(op, _polar_real, abs, angle, out=select(pairs, -1, 0))
    pointwise(op, _polar_imag, abs, angle, out=select(pairs, -1, 1))
    return out


def multiply(op: str, self: Any, other: Any, out: NBXTensor | None = None) -> NBXTensor:
    """``self * other`` where either is a complex64 tensor and the other is complex64, a real tensor
    or a real number: complex64, broadcast, computed in float32 on the (real, imag) pairs."""
    for arg, x in (("self", self), ("other", other)):
        if isinstance(x, builtins.complex):
            raise NbxTypeError(f"{op}: {arg} is a complex Python number: pass it as a complex64 tensor")
        if isinstance(x, NBXTensor) and x.dtype.is_complex and x.dtype is not D.complex64:
            raise NbxTypeError(f"{op}: {arg} has dtype {x.dtype}; NBX multiplies complex64 only")
    tensors = [x for x in (self, other) if isinstance(x, NBXTensor)]
    device = check_device(op, *tensors)
    shape = broadcast_shapes(op, *(x.shape for x in tensors))
    out = out_arg(op, out, shape, D.complex64)
    # Into new memory: the imaginary part reads both parts of the inputs after the real part is
    # written, so an out= that is an input would see its own result.
    result = empty_tensor(shape, D.complex64, device)
    pairs = view_as_real(result)
    re, im = select(pairs, -1, 0), select(pairs, -1, 1)
    a, b = (self, other) if isinstance(self, NBXTensor) and self.dtype.is_complex else (other, self)
    a_pairs = view_as_real(a)
    ar, ai = select(a_pairs, -1, 0), select(a_pairs, -1, 1)
    if isinstance(b, NBXTensor) and b.dtype.is_complex:
        b_pairs = view_as_real(b)
        br, bi = select(b_pairs, -1, 0), select(b_pairs, -1, 1)
    else:
        # A real operand is (b + 0j), as torch promotes it: inf * 0 in the cross terms gives NaN there too.
        br, bi = b, 0.0
    pointwise(op, product_real, ar, ai, br, bi, dtype=D.float32, out=re)
    pointwise(op, product_imag, ar, ai, br, bi, dtype=D.float32, out=im)
    return result if out is None else copy_(out, result)


@triton.jit
def _magnitude(re, im, sc):
    # hypot without overflow or underflow: the larger part times sqrt(1 + (smaller / larger)^2).
    a = tl.abs(re)
    b = tl.abs(im)
    hi = tl.maximum(a, b)
    lo = tl.minimum(a, b)
    r = lo / tl.where(hi == 0.0, 1.0, hi)
    result = hi * tl.sqrt_rn(1.0 + r * r)
    result = tl.where((a != a) | (b != b), float("nan"), result)
    return tl.where((a == float("inf")) | (b == float("inf")), float("inf"), result)  # inf even beside NaN


def magnitude(op: str, self: NBXTensor, out: NBXTensor | None = None) -> NBXTensor:
    """``|self|`` of a complex64 tensor (NBX's one complex dtype), float32, as torch's hypot."""
    pairs = view_as_real(self)
    return pointwise(op, _magnitude, select(pairs, -1, 0), select(pairs, -1, 1), dtype=D.float32, out=out)


def angle(self: NBXTensor, *, out: NBXTensor | None = None) -> NBXTensor:
    """``aten::angle``: ``atan2(imag, real)`` (float32) for complex64; 0 or pi for real inputs
    (integers give the default float), NaN kept."""
    op = "aten::angle"
    tensor_arg(op, self)
    if self.dtype.is_complex:
        pairs = view_as_real(self)
        return pointwise(op, _angle_complex, select(pairs, -1, 0), select(pairs, -1, 1), out=out)
    return pointwise(op, _angle_real, self, float_op=True, out=out)
