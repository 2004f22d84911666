"""Binary arithmetic: add/sub/rsub/mul with alpha, div (true, trunc, floor), floor_divide,
remainder (Python sign), fmod (C sign), pow (integer, float, scalar base), atan2, lerp,
addcmul, addcdiv.

Promotion is torch's (``result_type``: dimensioned tensors first, then 0-dim tensors, then
Python scalars, each only raising the category). Scalar parameters (alpha, value) travel as
number operands with the common dtype fixed, so they are exact in float64 and never widen it.
Integer division by zero is not detected (that needs the data before launch); the result is
unspecified, where torch's CPU kernel raises.
"""

from typing import Any

import triton
import triton.language as tl

from nbx_core import dtypes as D
from nbx_core.errors import NbxTypeError, NbxValueError
from nbx_core.runtime.kernels import precise as P
from nbx_core.runtime.pointwise import pointwise
from nbx_core.tensor import NBXTensor
from nbx_core.tensor.args import FLOAT8, FLOATING, REAL, check_dtype, dtype_of, number_arg, operand, tensor_arg

from . import mathlib as M
from .complex_ops import multiply


@triton.jit
def _add(x, y, sc):
    return x + y


@triton.jit
def _add_alpha(x, y, alpha, sc):
    return x + alpha * y


@triton.jit
def _sub(x, y, sc):
    return x - y


@triton.jit
def _sub_alpha(x, y, alpha, sc):
    return x - alpha * y


@triton.jit
def _rsub_alpha(x, y, alpha, sc):
    return y - alpha * x


@triton.jit
def _mul(x, y, sc):
    return x * y


@triton.jit
def _truediv(x, y, sc):
    return P.div(x, y)


@triton.jit
def _div_trunc_float(x, y, sc):
    return M.trunc(P.div(x, y))


@triton.jit
def _div_trunc_int(x, y, sc):
    # Triton's integer // is C division: truncates toward zero.
    return x // y


@triton.jit
def _div_floor_float(x, y, sc):
    # torch's div_floor_floating: through fmod, so that a == b * q + r holds as closely as possible.
    mod = P.fmod(x, y)
    q = P.div(x - mod, y)
    q = tl.where((mod != 0) & ((y < 0) != (mod < 0)), q - 1.0, q)
    f = tl.floor(q)
    f = tl.where(q - f > 0.5, f + 1.0, f)
    zero = tl.where(M.signbit(P.div(x, y)), -0.0, 0.0)
    f = tl.where(q != 0, f, zero)
    return tl.where(y == 0, P.div(x, y), f)


@triton.jit
def _div_floor_int(x, y, sc):
    q = x // y
    r = x - q * y
    return tl.where((r != 0) & ((r < 0) != (y < 0)), q - 1, q)


@triton.jit
def _fmod(x, y, sc):
    # C's fmod / srem: the dividend's sign.
    return P.fmod(x, y)


@triton.jit
def _remainder(x, y, sc):
    r = P.fmod(x, y)
    return tl.where((r != 0) & ((r < 0) != (y < 0)), r + y, r)


@triton.jit
def _pow_float(x, y, sc):
    a = tl.abs(x)
    r = P.pow(a, y)
    y_int = tl.floor(y) == y
    y_odd = y_int & ((y - 2.0 * tl.floor(0.5 * y)) == 1.0)
    r = tl.where(M.signbit(x) & y_odd, -r, r)
    r = tl.where((x < 0) & (x > -float("inf")) & (~y_int), float("nan"), r)
    r = tl.where((a == 1.0) & (tl.abs(y) == float("inf")), 1.0, r)
    r = tl.where((y == 0) | (x == 1.0), 1.0, r)
    return r


@triton.jit
def _pow_bool(x, y, sc):
    # A bool tensor to a Python bool: x ** True is x, x ** False is True (torch's exponents 1 and 0).
    return x | (y == 0)


