"""The reduction family's own argument rules (the rest is nbx_core.tensor.args).

- :data:`DTYPES`: what the reduction kernels compute in (no float8, no complex).
- :func:`reduce_dims`: torch's reading of a reduction's ``dim``: None means every dim, and so does
  ``[]`` except where an overload says it reduces nothing (``all.dims``); a 0-dim input reduces no dim.
- :func:`check_nonempty`: ops without an identity (max, argmax …) refuse to reduce over nothing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from nbx_core.errors import IndexOutOfRangeError, NbxTypeError, NbxValueError
from nbx_core.shape import wrap_dims
from nbx_core.tensor import NBXTensor
from nbx_core.tensor.args import FLOAT8, REAL

DTYPES = REAL - FLOAT8
"""bool, the integers and float16 to float64."""


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
        raise IndexOutOfRangeError(
            f"{op}: expected reduction dim {d} to have non-zero size (the input has shape "
            f"{x.shape}): reduce over a non-empty dim"
        )
