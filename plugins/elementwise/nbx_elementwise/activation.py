"""Activations: relu, gelu (erf and tanh), silu, mish, hard*, leaky_relu, elu/celu/selu,
softplus, log_sigmoid, threshold, glu.

Parameters (slopes, bounds, alpha ...) travel as number operands in the input's dtype, so they
keep float64 precision for float64 inputs and are float32 for the half types, as in torch's
opmath.
"""

from typing import Any

import triton
import triton.language as tl

from nbx_core import dtypes as D
from nbx_core.errors import NbxValueError, ShapeError
from nbx_core.ops.views import narrow
from nbx_core.runtime.kernels import precise as P
from nbx_core.runtime.launch import TRAITS
from nbx_core.runtime.pointwise import pointwise
from nbx_core.shape import wrap_dim
from nbx_core.tensor import NBXTensor
from nbx_core.tensor.args import BOOL, FLOAT8, FLOATING, REAL, number_arg, tensor_arg

from . import mathlib as M

SQRT1_2 = tl.constexpr(0.7071067811865476)
SQRT_2_OVER_PI = tl.constexpr(0.7978845608028654)
_FAST_RCP = tl.constexpr(TRAITS.has_inline_asm)
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


@triton.jit
def _relu(x, sc):
    return tl.where(x < 0, 0, x)


@triton.jit
def _gelu(x, sc):
    return 0.5 * x * (1.0 + tl.erf(x * SQRT1_2))


@triton.jit
def _reciprocal(y):
    # On a GPU one MUFU.RCP (within 1 ulp): IEEE division (div.full) costs several instructions more,
    # which half-type gelu, compute-bound at 2 bytes an element, cannot afford.
    if _FAST_RCP:
        return tl.inline_asm_elementwise(
            "rcp.approx.ftz.f32 $0, $1;", "=r,r", [y], dtype=tl.float32, is_pure=True, pack=1
        )
    else:
        return 1.0 / y


@triton.jit
def _gelu_erfc(x, sc):
    # For half types, whose float32 math is compute-bound with erf's two-branch evaluation: Phi
    # from erfc(|x|/sqrt 2) = t * exp(-z^2 + P(t)), t = 1 / (1 + z/2) (a Chebyshev fit with
    # relative error below 1.2e-7 for every z >= 0), so the negative tail keeps full relative
    # precision where 1 + erf(z) cancels. Branch-free: one reciprocal, one exp2, ten FMAs; the
    # fit's coefficients are scaled by log2(e) for exp2, the last one taking the factor 1/2 too.
    t = _reciprocal(1.0 + tl.abs(x) * 0.35355339059327373)
    p = 0.246517298 * t - 1.18611495
    p = p * t + 2.14747446
    p = p * t - 1.63775315
    p = p * t + 0.402321582
    p = p * t - 0.26875686
    p = p * t + 0.139630057
    p = p * t + 0.539700616
    p = p * t + 1.4427292
    p = p * t - 2.82574822
    half_erfc = t * tl.exp2(p - x * x * 0.7213475204444817)
    return x * tl.where(x >= 0, 1.0 - half_erfc, half_erfc)


@triton.jit
def _gelu_tanh(x, sc):
    # 0.5 * (1 + tanh(y)) is sigmoid(2y): one exp and one division, where tanh costs an exp, a log
    # and two divisions; inside a GEMM epilogue (a whole tile per program) that difference is
    # register spills. exp(-2y) overflowing to inf gives -0.0 for large negative x, as torch does.
    y = (x + 0.044715 * x * x * x) * SQRT_2_OVER_PI
    return x / (1.0 + P.exp(-2.0 * y))


@triton.jit
def _silu(x, sc):
    return x / (1.0 + P.exp(-x))


@triton.jit
def _mish(x, sc):
    return x * M.tanh(M.log1p(P.exp(x)))


@triton.jit
def _relu6(x):
    # Comparisons rather than tl.minimum/maximum, whose NaN handling differs between backends.
    return tl.where(x < 0.0, 0.0, tl.where(x > 6.0, 6.0, x))