@triton.jit
def _pow_int(x, y, sc):
    # Square-and-multiply over the exponent's bits; wraps on overflow like torch.
    r = x * 0 + 1
    b = x
    e = y
    for _ in range(63):
        r = tl.where((e & 1) == 1, r * b, r)
        b = b * b
        e = e >> 1
    # Negative exponents (tensor exponents only): 1 and -1 keep a magnitude of 1, the rest give 0.
    odd = (y & 1) == 1
    neg = tl.where(x == 1, 1, tl.where(x == -1, tl.where(odd, -1, 1), 0))
    return tl.where(y < 0, neg.to(r.dtype), r)


@triton.jit
def _atan2(y, x, sc):
    return M.atan2(y, x)


@triton.jit
def _lerp(a, b, w, sc):
    d = b - a
    return tl.where(tl.abs(w) < 0.5, a + w * d, b - d * (1.0 - w))


@triton.jit
def _addcmul(s, a, b, v, sc):
    return s + v * a * b


@triton.jit
def _addcdiv(s, a, b, v, sc):
    return s + v * (a / b)


def _scalar(op: str, value: Any, common: D.DType, arg: str) -> bool | int | float:
    """torch's alpha_check: bool only for bool results, no float for integral results."""
    if type(value) is int:
        return value
    if isinstance(number_arg(op, value, arg, allow_bool=True), bool) and common is not D.bool_:
        raise NbxTypeError(f"{op}: boolean {arg} is only supported for bool results: pass an int or float")
    if common.is_integral and isinstance(value, float):
        raise NbxTypeError(
            f"{op}: for integral input tensors, argument {arg} must not be a floating point number: "
            "pass an int or cast the inputs to a floating dtype"
        )
    return value


def _common(op: str, *values: Any) -> D.DType:
    first = values[0]
    if len(values) == 2 and type(first) is NBXTensor and type(values[1]) is NBXTensor:
        dtype = first.dtype
        if values[1].dtype is dtype and not dtype.is_complex:  # the usual case, without result_type
            return dtype
    args = ("self", "other", "tensor1", "tensor2")
    names = [args[i] if i < len(args) else f"operand {i}" for i in range(len(values))]
    vals = [check_dtype(op, operand(op, v, arg), arg, REAL) for arg, v in zip(names, values, strict=True)]
    return D.result_type(*vals)


def _compute(common: D.DType) -> D.DType | None:
    # bool arithmetic (add is or, mul is and) computes in int64 and stores ``!= 0``.
    return D.int64 if common is D.bool_ else None


def add(self: NBXTensor, other: Any, alpha: Any = 1, *, out: NBXTensor | None = None) -> NBXTensor:
    """``aten::add`` (Tensor and Scalar): ``self + alpha * other``."""
    op = "aten::add"
    tensor_arg(op, self)
    common = _common(op, self, other)
    alpha = _scalar(op, alpha, common, "alpha")
    if alpha == 1 and not isinstance(alpha, bool):
        return pointwise(op, _add, self, other, dtype=common, compute=_compute(common), out=out)
    return pointwise(op, _add_alpha, self, other, alpha, dtype=common, compute=_compute(common), out=out)


def _check_sub(op: str, self: Any, other: Any) -> None:
    a, b = dtype_of(self) is D.bool_, dtype_of(other) is D.bool_
    if a and b:
        raise NbxTypeError(f"{op}: subtraction of two bool tensors is not supported: use logical_xor instead")
    if a or b:
        raise NbxTypeError(f"{op}: subtraction with a bool tensor is not supported: use logical_not to invert a mask")


def sub(self: NBXTensor, other: Any, alpha: Any = 1, *, out: NBXTensor | None = None) -> NBXTensor:
    """``aten::sub`` (Tensor and Scalar): ``self - alpha * other``; bool operands are refused."""
    op = "aten::sub"
    tensor_arg(op, self)
    common = _common(op, self, other)
    _check_sub(op, self, other)
    alpha = _scalar(op, alpha, common, "alpha")
    if alpha == 1:
        return pointwise(op, _sub, self, other, dtype=common, out=out)
    return pointwise(op, _sub_alpha, self, other, alpha, dtype=common, out=out)


