"""What every index kernel module shares: argument checks and the out-of-range flag.

An index is checked on the device, not on the host: a kernel that reads an index clamps a bad one
to 0 (so no access leaves the tensor) and raises a flag, a two-element int64 buffer per device
(``[bad, value]``). The wrapper reads the flag back after the launch and raises
:class:`IndexOutOfRangeError` naming the op, the argument and one offending value. In-place ops
run :func:`check_range` before they write anything.
"""

from collections.abc import Sequence
from typing import Any

import numpy as np
import triton
import triton.language as tl

from nbx_core import dtypes as D
from nbx_core.errors import IndexOutOfRangeError, NbxTypeError
from nbx_core.kernels.copy import copy_into
from nbx_core.kernels.indexing import block_indices, needs_int64, strided_offsets
from nbx_core.launch import block_size, cdiv, launch
from nbx_core.shape import coalesce
from nbx_core.tensor import NBXTensor, empty_tensor, tensor

INT_INDEX = (D.int32, D.int64)
BIG = 2**62

_flags: dict[Any, NBXTensor] = {}


def check_index_dtype(op: str, arg: str, t: Any, allowed: Sequence[D.DType] = INT_INDEX) -> NBXTensor:
    """``t`` must be an NBXTensor of one of the ``allowed`` integer dtypes."""
    if not isinstance(t, NBXTensor):
        raise NbxTypeError(f"{op}: {arg} must be a tensor, got {type(t).__name__}")
    if t.dtype not in allowed:
        names = " or ".join(str(d) for d in allowed)
        raise NbxTypeError(f"{op}: {arg} must be {names}, got {t.dtype}: cast it with .to('int64')")
    return t


def flag_for(device: Any) -> NBXTensor:
    """This device's out-of-range flag, zero between launches."""
    flag = _flags.get(device)
    if flag is None:
        flag = _flags[device] = tensor(np.zeros(2, np.int64), device=device)
    return flag


def read_flag(flag: NBXTensor) -> tuple[bool, int]:
    """Read the flag back as (raised, one offending value); a raised flag is replaced by a fresh one."""
    bad, value = flag.tolist()
    if bad:
        _flags.pop(flag.device, None)
    return bool(bad), int(value)


def raise_if_flagged(op: str, arg: str, flag: NBXTensor, size: int | str) -> None:
    """Read the flag back; if a kernel raised it, raise a clear error."""
    bad, value = read_flag(flag)
    if bad:
        raise IndexOutOfRangeError(
            f"{op}: {arg} holds {value}, out of bounds for a dimension of size {size}: "
            "indices must lie in range (negative ones count from the end only where the op allows)"
        )


@triton.jit
def checked(v, size, flag_ptr, mask, NEG: tl.constexpr):
    """Index values ``v`` wrapped (when ``NEG``) and checked against ``size``; bad ones raise the
    flag and read as 0 so that no access leaves the tensor."""
    v = v.to(tl.int64)
    if NEG:
        bad = mask & ((v < -size) | (v >= size))
    else:
        bad = mask & ((v < 0) | (v >= size))
    if tl.max(bad.to(tl.int32), axis=0) > 0:
        tl.atomic_max(flag_ptr, 1)
        tl.store(flag_ptr + 1 + v * 0, v, mask=bad)
    if NEG:
        v = tl.where(v < 0, v + size, v)
    return tl.where(bad, 0, v)


@triton.jit
def _range_kernel(idx_ptr, flag_ptr, n, size, shape, strides, NEG: tl.constexpr, NDIM: tl.constexpr,
                  BLOCK: tl.constexpr, INT64: tl.constexpr):
    i, m = block_indices(n, BLOCK, INT64)
    v = tl.load(idx_ptr + strided_offsets(i, shape, strides, NDIM), mask=m, other=0)
    checked(v, size, flag_ptr, m, NEG)


def check_range(op: str, arg: str, index: NBXTensor, size: int) -> None:
    """Raise unless every value of ``index`` lies in ``[0, size)``."""
    n = index.numel()
    if n == 0:
        return
    flag = flag_for(index.device)
    shape, (st,) = coalesce(index.shape, index.stride())
    if not shape:
        shape, st = (1,), (0,)
    block = block_size(n)
    launch(_range_kernel, (cdiv(n, block),), index, flag, n, size, shape, st, NEG=False, NDIM=len(shape),
           BLOCK=block, INT64=needs_int64(n, index))
    raise_if_flagged(op, arg, flag, size)


def contiguous_copy(x: NBXTensor, dtype: D.DType | None = None) -> NBXTensor:
    """A new contiguous tensor with ``x``'s values (cast to ``dtype``)."""
    out = empty_tensor(x.shape, dtype or x.dtype, x.device)
    copy_into(out, x)
    return out


def dims_or_one(shape: Sequence[int], strides: Sequence[int]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Coalesced dims for a kernel's ``strided_offsets`` (a 0-dim shape becomes ``(1,)``)."""
    s, (st,) = coalesce(tuple(shape), tuple(strides))
    return (s, st) if s else ((1,), (0,))
