"""Unary math: exp/log families, trigonometry, rounding, sign, classification, nan_to_num.

Ops that are real functions (exp, sin, sqrt ...) promote integer and bool inputs to the default
float, as torch does; rounding, abs and neg keep the input dtype (integers round to themselves).
"""

import builtins
from collections.abc import Callable
from typing import Any

import ml_dtypes
import triton
import triton.language as tl

from nbx_core import dtypes as D
from nbx_core.errors import NbxTypeError
from nbx_core.runtime.kernels import precise as P
from nbx_core.runtime.pointwise import pointwise
from nbx_core.tensor import NBXTensor
from nbx_core.tensor.args import BOOL, REAL, int_arg, number_arg, tensor_arg

from . import mathlib as M
from .complex_ops import magnitude

LOG10E = tl.constexpr(0.4342944819032518)


@triton.jit
def _abs(x, sc):
    return tl.abs(x)


@triton.jit
def _neg(x, sc):
    return -x


@triton.jit
def _exp(x, sc):
    return P.exp(x)


@triton.jit
def _exp2(x, sc):
    return tl.exp2(x)


@triton.jit
def _expm1(x, sc):
    return M.expm1(x)


@triton.jit
def _log(x, sc):
    return P.log(x)


@triton.jit
def _log2(x, sc):
    return tl.log2(x)


@triton.jit
def _log10(x, sc):
    return P.log(x) * LOG10E


@triton.jit
def _log1p(x, sc):
    return M.log1p(x)


@triton.jit
def _sqrt(x, sc):
    # sqrt_rn is float32-only; float64's tl.sqrt is already correctly rounded.
    if x.dtype == tl.float64:
        return tl.sqrt(x)
    else:
        return tl.sqrt_rn(x)


@triton.jit
def _rsqrt(x, sc):
    return 1.0 / _sqrt(x, sc)


@triton.jit
def _reciprocal(x, sc):
    return 1.0 / x


@triton.jit
def _sin(x, sc):
    return tl.sin(x)


@triton.jit
def _cos(x, sc):
    return tl.cos(x)


@triton.jit
def _tan(x, sc):
    return tl.sin(x) / tl.cos(x)


@triton.jit
def _sinh(x, sc):
    return M.sinh(x)


@triton.jit
def _cosh(x, sc):
    return M.cosh(x)


@triton.jit
def _tanh(x, sc):
    return M.tanh(x)


@triton.jit
def _asin(x, sc):
    return M.asin(x)


@triton.jit
def _acos(x, sc):
    return M.acos(x)


@triton.jit
def _atan(x, sc):
    return M.atan(x)


@triton.jit
def _asinh(x, sc):
    return M.asinh(x)


@triton.jit
def _acosh(x, sc):
    return M.acosh(x)


@triton.jit
def _atanh(x, sc):
    return M.atanh(x)


@triton.jit
def _erf(x, sc):
    return tl.erf(x)


@triton.jit
def _sigmoid(x, sc):
    return M.sigmoid(x)


@triton.jit
def _same(x, sc):
    # Rounding an integer gives the integer: the op's exact result for integral dtypes.
    return x


@triton.jit
def _ceil(x, sc):
    return tl.ceil(x)


@triton.jit
def _floor(x, sc):
    return tl.floor(x)


@triton.jit
def _trunc(x, sc):
    return M.trunc(x)


@triton.jit
def _rint(x, sc):
    return M.rint(x)


@triton.jit
def _round_scaled_up(x, p, sc):
    return M.rint(x * p) / p


@triton.jit
def _round_scaled_down(x, p, sc):
    return M.rint(x / p) * p


@triton.jit
def _sign(x, sc):
    # NaN compares false both ways, so sign(NaN) is 0 as in torch.
    return (x > 0).to(x.dtype) - (x < 0).to(x.dtype)


@triton.jit
def _isnan(x, sc):
    return x != x


@triton.jit
def _isinf(x, sc):
    return tl.abs(x) == float("inf")


@triton.jit
def _isfinite(x, sc):
    return tl.abs(x) < float("inf")


@triton.jit
def _never(x, sc):
    return x != x


@triton.jit
def _always(x, sc):
    return x == x


@triton.jit
def _nan_to_num(x, nan, posinf, neginf, sc):
    y = tl.where(x != x, nan, x)
    y = tl.where(x == float("inf"), posinf, y)
    return tl.where(x == -float("inf"), neginf, y)


def _float_unary(name: str, fn: Any) -> Callable[..., NBXTensor]:
    op = f"aten::{name}"

    def wrapper(self: NBXTensor, *, out: NBXTensor | None = None) -> NBXTensor:
        tensor_arg(op, self, dtypes=REAL)
        return pointwise(op, fn, self, float_op=True, out=out)

    wrapper.__name__ = wrapper.__qualname__ = name
    wrapper.__doc__ = f"``{op}``: integer and bool inputs give the default float dtype."
    return wrapper