def rsub(self: NBXTensor, other: Any, alpha: Any = 1, *, out: NBXTensor | None = None) -> NBXTensor:
    """``aten::rsub`` (Tensor and Scalar): ``other - alpha * self``."""
    op = "aten::rsub"
    tensor_arg(op, self)
    common = _common(op, self, other)
    _check_sub(op, self, other)
    alpha = _scalar(op, alpha, common, "alpha")
    return pointwise(op, _rsub_alpha, self, other, alpha, dtype=common, out=out)


def mul(self: NBXTensor, other: Any, *, out: NBXTensor | None = None) -> NBXTensor:
    """``aten::mul`` (Tensor and Scalar); bool times bool is logical and; a complex64 operand gives a
    complex64 product (:func:`nbx_elementwise.complex_ops.multiply`)."""
    op = "aten::mul"
    tensor_arg(op, self)
    if self.dtype.is_complex or (isinstance(other, NBXTensor) and other.dtype.is_complex):
        return multiply(op, self, other, out)
    common = _common(op, self, other)
    return pointwise(op, _mul, self, other, dtype=common, compute=_compute(common), out=out)


def _div(op: str, self: Any, other: Any, rounding_mode: str | None, out: NBXTensor | None) -> NBXTensor:
    common = _common(op, self, other)
    if rounding_mode is None:
        return pointwise(op, _truediv, self, other, float_op=True, out=out)
    if rounding_mode not in ("trunc", "floor"):
        raise NbxValueError(f"{op}: rounding_mode must be None, 'trunc' or 'floor', got {rounding_mode!r}")
    if common is D.bool_:
        raise NbxTypeError(f"{op}: rounding division is not defined for bool tensors: cast them to an integer dtype")
    if common.is_floating_point:
        fn = _div_trunc_float if rounding_mode == "trunc" else _div_floor_float
    else:
        fn = _div_trunc_int if rounding_mode == "trunc" else _div_floor_int
    return pointwise(op, fn, self, other, dtype=common, out=out)


def div(self: NBXTensor, other: Any, *, rounding_mode: str | None = None, out: NBXTensor | None = None) -> NBXTensor:
    """``aten::div`` (Tensor, Scalar, *_mode): true division (integers give float), or rounded
    toward zero (``'trunc'``) or toward -inf (``'floor'``) in the common dtype."""
    op = "aten::div"
    tensor_arg(op, self)
    return _div(op, self, other, rounding_mode, out)


def floor_divide(self: NBXTensor, other: Any, *, out: NBXTensor | None = None) -> NBXTensor:
    """``aten::floor_divide`` (Tensor and Scalar): division rounded toward -inf."""
    op = "aten::floor_divide"
    tensor_arg(op, self)
    return _div(op, self, other, "floor", out)


def _modulo(op: str, fn: Any, self: Any, other: Any, out: NBXTensor | None) -> NBXTensor:
    common = _common(op, self, other)
    if common is D.bool_:
        raise NbxTypeError(f"{op}: not defined for bool tensors: cast them to an integer dtype")
    return pointwise(op, fn, self, other, dtype=common, out=out)


def remainder(self: Any, other: Any, *, out: NBXTensor | None = None) -> NBXTensor:
    """``aten::remainder`` (Tensor, Scalar, Scalar_Tensor): the sign of the divisor, as Python's %."""
    return _modulo("aten::remainder", _remainder, self, other, out)


def fmod(self: NBXTensor, other: Any, *, out: NBXTensor | None = None) -> NBXTensor:
    """``aten::fmod`` (Tensor and Scalar): the sign of the dividend, as C's fmod."""
    op = "aten::fmod"
    tensor_arg(op, self)
    return _modulo(op, _fmod, self, other, out)


