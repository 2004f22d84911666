"""Argument checks the reduction ops share: tensors, dims, dtypes, devices."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from nbx_core import dtypes as D
from nbx_core.errors import IndexOutOfRangeError, NbxTypeError, NbxValueError
from nbx_core.shape import wrap_dims
from nbx_core.tensor import NBXTensor

_REAL = "bool, integer, float16, bfloat16, float32 and float64"


def tensor_arg(op: str, t: Any, arg: str = "self") -> NBXTensor:
    """``t`` as an NBXTensor of a real dtype this plugin computes in."""
    if not isinstance(t, NBXTensor):
        raise NbxTypeError(f"{op}: {arg} must be an NBXTensor, got {type(t).__name__}")
    if t.dtype.is_complex or t.dtype.is_float8:
        raise NbxTypeError(f"{op}: {arg} has dtype {t.dtype}; NBX reductions support {_REAL}: cast it first")
    return t


def float_arg(op: str, t: Any, arg: str = "self") -> NBXTensor:
    """``t`` as an NBXTensor of a floating dtype."""
    t = tensor_arg(op, t, arg)
    if not t.dtype.is_floating_point:
        raise NbxTypeError(f"{op}: {arg} must be a floating point tensor, got {t.dtype}: cast it with .to(float32)")
    return t


def dtype_arg(op: str, dtype: Any) -> D.DType | None:
    """A ``dtype=`` argument as a real NBX dtype, or None."""
    if dtype is None:
        return None
    dt = D.as_dtype(dtype)
    if dt.is_complex or dt.is_float8:
        raise NbxTypeError(f"{op}: dtype={dt} is not supported; NBX reductions support {_REAL}")
    return dt


def reduce_dims(op: str, dim: int | Sequence[int] | None, ndim: int, *, empty_is_all: bool = True) -> tuple[int, ...]:
    """``dim`` (an int, a list or None) wrapped; None (and ``[]`` where torch says so) means every dim."""
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, bool) or not isinstance(dim, int | Sequence):
        raise NbxTypeError(f"{op}: dim must be an int, a list of ints or None, got {type(dim).__name__}")
    dims = [dim] if isinstance(dim, int) else list(dim)
    if not dims:
        return tuple(range(ndim)) if empty_is_all else ()
    wrapped = wrap_dims(op, dims, ndim)
    return wrapped if ndim else ()


def reduced_size(x: NBXTensor, dims: tuple[int, ...]) -> int:
    """How many elements each output element combines."""
    return math.prod(x.shape[d] for d in dims) if x.ndim else 1


def check_nonempty(op: str, x: NBXTensor, dims: tuple[int, ...], named: bool = True) -> None:
    """Ops without an identity (max, argmax …) refuse to reduce over nothing, as torch does."""
    if reduced_size(x, dims) == 0:
        if not named:
            raise NbxValueError(
                f"{op}: expected a reduction dim to be specified for an input with 0 elements: pass dim="
            )
        d = next(d for d in dims if x.shape[d] == 0)
        raise IndexOutOfRangeError(f"{op}: expected reduction dim {d} to have non-zero size (the input has shape "
                                   f"{x.shape}): reduce over a non-empty dim")
