"""Comparisons (eq ne lt le gt ge → bool), maximum/minimum, clamp/clamp_min/clip, where, masked_fill.

Comparisons promote both sides to the common dtype first (so ``int_tensor == 2.5`` compares in
float, as torch does). NaN propagates through maximum, minimum and clamp.
"""

from collections.abc import Callable
from typing import Any

import triton
import triton.language as tl

from nbx_core import dtypes as D
from nbx_core.errors import NbxTypeError, NbxValueError, ShapeError
from nbx_core.registry import get_registry
from nbx_core.runtime.pointwise import pointwise
from nbx_core.shape import broadcast_shapes
from nbx_core.tensor import NBXTensor, empty_tensor
from nbx_core.tensor.args import BOOL, REAL, check_dtype, operand, tensor_arg


@triton.jit
def _eq(x, y, sc):
    return x == y


@triton.jit
def _ne(x, y, sc):
    return x != y


@triton.jit
def _lt(x, y, sc):
    return x < y


@triton.jit
def _le(x, y, sc):
    return x <= y


@triton.jit
def _gt(x, y, sc):
    return x > y


@triton.jit
def _ge(x, y, sc):
    return x >= y


@triton.jit
def _maximum(x, y, sc):
    return tl.where((x > y) | (x != x), x, y)


@triton.jit
def _minimum(x, y, sc):
    return tl.where((x < y) | (x != x), x, y)


@triton.jit
def _clamp_lo(x, lo, sc):
    return tl.where((x < lo) | (lo != lo), lo, x)


@triton.jit
def _clamp_hi(x, hi, sc):
    return tl.where((x > hi) | (hi != hi), hi, x)


@triton.jit
def _clamp_both(x, lo, hi, sc):
    # max then min, as torch: min > max gives max everywhere.
    y = tl.where((x < lo) | (lo != lo), lo, x)
    return tl.where((y > hi) | (hi != hi), hi, y)


@triton.jit
def _where(c, x, y, sc):
    return tl.where(c != 0, x, y)


@triton.jit
def _masked_fill(x, m, v, sc):
    return tl.where(m != 0, v, x)


def _comparison(name: str, fn: Any) -> Callable[..., NBXTensor]:
    op = f"aten::{name}"

    def wrapper(self: NBXTensor, other: Any, *, out: NBXTensor | None = None) -> NBXTensor:
        tensor_arg(op, self, dtypes=REAL)
        other = check_dtype(op, operand(op, other, "other"), "other", REAL)
        return pointwise(op, fn, self, other, out_dtype=D.bool_, out=out)

    wrapper.__name__ = wrapper.__qualname__ = name
    wrapper.__doc__ = f"``{op}`` (Tensor and Scalar): a bool tensor, compared in the promoted dtype."
    return wrapper


eq = _comparison("eq", _eq)
ne = _comparison("ne", _ne)
lt = _comparison("lt", _lt)
le = _comparison("le", _le)
gt = _comparison("gt", _gt)
ge = _comparison("ge", _ge)


def _extremum(name: str, fn: Any) -> Callable[..., NBXTensor]:
    op = f"aten::{name}"

    def wrapper(self: NBXTensor, other: NBXTensor, *, out: NBXTensor | None = None) -> NBXTensor:
        tensor_arg(op, self, dtypes=REAL)
        tensor_arg(op, other, "other", dtypes=REAL)
        return pointwise(
            op, fn, self, other, compute=D.int8 if D.result_type(self, other) is D.bool_ else None, out=out
        )

    wrapper.__name__ = wrapper.__qualname__ = name
    wrapper.__doc__ = f"``{op}``: elementwise, NaN wins; promotes like a binary op."
    return wrapper


maximum = _extremum("maximum", _maximum)
minimum = _extremum("minimum", _minimum)