def pow(self: Any, exponent: Any, *, out: NBXTensor | None = None) -> NBXTensor:  # noqa: A001
    """``aten::pow`` (Tensor_Tensor, Tensor_Scalar, Scalar): integer powers by squaring,
    float powers in float64 with C's special cases (negative bases, zeros, infinities)."""
    op = "aten::pow"
    if not isinstance(self, NBXTensor) and not isinstance(exponent, NBXTensor):
        raise NbxTypeError(f"{op}: needs a tensor base or a tensor exponent")
    common = _common(op, self, exponent)
    if common is D.bool_:
        if isinstance(exponent, bool):
            return pointwise(op, _pow_bool, self, exponent, out=out)
        raise NbxTypeError(
            f"{op}: not defined for bool tensors (but for a Python bool exponent): cast them to "
            "an integer or floating dtype"
        )
    if common.is_floating_point:
        return pointwise(op, _pow_float, self, exponent, dtype=common, compute=D.float64, out=out)
    if not isinstance(exponent, NBXTensor) and exponent < 0:
        raise NbxValueError(f"{op}: integers to negative integer powers are not allowed: use a floating base")
    return pointwise(op, _pow_int, self, exponent, dtype=common, compute=D.int64, out=out)


def atan2(self: NBXTensor, other: NBXTensor, *, out: NBXTensor | None = None) -> NBXTensor:
    """``aten::atan2``: the angle of (other, self) in (-pi, pi]; integers give float."""
    op = "aten::atan2"
    tensor_arg(op, self, dtypes=REAL)
    tensor_arg(op, other, "other", dtypes=REAL)
    return pointwise(op, _atan2, self, other, float_op=True, out=out)


def lerp(self: NBXTensor, end: NBXTensor, weight: Any, *, out: NBXTensor | None = None) -> NBXTensor:
    """``aten::lerp`` (Scalar and Tensor weight): torch's two-sided form, exact at both ends."""
    op = "aten::lerp"
    tensor_arg(op, self, dtypes=FLOATING | FLOAT8)
    tensor_arg(op, end, "end")
    for arg, v in (("end", end), ("weight", weight)):
        if isinstance(v, NBXTensor) and v.dtype is not self.dtype:
            raise NbxTypeError(
                f"{op}: expected dtype {self.dtype} for '{arg}' but got {v.dtype}: cast it to match self"
            )
    w = operand(op, weight, "weight")
    return pointwise(op, _lerp, self, end, w, dtype=self.dtype, out=out)


def _addc(
    op: str, fn: Any, self: NBXTensor, tensor1: NBXTensor, tensor2: NBXTensor, value: Any, out: NBXTensor | None
) -> NBXTensor:
    for arg, v in (("self", self), ("tensor1", tensor1), ("tensor2", tensor2)):
        tensor_arg(op, v, arg)
    common = _common(op, self, tensor1, tensor2)
    if common is D.bool_:
        raise NbxTypeError(f"{op}: not defined for bool tensors: cast them to a numeric dtype")
    number_arg(op, value, "value")
    # An integral result casts a float value toward zero, as torch's value.to<scalar_t>().
    return pointwise(op, fn, self, tensor1, tensor2, value, dtype=common, out=out)


def addcmul(
    self: NBXTensor, tensor1: NBXTensor, tensor2: NBXTensor, *, value: Any = 1, out: NBXTensor | None = None
) -> NBXTensor:
    """``aten::addcmul``: ``self + value * tensor1 * tensor2``."""
    return _addc("aten::addcmul", _addcmul, self, tensor1, tensor2, value, out)


def addcdiv(
    self: NBXTensor, tensor1: NBXTensor, tensor2: NBXTensor, *, value: Any = 1, out: NBXTensor | None = None
) -> NBXTensor:
    """``aten::addcdiv``: ``self + value * tensor1 / tensor2``; integer tensor1 / tensor2 are refused."""
    op = "aten::addcdiv"
    if (
        isinstance(tensor1, NBXTensor)
        and tensor1.dtype.is_integral
        and isinstance(tensor2, NBXTensor)
        and tensor2.dtype.is_integral
    ):
        raise NbxTypeError(
            f"{op}: integer division of tensor1 by tensor2 is not supported: cast them to a floating dtype"
        )
    return _addc(op, _addcdiv, self, tensor1, tensor2, value, out)
