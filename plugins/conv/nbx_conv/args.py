"""Argument checks and output allocation shared by the nbx-conv ops (no Triton here).

Every bad argument is an NbxError naming the op, the argument and the fix, raised before any
launch. Outputs follow torch's memory-format rule: a channels-last input (4-D or 5-D) gives a
channels-last output, anything else a contiguous one.
"""

from __future__ import annotations

from collections.abc import Sequence

from nbx_core import dtypes as D
from nbx_core.errors import NbxTypeError, NbxValueError
from nbx_core.ops.views import permute
from nbx_core.tensor import NBXTensor, empty_tensor

FLOATS = (D.float16, D.bfloat16, D.float32, D.float64)


INTS = (D.uint8, D.int8, D.int16, D.int32, D.int64)


def check_float(op: str, x: object, arg: str = "input", extra: tuple[D.DType, ...] = ()) -> NBXTensor:
    """``x`` as a floating NBXTensor, or one of the ``extra`` dtypes the op also takes (those
    torch's CUDA kernel of the op takes)."""
    if not isinstance(x, NBXTensor):
        raise NbxTypeError(f"{op}: {arg} must be an NBXTensor, got {type(x).__name__}")
    if x.dtype not in FLOATS and x.dtype not in extra:
        names = ", ".join(str(d) for d in (*FLOATS, *extra))
        raise NbxTypeError(f"{op}: {arg} has dtype {x.dtype}; it must be one of {names}: cast it first")
    return x


def ints(op: str, value: object, n: int, arg: str, default: Sequence[int] | None = None) -> tuple[int, ...]:
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
    if any(v <= 0 for v in vals):
        raise NbxValueError(f"{op}: {arg} must be positive, got {list(vals)}")


def non_negative(op: str, vals: Sequence[int], arg: str) -> None:
    if any(v < 0 for v in vals):
        raise NbxValueError(f"{op}: {arg} must be non-negative, got {list(vals)}")


def check_ndim(op: str, x: NBXTensor, dims: Sequence[int], what: str) -> None:
    """``x`` has one of ``dims`` dims (``what`` says which layouts those are)."""
    if x.ndim not in dims:
        raise NbxValueError(f"{op}: expected {what} input, got shape {list(x.shape)}")


def channels_last(t: NBXTensor) -> bool:
    """Whether torch would suggest the channels-last memory format for ``t`` (4-D or 5-D)."""
    if t.ndim not in (4, 5) or t.shape[1] <= 1:
        return False
    st = t.stride()
    return st[1] == 1 and all(st[d] >= st[1] for d in range(2, t.ndim)) and st[-1] > 1


def empty_output(shape: Sequence[int], dtype: D.DType, like: NBXTensor, cl: bool | None = None) -> NBXTensor:
    """A new (N, C, *spatial) tensor, channels-last when ``cl`` (default: when ``like`` is)."""
    cl = channels_last(like) if cl is None else cl
    shape = tuple(shape)
    if not cl:
        return empty_tensor(shape, dtype, like.device)
    nd = len(shape)
    phys = empty_tensor((shape[0], *shape[2:], shape[1]), dtype, like.device)
    return permute(phys, 0, nd - 1, *range(1, nd - 1))


def pool_out(op: str, size: int, k: int, pad: int, stride: int, dil: int, ceil_mode: bool) -> int:
    """torch's pooling output size (ceil mode may not start a window in the right padding)."""
    num = size + 2 * pad - dil * (k - 1) - 1 + (stride - 1 if ceil_mode else 0)
    out = num // stride + 1
    if ceil_mode and (out - 1) * stride >= size + pad:
        out -= 1
    return out
