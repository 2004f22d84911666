"""Argument checks for op wrappers: one vocabulary, one message style, for nbx-core and every plugin.

A wrapper checks everything before it launches anything. Each check raises an NbxError subclass
whose message names the op, the argument, what was wrong and the fix, for example::

    aten::gelu: self has dtype int32, expected floating: cast it with .to(float32) first
    aten::mm: mat2 must be a tensor, got list: pass an NBXTensor (nbx_core.tensor(...) makes one)

Dtype sets are unions of the categories below (``FLOATING | INTEGRAL``) and of single dtypes
(``{D.float32, D.float64}``); messages name a whole category by its name. Dims are checked with
:func:`nbx_core.shape.wrap_dim` and :func:`~nbx_core.shape.wrap_dims` (re-exported here), index
values that only the device sees by :mod:`nbx_core.runtime.kernels.index_range`.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from .. import dtypes as D
from ..device import CPU, Device
from ..errors import DeviceError, NbxTypeError, NbxValueError, ShapeError
from ..shape import broadcast_shapes, wrap_dim, wrap_dims
from .core import NBXTensor

__all__ = [
    "BOOL",
    "COMPLEX",
    "FLOAT8",
    "FLOATING",
    "INDEX",
    "INTEGRAL",
    "REAL",
    "Number",
    "Operand",
    "broadcast_shapes",
    "check_broadcasts_to",
    "check_device",
    "check_dtype",
    "check_min_ndim",
    "check_ndim",
    "describe",
    "dtype_arg",
    "dtype_of",
    "int_arg",
    "int_list",
    "non_negative",
    "number_arg",
    "operand",
    "optional_tensor",
    "out_arg",
    "positive",
    "probability",
    "same_dtype",
    "tensor_arg",
    "wrap_dim",
    "wrap_dims",
]

Number = bool | int | float
Operand = NBXTensor | Number

BOOL: frozenset[D.DType] = frozenset({D.bool_})
INTEGRAL: frozenset[D.DType] = frozenset(D.INTEGRAL)
"""uint8, int8, int16, int32, int64 (bool is its own category)."""
FLOATING: frozenset[D.DType] = frozenset(D.FLOATING)
"""float16, bfloat16, float32, float64: what floating kernels compute in (float8 is its own category)."""
FLOAT8: frozenset[D.DType] = frozenset({D.float8_e4m3fn, D.float8_e5m2})
COMPLEX: frozenset[D.DType] = frozenset({D.complex64})
REAL: frozenset[D.DType] = BOOL | INTEGRAL | FLOATING | FLOAT8
"""Every dtype but complex."""
INDEX: frozenset[D.DType] = frozenset({D.int32, D.int64})
"""Index tensors (gather, scatter, embedding ...)."""


def _names(dtypes: Collection[D.DType]) -> list[str]:
    return [d.name for d in D.ALL if d in dtypes]


def _listed(words: Sequence[str], conjunction: str = "or") -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} {conjunction} {words[-1]}"


def describe(dtypes: Collection[D.DType]) -> str:
    """``dtypes`` in words, whole categories by name: ``"bool, integer or floating (float16, ...)"``."""
    given = frozenset(dtypes)
    words = []
    if D.bool_ in given:
        words.append("bool")
    words += ["integer"] if INTEGRAL <= given else _names(INTEGRAL & given)
    if FLOATING | FLOAT8 <= given:
        words.append("floating")
    else:
        if FLOATING <= given:
            words.append(f"floating ({', '.join(_names(FLOATING))})")
        else:
            words += _names(FLOATING & given)
        words += _names(FLOAT8 & given)
    words += _names(COMPLEX & given)
    return _listed(words)


def _cast_hint(dtypes: Collection[D.DType]) -> str:
    for d in (D.float32, D.int64, D.bool_, D.complex64):
        if d in dtypes:
            return f"cast it with .to({d.name}) first"
    return f"cast it with .to({_names(dtypes)[0]}) first"


def tensor_arg(
    op: str,
    value: Any,
    arg: str = "self",
    *,
    dtypes: Collection[D.DType] | None = None,
    ndim: int | Collection[int] | None = None,
    min_ndim: int = 0,
) -> NBXTensor:
    """``value`` as an NBXTensor (of one of ``dtypes``, with one of the ranks ``ndim`` or at least
    ``min_ndim`` dims, when given)."""
    if not isinstance(value, NBXTensor):
        raise NbxTypeError(
            f"{op}: {arg} must be a tensor, got {type(value).__name__}: pass an NBXTensor "
            "(nbx_core.tensor(...) makes one)"
        )
    if dtypes is not None:
        check_dtype(op, value, arg, dtypes)
    if ndim is not None:
        check_ndim(op, value, arg, ndim)
    return check_min_ndim(op, value, arg, min_ndim)


def optional_tensor(
    op: str,
    value: Any,
    arg: str,
    *,
    dtypes: Collection[D.DType] | None = None,
    ndim: int | Collection[int] | None = None,
    min_ndim: int = 0,
) -> NBXTensor | None:
    """``value`` as an NBXTensor as :func:`tensor_arg` checks it, or None."""
    if value is None:
        return None
    if not isinstance(value, NBXTensor):
        raise NbxTypeError(f"{op}: {arg} must be a tensor or None, got {type(value).__name__}")
    return tensor_arg(op, value, arg, dtypes=dtypes, ndim=ndim, min_ndim=min_ndim)


def check_dtype(op: str, t: Operand, arg: str, dtypes: Collection[D.DType], *, fix: str | None = None) -> Operand:
    """``t`` when its dtype (a Python number's: bool, int64, float32) is one of ``dtypes``; ``fix``
    replaces the suggested cast in the message."""
    if dtype_of(t) in dtypes:
        return t
    if not isinstance(t, NBXTensor):
        raise NbxTypeError(
            f"{op}: {arg} is the {type(t).__name__} {t!r}, expected {describe(dtypes)} values: "
            f"{fix or 'pass one of those'}"
        )
    raise NbxTypeError(f"{op}: {arg} has dtype {t.dtype}, expected {describe(dtypes)}: {fix or _cast_hint(dtypes)}")


def dtype_arg(op: str, value: Any, dtypes: Collection[D.DType] | None = None, arg: str = "dtype") -> D.DType | None:
    """A ``dtype=`` argument as an NBX dtype (one of ``dtypes`` when given), or None."""
    if value is None:
        return None
    dt = D.as_dtype(value)
    if dtypes is not None and dt not in dtypes:
        raise NbxTypeError(f"{op}: {arg}={dt} is not supported, expected {describe(dtypes)}: pass one of those")
    return dt


def same_dtype(op: str, *named: tuple[str, NBXTensor]) -> D.DType:
    """The one dtype of the ``(name, tensor)`` pairs; the error names the first that differs."""
    first_name, first = named[0]
    for name, t in named[1:]:
        if t.dtype is not first.dtype:
            every = _listed([n for n, _ in named], "and") if len(named) <= 4 else "they"
            raise NbxTypeError(
                f"{op}: {name} has dtype {t.dtype} but {first_name} has {first.dtype}: {every} "
                "must have the same dtype, cast them to one dtype"
            )
    return first.dtype


_RANK_NAMES = {1: "1-D (a vector)", 2: "2-D (a matrix)"}


def _rank(ndims: Collection[int]) -> str:
    if len(ndims) == 1:
        (n,) = ndims
        return _RANK_NAMES.get(n, f"{n}-D")
    return _listed([f"{n}-D" for n in sorted(ndims)])


def check_ndim(op: str, t: NBXTensor, arg: str, ndim: int | Collection[int], what: str | None = None) -> NBXTensor:
    """``t`` when it has one of the ranks ``ndim``; ``what`` names the layouts in the message
    (``"a matrix (2-D)"``, ``"(N, C, H, W)"``)."""
    ndims = (ndim,) if isinstance(ndim, int) else tuple(ndim)
    if t.ndim not in ndims:
        raise ShapeError(
            f"{op}: {arg} must be {what or _rank(ndims)}, got a {t.ndim}-D tensor of shape {list(t.shape)}"
        )
    return t


def check_min_ndim(op: str, t: NBXTensor, arg: str, n: int, what: str = "") -> NBXTensor:
    """``t`` when it has at least ``n`` dims (``what`` names them, ``"(..., L, S)"``)."""
    if t.ndim < n:
        raise ShapeError(
            f"{op}: {arg} must have at least {n} dims{' ' + what if what else ''}, got shape {list(t.shape)}"
        )
    return t


def check_device(op: str, *tensors: Any) -> Device:
    """The one device all ``tensors`` share (other values are skipped); mixing devices is an error."""
    dev = None
    for t in tensors:
        if not isinstance(t, NBXTensor):
            continue
        if dev is None:
            dev = t.device
        elif t.device != dev:
            raise DeviceError(
                f"{op}: expected all tensors on one device, got {dev} and {t.device}: move them with .to(device) first"
            )
    return dev if dev is not None else CPU


def check_broadcasts_to(op: str, t: NBXTensor, arg: str, shape: Sequence[int], to: str = "the result") -> None:
    """``t`` broadcasts to ``shape`` without changing it (what ``expand`` and in-place ops need)."""
    shape = tuple(shape)
    if t.ndim > len(shape) or any(s not in (1, d) for s, d in zip(t.shape[::-1], shape[::-1], strict=False)):
        raise ShapeError(f"{op}: {arg} of shape {list(t.shape)} does not broadcast to {to}'s shape {list(shape)}")


def out_arg(op: str, out: Any, shape: Sequence[int], dtype: D.DType) -> NBXTensor | None:
    """An ``out=`` tensor of the result's ``shape`` and ``dtype``, or None."""
    if out is None:
        return None
    tensor_arg(op, out, "out")
    if tuple(out.shape) != tuple(shape) or out.dtype is not dtype:
        error = ShapeError if tuple(out.shape) != tuple(shape) else NbxTypeError
        raise error(
            f"{op}: out is a {out.dtype} tensor of shape {list(out.shape)}, but the result is "
            f"{dtype} of shape {list(shape)}: pass an out of that shape and dtype"
        )
    return out


def operand(op: str, value: Any, arg: str) -> Operand:
    """A tensor or a real Python number (what :func:`nbx_core.runtime.pointwise.pointwise` takes)."""
    if isinstance(value, NBXTensor | bool | int | float):
        return value
    if isinstance(value, complex):
        raise NbxTypeError(f"{op}: {arg} is complex; NBX's {op} takes real numbers only")
    raise NbxTypeError(f"{op}: {arg} must be a tensor or a number, got {type(value).__name__}")


def dtype_of(value: Operand) -> D.DType:
    """The dtype a value takes part in promotion with (Python scalars: bool, int64, float32)."""
    return value.dtype if isinstance(value, NBXTensor) else D.scalar_dtype(value)


def int_arg(op: str, value: Any, arg: str) -> int:
    """``value`` when it is an int (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise NbxTypeError(f"{op}: {arg} must be an int, got {type(value).__name__}")
    return value


def int_list(op: str, value: Any, n: int, arg: str, default: Sequence[int] | None = None) -> tuple[int, ...]:
    """An int or a list of 1 or ``n`` ints as ``n`` ints (an empty list takes ``default``)."""
    if isinstance(value, bool):
        raise NbxTypeError(f"{op}: {arg} must be an int or a list of {n} ints, got a bool")
    if isinstance(value, int):
        return (value,) * n
    if not isinstance(value, Sequence) or isinstance(value, str):
        raise NbxTypeError(f"{op}: {arg} must be an int or a list of {n} ints, got {type(value).__name__}")
    vals = list(value)
    if not vals and default is not None:
        return tuple(default)
    if any(isinstance(v, bool) or not isinstance(v, int) for v in vals):
        raise NbxTypeError(f"{op}: {arg} must hold ints, got {vals}")
    if len(vals) == 1:
        return (vals[0],) * n
    if len(vals) != n:
        raise NbxValueError(f"{op}: {arg} must be a single int or a list of {n} ints, got {vals}")
    return tuple(vals)


def positive(op: str, vals: Sequence[int], arg: str) -> None:
    """Every value of ``vals`` is above 0."""
    if any(v <= 0 for v in vals):
        raise NbxValueError(f"{op}: {arg} must be positive, got {list(vals)}")


def non_negative(op: str, vals: Sequence[int], arg: str) -> None:
    """No value of ``vals`` is below 0."""
    if any(v < 0 for v in vals):
        raise NbxValueError(f"{op}: {arg} must be non-negative, got {list(vals)}")


def number_arg(op: str, value: Any, arg: str, *, allow_bool: bool = False) -> bool | int | float:
    """``value`` when it is a real Python number: an int or a float (or a bool, when ``allow_bool``)."""
    if (isinstance(value, bool) and not allow_bool) or not isinstance(value, int | float):
        raise NbxTypeError(f"{op}: {arg} must be a number, got {type(value).__name__}")
    return value


def probability(op: str, p: Any, arg: str = "p") -> float:
    """A probability in [0, 1]."""
    p = number_arg(op, p, arg)
    if not 0.0 <= p <= 1.0:
        raise NbxValueError(f"{op}: {arg} must be in the range [0, 1], got {p}")
    return float(p)