exp = _float_unary("exp", _exp)
exp2 = _float_unary("exp2", _exp2)
expm1 = _float_unary("expm1", _expm1)
log = _float_unary("log", _log)
log2 = _float_unary("log2", _log2)
log10 = _float_unary("log10", _log10)
log1p = _float_unary("log1p", _log1p)
sqrt = _float_unary("sqrt", _sqrt)
rsqrt = _float_unary("rsqrt", _rsqrt)
reciprocal = _float_unary("reciprocal", _reciprocal)
sin = _float_unary("sin", _sin)
cos = _float_unary("cos", _cos)
tan = _float_unary("tan", _tan)
sinh = _float_unary("sinh", _sinh)
cosh = _float_unary("cosh", _cosh)
tanh = _float_unary("tanh", _tanh)
asin = _float_unary("asin", _asin)
acos = _float_unary("acos", _acos)
atan = _float_unary("atan", _atan)
asinh = _float_unary("asinh", _asinh)
acosh = _float_unary("acosh", _acosh)
atanh = _float_unary("atanh", _atanh)
erf = _float_unary("erf", _erf)
sigmoid = _float_unary("sigmoid", _sigmoid)


def _keep_dtype_unary(name: str, fn: Any, int_fn: Any) -> Callable[..., NBXTensor]:
    op = f"aten::{name}"

    def wrapper(self: NBXTensor, *, out: NBXTensor | None = None) -> NBXTensor:
        tensor_arg(op, self, dtypes=REAL - BOOL)
        return pointwise(op, fn if self.dtype.is_floating_point else int_fn, self, out=out)

    wrapper.__name__ = wrapper.__qualname__ = name
    wrapper.__doc__ = f"``{op}``: keeps the dtype; bool inputs are refused as in torch."
    return wrapper


_abs_real = _keep_dtype_unary("abs", _abs, _abs)


def abs(self: NBXTensor, *, out: NBXTensor | None = None) -> NBXTensor:  # noqa: A001  (the ATen name)
    """``aten::abs``: keeps the dtype of a real input (bool refused, as in torch); a complex64
    input gives its magnitude in float32 (a spectrogram: ``stft(...).abs()``)."""
    if isinstance(self, NBXTensor) and self.dtype.is_complex:
        return magnitude("aten::abs", self, out)
    return _abs_real(self, out=out)


neg = _keep_dtype_unary("neg", _neg, _neg)
ceil = _keep_dtype_unary("ceil", _ceil, _same)
floor = _keep_dtype_unary("floor", _floor, _same)
trunc = _keep_dtype_unary("trunc", _trunc, _same)


def round(self: NBXTensor, decimals: int = 0, *, out: NBXTensor | None = None) -> NBXTensor:  # noqa: A001
    """``aten::round`` (half to even) and ``round.decimals``: rint(x * 10^d) / 10^d as torch computes it."""
    op = "aten::round"
    tensor_arg(op, self, dtypes=REAL - BOOL)
    int_arg(op, decimals, "decimals")
    if not self.dtype.is_floating_point:
        if decimals != 0:
            raise NbxTypeError(f"{op}: decimals={decimals} needs a floating tensor, got {self.dtype}: cast it first")
        return pointwise(op, _same, self, out=out)
    if decimals == 0:
        return pointwise(op, _rint, self, out=out)
    fn = _round_scaled_up if decimals > 0 else _round_scaled_down
    return pointwise(op, fn, self, float(10.0 ** builtins.abs(decimals)), dtype=self.dtype, out=out)


def sign(self: NBXTensor, *, out: NBXTensor | None = None) -> NBXTensor:
    """``aten::sign``: -1, 0 or 1 in the input dtype (bool stays bool; NaN gives 0)."""
    op = "aten::sign"
    tensor_arg(op, self, dtypes=REAL)
    if self.dtype is D.bool_:
        return pointwise(op, _same, self, out=out)
    return pointwise(op, _sign, self, out=out)


def _classify(name: str, fn: Any, int_fn: Any) -> Callable[..., NBXTensor]:
    op = f"aten::{name}"

    def wrapper(self: NBXTensor) -> NBXTensor:
        tensor_arg(op, self, dtypes=REAL)
        return pointwise(op, fn if self.dtype.is_floating_point else int_fn, self, out_dtype=D.bool_)

    wrapper.__name__ = wrapper.__qualname__ = name
    wrapper.__doc__ = f"``{op}``: a bool tensor; integer and bool inputs are always finite."
    return wrapper


isnan = _classify("isnan", _isnan, _never)
isinf = _classify("isinf", _isinf, _never)
isfinite = _classify("isfinite", _isfinite, _always)


def nan_to_num(
    self: NBXTensor,
    nan: float | None = None,
    posinf: float | None = None,
    neginf: float | None = None,
    *,
    out: NBXTensor | None = None,
) -> NBXTensor:
    """``aten::nan_to_num``: NaN → ``nan`` (0), +inf → ``posinf`` and -inf → ``neginf``
    (default: the dtype's largest and lowest finite values). Integer tensors are copied."""
    op = "aten::nan_to_num"
    tensor_arg(op, self, dtypes=REAL)
    if not self.dtype.is_floating_point:
        return pointwise(op, _same, self, out=out)
    info = ml_dtypes.finfo(self.dtype.np)
    values = [
        0.0 if nan is None else nan,
        float(info.max) if posinf is None else posinf,
        float(info.min) if neginf is None else neginf,
    ]
    for arg, v in zip(("nan", "posinf", "neginf"), values, strict=True):
        number_arg(op, v, arg)
    return pointwise(op, _nan_to_num, self, *(float(v) for v in values), dtype=self.dtype, out=out)