@triton.jit
def _hardsigmoid(x, sc):
    return _relu6(x + 3.0) / 6.0


@triton.jit
def _hardswish(x, sc):
    return x * _relu6(x + 3.0) / 6.0


@triton.jit
def _hardtanh(x, lo, hi, sc):
    return tl.where(x < lo, lo, tl.where(x > hi, hi, x))


@triton.jit
def _leaky_relu(x, slope, sc):
    return tl.where(x > 0, x, x * slope)


@triton.jit
def _elu(x, alpha, scale, input_scale, sc):
    return tl.where(x <= 0, M.expm1(x * input_scale) * (alpha * scale), x * scale)


@triton.jit
def _softplus(x, beta, threshold, sc):
    return tl.where(x * beta > threshold, x, M.log1p(P.exp(x * beta)) / beta)


@triton.jit
def _log_sigmoid(x, sc):
    # min(x, 0) - log1p(e^-|x|): no overflow on either side.
    return tl.minimum(x, 0.0) - M.log1p(P.exp(-tl.abs(x)))


@triton.jit
def _threshold(x, th, value, sc):
    return tl.where(x <= th, value, x)


@triton.jit
def _glu(a, b, sc):
    return a * M.sigmoid(b)


def relu(self: NBXTensor) -> NBXTensor:
    """``aten::relu``: ``max(self, 0)``, NaN kept; integers allowed, bool refused."""
    op = "aten::relu"
    tensor_arg(op, self, dtypes=REAL - BOOL)
    return pointwise(op, _relu, self)


def gelu_tanh(x: NBXTensor) -> NBXTensor:
    """``nbx::gelu_tanh``: ``aten::gelu(x, approximate="tanh")``, what the fusion pattern of
    :mod:`nbx_elementwise.patterns` turns GPT-2's spelt-out tanh GELU into."""
    return gelu(x, approximate="tanh")


def gelu(self: NBXTensor, *, approximate: str = "none") -> NBXTensor:
    """``aten::gelu``: ``x * Phi(x)`` exactly (``approximate='none'``) or its tanh form.

    gelu(inf) is inf here, as on torch's CUDA kernel (torch's vectorised CPU kernel gives NaN).
    float16/bfloat16 evaluate Phi through a branch-free erfc of relative error below 1.2e-7 (in
    float32, rounded once), which keeps them at memory speed; float32/float64 use erf."""
    op = "aten::gelu"
    tensor_arg(op, self, dtypes=FLOATING | FLOAT8)
    if approximate not in ("none", "tanh"):
        raise NbxValueError(f"{op}: approximate must be 'none' or 'tanh', got {approximate!r}")
    if approximate == "tanh":
        return pointwise(op, _gelu_tanh, self)
    return pointwise(op, _gelu_erfc if self.dtype in (D.float16, D.bfloat16) else _gelu, self)


def _float_activation(name: str, fn: Any) -> Any:
    op = f"aten::{name}"

    def wrapper(self: NBXTensor) -> NBXTensor:
        tensor_arg(op, self, dtypes=FLOATING | FLOAT8)
        return pointwise(op, fn, self)

    wrapper.__name__ = wrapper.__qualname__ = name
    wrapper.__doc__ = f"``{op}``: floating tensors only."
    return wrapper


silu = _float_activation("silu", _silu)
mish = _float_activation("mish", _mish)
hardsigmoid = _float_activation("hardsigmoid", _hardsigmoid)
hardswish = _float_activation("hardswish", _hardswish)
log_sigmoid = _float_activation("log_sigmoid", _log_sigmoid)


def hardtanh(self: NBXTensor, min_val: Any = -1, max_val: Any = 1) -> NBXTensor:
    """``aten::hardtanh``: clamp to [min_val, max_val]; integer tensors allowed (not bool)."""
    op = "aten::hardtanh"
    tensor_arg(op, self, dtypes=REAL - BOOL)
    lo, hi = number_arg(op, min_val, "min_val"), number_arg(op, max_val, "max_val")
    if self.dtype is D.uint8 and (lo < 0 or hi < 0):
        raise NbxValueError(f"{op}: cannot do hardtanh on an unsigned type with negative limits")
    return pointwise(op, _hardtanh, self, lo, hi, dtype=self.dtype)


