"""Argument checks shared by the norm ops: every bad input is an NbxError before any launch.

The dtype rules are torch's (CPU): the input is a floating tensor (float16, bfloat16, float32,
float64); parameters (weight, bias, running stats) share the input's dtype, except that a half-type
input may take float32 parameters ("mixed" mode), in which case statistics are returned in float32.
"""

from __future__ import annotations

from collections.abc import Sequence

from nbx_core import dtypes as D
from nbx_core.errors import NbxTypeError, ShapeError
from nbx_core.tensor import NBXTensor, check_device

FLOATS = (D.float16, D.bfloat16, D.float32, D.float64)


def check_input(op: str, x: object, arg: str = "input", min_dim: int = 0) -> NBXTensor:
    """``x`` as a floating NBXTensor of at least ``min_dim`` dims."""
    if not isinstance(x, NBXTensor):
        raise NbxTypeError(f"{op}: {arg} must be an NBXTensor, got {type(x).__name__}")
    if x.dtype not in FLOATS:
        raise NbxTypeError(f"{op}: {arg} has dtype {x.dtype}; it must be float16, bfloat16, float32 or "
                           f"float64: cast it with .to(float32) first")
    if x.ndim < min_dim:
        raise ShapeError(f"{op}: {arg} must have at least {min_dim} dims, got shape {x.shape}")
    return x


def stat_dtype(op: str, x: NBXTensor, params: dict[str, NBXTensor | None]) -> D.DType:
    """The dtype of the parameters and of the returned statistics, by torch's mixed-type rule."""
    given = {k: v for k, v in params.items() if v is not None}
    for name, t in given.items():
        if not isinstance(t, NBXTensor):
            raise NbxTypeError(f"{op}: {name} must be an NBXTensor or None, got {type(t).__name__}")
    check_device(op, x, *given.values())
    kinds = {t.dtype for t in given.values()}
    if not kinds:
        return x.dtype
    if len(kinds) > 1:
        listed = ", ".join(f"{k} {t.dtype}" for k, t in given.items())
        raise NbxTypeError(f"{op}: parameters must share one dtype, got {listed}: cast them to one dtype")
    (pdt,) = kinds
    if pdt is x.dtype or (pdt is D.float32 and x.dtype in (D.float16, D.bfloat16)):
        return pdt
    name = next(iter(given))
    raise NbxTypeError(f"{op}: {name} has dtype {pdt} but input is {x.dtype}: parameters must have the "
                       f"input's dtype (or float32 for a float16/bfloat16 input)")


def check_param(op: str, t: object, arg: str) -> None:
    """``t`` is None or a floating NBXTensor."""
    if t is not None and (not isinstance(t, NBXTensor) or t.dtype not in FLOATS):
        got = t.dtype if isinstance(t, NBXTensor) else type(t).__name__
        raise NbxTypeError(f"{op}: {arg} must be a floating NBXTensor or None, got {got}")


def check_vector(op: str, t: NBXTensor | None, arg: str, size: int) -> None:
    """``t`` (when given) holds exactly ``size`` elements, one per channel."""
    if t is not None and t.numel() != size:
        raise ShapeError(f"{op}: {arg} must have {size} elements (one per channel), got shape {t.shape}")


def check_shape(op: str, t: NBXTensor | None, arg: str, shape: Sequence[int]) -> None:
    """``t`` (when given) has exactly ``shape``."""
    if t is not None and tuple(t.shape) != tuple(shape):
        raise ShapeError(f"{op}: expected {arg} of shape {list(shape)} (normalized_shape), "
                         f"got {list(t.shape)}")
