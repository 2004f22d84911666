"""norm and linalg_vector_norm: sum of |x|^p (or max/min of |x|) then the p-th root.

ord 0 counts nonzeros, 1 sums |x|, 2 takes sqrt(sum x^2), inf/-inf the max/min of |x|, any other
p uses exp(p log|x|) and the 1/p power. ``dtype=`` casts the input first and must not narrow it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from nbx_core import dtypes as D
from nbx_core.errors import NbxTypeError, NbxValueError
from nbx_core.tensor import NBXTensor
from nbx_core.tensor.args import FLOATING, dtype_arg, number_arg, tensor_arg

from . import engine as E
from .rules import DTYPES, reduce_dims, reduced_size


def vector_norm(op: str, self: NBXTensor, ord: Any, dim: Any, keepdim: bool, dtype: Any) -> NBXTensor:
    """The shared body of norm and linalg_vector_norm."""
    x = tensor_arg(op, self, dtypes=FLOATING)
    number_arg(op, ord, "ord")
    out = dtype_arg(op, dtype, DTYPES)
    if out is not None and (not out.is_floating_point or D.promote_types(x.dtype, out) is not out):
        raise NbxTypeError(f"{op}: the input dtype {x.dtype} must convert without narrowing to dtype={out}")
    out = out or x.dtype
    dims = reduce_dims(op, dim, x.ndim)
    p = float(ord)
    if reduced_size(x, dims) == 0 and (p < 0 or math.isinf(p)):
        raise NbxValueError(f"{op}: cannot compute the {ord} norm over an empty dim (the op has no identity)")
    if p == math.inf:
        return E.reduce(x, dims, keepdim, E.MAX, out, src=out, pre=E.P_ABS)
    if p == -math.inf:
        return E.reduce(x, dims, keepdim, E.MIN, out, src=out, pre=E.P_ABS)
    if p == 0:
        return E.reduce(x, dims, keepdim, E.SUM, out, src=out, pre=E.P_NONZERO, acc=D.compute_dtype(out))
    if p == 1:
        return E.reduce(x, dims, keepdim, E.SUM, out, src=out, pre=E.P_ABS)
    if p == 2:
        return E.reduce(x, dims, keepdim, E.SUM, out, src=out, pre=E.P_SQUARE, post=E.Q_SQRT)
    return E.reduce(x, dims, keepdim, E.SUM, out, src=out, pre=E.P_POW, post=E.Q_ROOT, p=p)


def norm(
    self: NBXTensor,
    p: int | float | None = 2,
    dim: int | Sequence[int] | None = None,
    keepdim: bool = False,
    *,
    dtype: Any = None,
) -> NBXTensor:
    """aten::norm (Scalar, ScalarOpt_dim, ScalarOpt_dim_dtype, ScalarOpt_dtype): p=None is 2."""
    return vector_norm("norm", self, 2 if p is None else p, dim, keepdim, dtype)


def linalg_vector_norm(
    self: NBXTensor,
    ord: int | float = 2,
    dim: int | Sequence[int] | None = None,
    keepdim: bool = False,
    *,
    dtype: Any = None,
) -> NBXTensor:
    """aten::linalg_vector_norm: dim None (or []) is every dim."""
    return vector_norm("linalg_vector_norm", self, ord, dim, keepdim, dtype)