def leaky_relu(self: NBXTensor, negative_slope: Any = 0.01) -> NBXTensor:
    """``aten::leaky_relu``: ``x`` above 0, ``x * negative_slope`` below."""
    op = "aten::leaky_relu"
    tensor_arg(op, self, dtypes=FLOATING | FLOAT8)
    return pointwise(op, _leaky_relu, self, float(number_arg(op, negative_slope, "negative_slope")), dtype=self.dtype)


def elu(self: NBXTensor, alpha: Any = 1, scale: Any = 1, input_scale: Any = 1) -> NBXTensor:
    """``aten::elu``: ``scale * x`` above 0, ``alpha * scale * (exp(input_scale * x) - 1)`` below."""
    op = "aten::elu"
    tensor_arg(op, self, dtypes=FLOATING | FLOAT8)
    args = [float(number_arg(op, v, a)) for a, v in (("alpha", alpha), ("scale", scale), ("input_scale", input_scale))]
    return pointwise(op, _elu, self, *args, dtype=self.dtype)


def celu(self: NBXTensor, alpha: Any = 1.0) -> NBXTensor:
    """``aten::celu``: elu with input_scale 1/alpha; alpha 0 is refused as in torch."""
    op = "aten::celu"
    tensor_arg(op, self, dtypes=FLOATING | FLOAT8)
    a = float(number_arg(op, alpha, "alpha"))
    if a == 0:
        raise NbxValueError(f"{op}: ZeroDivisionError: alpha must not be 0")
    return pointwise(op, _elu, self, a, 1.0, 1.0 / a, dtype=self.dtype)


def selu(self: NBXTensor) -> NBXTensor:
    """``aten::selu``: elu with the self-normalising alpha and scale."""
    op = "aten::selu"
    tensor_arg(op, self, dtypes=FLOATING | FLOAT8)
    return pointwise(op, _elu, self, SELU_ALPHA, SELU_SCALE, 1.0, dtype=self.dtype)


def softplus(self: NBXTensor, beta: Any = 1, threshold: Any = 20) -> NBXTensor:
    """``aten::softplus``: ``log1p(exp(beta * x)) / beta``, linear where ``beta * x > threshold``."""
    op = "aten::softplus"
    tensor_arg(op, self, dtypes=FLOATING | FLOAT8)
    b, t = float(number_arg(op, beta, "beta")), float(number_arg(op, threshold, "threshold"))
    return pointwise(op, _softplus, self, b, t, dtype=self.dtype)


def threshold(self: NBXTensor, threshold: Any, value: Any) -> NBXTensor:
    """``aten::threshold``: ``value`` where ``self <= threshold``, else ``self``."""
    op = "aten::threshold"
    tensor_arg(op, self, dtypes=REAL - BOOL)
    th, v = number_arg(op, threshold, "threshold"), number_arg(op, value, "value")
    return pointwise(op, _threshold, self, th, v, dtype=self.dtype)


def glu(self: NBXTensor, dim: int = -1) -> NBXTensor:
    """``aten::glu``: ``a * sigmoid(b)`` for the two halves of ``self`` along ``dim``."""
    op = "aten::glu"
    tensor_arg(op, self, dtypes=FLOATING | FLOAT8)
    if self.ndim == 0:
        raise ShapeError(f"{op}: glu does not support 0-dimensional tensors: pass a tensor with at least one dim")
    d = wrap_dim(op, dim, self.ndim)
    size = self.shape[d]
    if size % 2:
        raise ShapeError(f"{op}: halving dimension must be even, but dimension {d} is size {size}")
    half = size // 2
    return pointwise(op, _glu, narrow(self, d, 0, half), narrow(self, d, half, half))
