"""Argument checks shared by the wrappers: each raises an NbxError naming op, argument and fix."""

from __future__ import annotations

from typing import Any

from nbx_core import dtypes as D
from nbx_core.errors import NbxTypeError, NbxValueError
from nbx_core.tensor import NBXTensor

Number = bool | int | float
Operand = NBXTensor | Number


def tensor_arg(op: str, value: Any, arg: str = "self") -> NBXTensor:
    """``value`` if it is an NBXTensor, else an error saying the argument must be one."""
    if not isinstance(value, NBXTensor):
        raise NbxTypeError(f"{op}: argument '{arg}' must be a tensor, got {type(value).__name__}")
    return value


def operand(op: str, value: Any, arg: str) -> Operand:
    """A tensor or a real Python number (what the pointwise launcher takes)."""
    if isinstance(value, NBXTensor | bool | int | float):
        return value
    if isinstance(value, complex):
        raise NbxTypeError(f"{op}: argument '{arg}' is complex; NBX's {op} takes real numbers only")
    raise NbxTypeError(f"{op}: argument '{arg}' must be a tensor or a number, got {type(value).__name__}")


def dtype_of(value: Operand) -> D.DType:
    """The dtype a value takes part in promotion with (Python scalars: bool, int64, float32)."""
    return value.dtype if isinstance(value, NBXTensor) else D.scalar_dtype(value)


def no_complex(op: str, *values: Operand) -> None:
    """Complex tensors reach only ops written for them (complex, angle)."""
    for v in values:
        if isinstance(v, NBXTensor) and v.dtype.is_complex:
            raise NbxTypeError(f"{op}: complex tensors are not supported by NBX's {op}: pass a real tensor")


def floating(op: str, *values: Operand, arg: str = "self") -> None:
    """Ops torch defines for floating tensors only (gelu, silu, lerp ...)."""
    no_complex(op, *values)
    for v in values:
        if isinstance(v, NBXTensor) and not v.dtype.is_floating_point:
            raise NbxTypeError(
                f"{op}: argument '{arg}' has dtype {v.dtype}, but {op} is defined for floating tensors only: "
                "cast it to a floating dtype first"
            )


def not_bool(op: str, *values: Operand, arg: str = "self") -> None:
    """Ops torch refuses on bool tensors (abs, neg, floor ...)."""
    for v in values:
        if isinstance(v, NBXTensor) and v.dtype is D.bool_:
            raise NbxTypeError(f"{op}: argument '{arg}' is a bool tensor, which {op} does not take: cast it first")


def integral(op: str, *values: Operand) -> None:
    """Bitwise ops: integer and bool values only."""
    for v in values:
        dt = dtype_of(v)
        if not dt.is_integral:
            raise NbxTypeError(f"{op}: got dtype {dt}, but {op} takes integer or bool values only: cast to an "
                               "integer dtype")


def no_generator(op: str, generator: Any) -> None:
    """NBX's random ops draw from the plugin's own Philox stream, not a torch Generator."""
    if generator is not None:
        raise NbxTypeError(
            f"{op}: NBX does not take a generator argument; seed the stream with "
            "nbx_elementwise.random.manual_seed(seed) instead"
        )


def probability(op: str, p: Any, arg: str = "p") -> float:
    """A probability in [0, 1]."""
    if isinstance(p, bool) or not isinstance(p, int | float):
        raise NbxTypeError(f"{op}: argument '{arg}' must be a number, got {type(p).__name__}")
    if not 0.0 <= p <= 1.0:
        raise NbxValueError(f"{op}: {arg} must be in the range [0, 1], got {p}")
    return float(p)
