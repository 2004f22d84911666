"""The norm family's own rules for its parameters (weight, bias, running statistics); the other
argument checks are nbx_core.tensor.args.

The dtype rule is torch's (CPU): parameters share the input's dtype, except that a half-type input
may take float32 parameters ("mixed" mode), in which case statistics are returned in float32.
"""

from __future__ import annotations

from nbx_core import dtypes as D
from nbx_core.errors import NbxTypeError, ShapeError
from nbx_core.tensor import NBXTensor, check_device
from nbx_core.tensor.args import optional_tensor


def stat_dtype(op: str, x: NBXTensor, params: dict[str, NBXTensor | None]) -> D.DType:
    """The dtype of the parameters and of the returned statistics, by torch's mixed-type rule."""
    given = {k: optional_tensor(op, v, k) for k, v in params.items() if v is not None}
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
    raise NbxTypeError(
        f"{op}: {name} has dtype {pdt} but input is {x.dtype}: parameters must have the "
        f"input's dtype (or float32 for a float16/bfloat16 input)"
    )


def check_vector(op: str, t: NBXTensor | None, arg: str, size: int) -> None:
    """``t`` (when given) holds exactly ``size`` elements, one per channel."""
    if t is not None and t.numel() != size:
        raise ShapeError(f"{op}: {arg} must have {size} elements (one per channel), got shape {t.shape}")