def clamp(self: NBXTensor, min: Any = None, max: Any = None, *, out: NBXTensor | None = None) -> NBXTensor:  # noqa: A002
    """``aten::clamp`` (Scalar and Tensor bounds, either may be None); also serves ``aten::clip``."""
    op = "aten::clamp"
    tensor_arg(op, self, dtypes=REAL)
    if min is None and max is None:
        raise NbxValueError(f"{op}: at least one of 'min' or 'max' must not be None")
    bounds = [
        check_dtype(op, operand(op, v, arg), arg, REAL) for arg, v in (("min", min), ("max", max)) if v is not None
    ]
    common = D.result_type(self, *bounds)
    compute = D.int8 if common is D.bool_ else None
    if min is None:
        return pointwise(op, _clamp_hi, self, max, dtype=common, compute=compute, out=out)
    if max is None:
        return pointwise(op, _clamp_lo, self, min, dtype=common, compute=compute, out=out)
    return pointwise(op, _clamp_both, self, min, max, dtype=common, compute=compute, out=out)


clip = clamp


def clamp_min(self: NBXTensor, min: Any, *, out: NBXTensor | None = None) -> NBXTensor:  # noqa: A002
    """``aten::clamp_min`` (Scalar and Tensor): ``max(self, min)`` with NaN kept."""
    op = "aten::clamp_min"
    tensor_arg(op, self, dtypes=REAL)
    if min is None:
        raise NbxValueError(f"{op}: 'min' must be a number or a tensor, got None")
    bound = check_dtype(op, operand(op, min, "min"), "min", REAL)
    common = D.result_type(self, bound)
    return pointwise(op, _clamp_lo, self, bound, dtype=common, compute=D.int8 if common is D.bool_ else None, out=out)


_ABSENT: Any = object()


def where(
    condition: NBXTensor, self: Any = _ABSENT, other: Any = _ABSENT, *, out: NBXTensor | None = None
) -> NBXTensor | tuple[NBXTensor, ...]:
    """``aten::where`` (self, ScalarSelf, ScalarOther, Scalar): ``condition ? self : other``,
    broadcast over all three, in the promoted dtype of self and other. With the condition alone
    (``where.default``, ``torch.where(c)``): the indices of its nonzero elements, one int64 tensor
    per dim, from ``aten::nonzero`` (nbx-index)."""
    op = "aten::where"
    if self is _ABSENT and other is _ABSENT and out is None:
        indices = get_registry().call("aten::nonzero", tensor_arg(op, condition, "condition"))
        return tuple(indices[:, d] for d in range(condition.ndim))
    if self is _ABSENT or other is _ABSENT:
        raise NbxTypeError(f"{op}: give both self and other, or neither (the condition alone gives its indices)")
    check_dtype(
        op, tensor_arg(op, condition, "condition"), "condition", BOOL | {D.uint8}, fix="compare it with != 0 first"
    )
    x = check_dtype(op, operand(op, self, "self"), "self", REAL)
    y = check_dtype(op, operand(op, other, "other"), "other", REAL)
    return pointwise(op, _where, condition, x, y, dtype=D.result_type(x, y), out=out)


def masked_fill(self: NBXTensor, mask: NBXTensor, value: Any) -> NBXTensor:
    """``aten::masked_fill`` (Scalar and 0-dim Tensor value): ``value`` where ``mask``, in self's dtype;
    self and mask broadcast together, as ATen's out-of-place form expands both."""
    op = "aten::masked_fill"
    tensor_arg(op, self, dtypes=REAL)
    check_dtype(op, tensor_arg(op, mask, "mask"), "mask", BOOL, fix="compare it with != 0 first")
    if isinstance(value, NBXTensor) and value.ndim != 0:
        raise ShapeError(f"{op}: only a 0-dimensional value tensor is supported, got shape {value.shape}")
    v = check_dtype(op, operand(op, value, "value"), "value", REAL)
    # torch fills a contiguous clone of the expanded self, whatever self's layout.
    out = empty_tensor(broadcast_shapes(op, self.shape, mask.shape), self.dtype, self.device)
    return pointwise(op, _masked_fill, self, mask, v, dtype=self.dtype, out=out)
