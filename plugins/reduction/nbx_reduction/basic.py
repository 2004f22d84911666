"""sum, mean, prod, amax, amin, all, any, max, min, argmax, argmin, logsumexp and trace.

Each op is its dims, its dtypes and one call of the reduction engine. The overloads on Python
lists (``sum.int``, ``all.bool`` …) are host arithmetic on the list, as in TorchScript.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

import triton
import triton.language as tl

from nbx_core import dtypes as D
from nbx_core.errors import NbxTypeError, NbxValueError, ShapeError
from nbx_core.ops import copy as C
from nbx_core.ops import views as V
from nbx_core.runtime.pointwise import pointwise
from nbx_core.tensor import NBXTensor, check_device
from nbx_core.tensor.args import BOOL, check_dtype, check_ndim, dtype_arg, int_arg, tensor_arg

from . import engine as E
from .rules import DTYPES, check_nonempty, reduce_dims


def _int_result(dtype: D.DType) -> D.DType:
    # torch widens integer and bool sums and products to int64.
    return D.int64 if dtype.is_integral else dtype


def sum(self: Any, dim: int | Sequence[int] | None = None, keepdim: bool = False, *,
        dtype: Any = None) -> NBXTensor | int | float:
    """aten::sum over ``dim`` (None or [] = every dim); integer and bool inputs sum in int64."""
    if isinstance(self, list | tuple):
        return builtins.sum(self)
    x = tensor_arg("sum", self, dtypes=DTYPES)
    dims = reduce_dims("sum", dim, x.ndim)
    out = dtype_arg("sum", dtype, DTYPES) or _int_result(x.dtype)
    return E.reduce(x, dims, keepdim, E.SUM, out, src=out)


def mean(self: NBXTensor, dim: int | Sequence[int] | None = None, keepdim: bool = False, *,
         dtype: Any = None) -> NBXTensor:
    """aten::mean: a floating input (or a floating ``dtype=``) summed in float32 or wider, divided."""
    x = tensor_arg("mean", self, dtypes=DTYPES)
    out = dtype_arg("mean", dtype, DTYPES)
    if out is None and not x.dtype.is_floating_point:
        raise NbxTypeError(f"mean: could not infer the output dtype of a {x.dtype} input: pass a floating dtype= "
                           "or cast the input")
    if out is not None and not out.is_floating_point:
        raise NbxTypeError(f"mean: dtype={out} must be a floating point dtype")
    out = out or x.dtype
    dims = reduce_dims("mean", dim, x.ndim)
    return E.reduce(x, dims, keepdim, E.SUM, out, src=out, post=E.Q_MEAN)


def prod(self: NBXTensor, dim: int | None = None, keepdim: bool = False, *, dtype: Any = None) -> NBXTensor:
    """aten::prod over one dim or all; integer and bool inputs multiply in int64."""
    x = tensor_arg("prod", self, dtypes=DTYPES)
    if dim is not None:
        int_arg("prod", dim, "dim")
    dims = reduce_dims("prod", dim, x.ndim)
    out = dtype_arg("prod", dtype, DTYPES) or _int_result(x.dtype)
    return E.reduce(x, dims, keepdim, E.PROD, out, src=out)


def _extreme(op: str, code: int, self: NBXTensor, dim: Any, keepdim: bool) -> NBXTensor:
    x = tensor_arg(op, self, dtypes=DTYPES)
    dims = reduce_dims(op, dim, x.ndim)
    check_nonempty(op, x, dims)
    return E.reduce(x, dims, keepdim, code, x.dtype)


def amax(self: NBXTensor, dim: int | Sequence[int] = (), keepdim: bool = False) -> NBXTensor:
    """aten::amax: the largest value over ``dim`` ([] = every dim); NaN propagates."""
    return _extreme("amax", E.MAX, self, dim, keepdim)


def amin(self: NBXTensor, dim: int | Sequence[int] = (), keepdim: bool = False) -> NBXTensor:
    """aten::amin: the smallest value over ``dim`` ([] = every dim); NaN propagates."""
    return _extreme("amin", E.MIN, self, dim, keepdim)


def _logical(op: str, code: int, self: Any, dim: Any, keepdim: bool) -> NBXTensor | bool:
    if isinstance(self, list | tuple):
        return (builtins.all if op == "all" else builtins.any)(self)
    x = tensor_arg(op, self, dtypes=DTYPES)
    # all.dims/any.dims with dim=[] reduce nothing: each element becomes its truth value.
    dims = reduce_dims(op, dim, x.ndim, empty_is_all=False)
    out = D.uint8 if x.dtype is D.uint8 else D.bool_
    # Truth values are 0/1, so the identities are 1 (all) and 0 (any).
    return E.reduce(x, dims, keepdim, code, out, acc=D.int32, pre=E.P_NONZERO, ident=int(op == "all"))


def all(self: Any, dim: int | Sequence[int] | None = None, keepdim: bool = False) -> NBXTensor | bool:
    """aten::all: whether every element over ``dim`` is nonzero (uint8 in, uint8 out; else bool)."""
    return _logical("all", E.MIN, self, dim, keepdim)


def any(self: Any, dim: int | Sequence[int] | None = None, keepdim: bool = False) -> NBXTensor | bool:
    """aten::any: whether some element over ``dim`` is nonzero (uint8 in, uint8 out; else bool)."""
    return _logical("any", E.MAX, self, dim, keepdim)


@triton.jit
def _maximum(a, b, sc):
    return tl.where((a > b) | (a != a), a, b)


@triton.jit
def _minimum(a, b, sc):
    return tl.where((a < b) | (a != a), a, b)


def _max_min(op: str, self: NBXTensor, dim: Any, keepdim: bool, outs: tuple[Any, Any]) -> Any:
    x = tensor_arg(op, self, dtypes=DTYPES)
    if isinstance(dim, NBXTensor):
        other = tensor_arg(op, dim, "other", dtypes=DTYPES)
        check_device(op, x, other)
        return pointwise(f"aten::{op}", _maximum if op == "max" else _minimum, x, other)
    if dim is None:
        check_nonempty(op, x, tuple(range(x.ndim)), named=False)
        return E.reduce(x, tuple(range(x.ndim)), False, E.MAX if op == "max" else E.MIN, x.dtype)
    int_arg(op, dim, "dim")
    dims = reduce_dims(op, dim, x.ndim)
    check_nonempty(op, x, dims)
    values, indices = E.reduce(x, dims, keepdim, E.ARGMAX if op == "max" else E.ARGMIN, x.dtype, store=3)
    if outs[0] is not None or outs[1] is not None:
        if outs[0] is None or outs[1] is None:
            raise NbxValueError(f"{op}: the out= form needs both output tensors")
        for dst, src in zip(outs, (values, indices), strict=True):
            if tuple(dst.shape) != tuple(src.shape):
                raise ShapeError(f"{op}: out tensor of shape {dst.shape} cannot hold a result of shape {src.shape}")
            C.copy_(dst, src)
        return outs
    return values, indices


def max(self: NBXTensor, dim: int | NBXTensor | None = None, keepdim: bool = False, *,
        max: NBXTensor | None = None, max_values: NBXTensor | None = None) -> Any:
    """aten::max: the global max, (values, indices) along ``dim``, or the elementwise max with a tensor."""
    return _max_min("max", self, dim, keepdim, (max, max_values))


def min(self: NBXTensor, dim: int | NBXTensor | None = None, keepdim: bool = False, *,
        min: NBXTensor | None = None, min_indices: NBXTensor | None = None) -> Any:
    """aten::min: the global min, (values, indices) along ``dim``, or the elementwise min with a tensor."""
    return _max_min("min", self, dim, keepdim, (min, min_indices))


def _arg(op: str, code: int, self: NBXTensor, dim: int | None, keepdim: bool) -> NBXTensor:
    x = tensor_arg(op, self, dtypes=DTYPES - BOOL)
    if dim is not None:
        int_arg(op, dim, "dim")
    dims = reduce_dims(op, dim, x.ndim)
    check_nonempty(op, x, dims, named=dim is not None)
    # dim=None indexes the flattened input; keepdim then keeps every dim as 1.
    return E.reduce(x, dims, keepdim, code, D.int64, store=2)


def argmax(self: NBXTensor, dim: int | None = None, keepdim: bool = False) -> NBXTensor:
    """aten::argmax: the first index of the largest value (NaN counts as largest)."""
    return _arg("argmax", E.ARGMAX, self, dim, keepdim)


def argmin(self: NBXTensor, dim: int | None = None, keepdim: bool = False) -> NBXTensor:
    """aten::argmin: the first index of the smallest value (NaN counts as smallest)."""
    return _arg("argmin", E.ARGMIN, self, dim, keepdim)


def logsumexp(self: NBXTensor, dim: int | Sequence[int], keepdim: bool = False) -> NBXTensor:
    """aten::logsumexp: log(sum(exp(x))) shifted by the max; integer inputs give float32."""
    x = tensor_arg("logsumexp", self, dtypes=DTYPES)
    if isinstance(dim, Sequence) and not dim:
        raise NbxValueError("logsumexp: dim must name at least one dim")
    dims = reduce_dims("logsumexp", dim, x.ndim)
    out = D.to_float(x.dtype)
    return E.reduce(x, dims, keepdim, E.LSE, out, src=out)


def trace(self: NBXTensor) -> NBXTensor:
    """aten::trace: the sum of a matrix's main diagonal (integers sum in int64)."""
    x = check_ndim("trace", tensor_arg("trace", self, dtypes=DTYPES), "self", 2, "a matrix (2-D)")
    check_dtype("trace", x, "self", DTYPES - BOOL)
    out = _int_result(x.dtype)
    return E.reduce(V.diagonal(x), (0,), False, E.SUM, out, src=out)
