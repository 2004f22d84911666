"""Index values checked on the device: the index-range part of the argument-check vocabulary.

The host cannot see an index tensor's values without waiting for the device, so a kernel that
reads an index checks it: :func:`checked` clamps a bad one to 0 (no access leaves the tensor) and
raises its launch's flag (a slot of :mod:`nbx_core.runtime.checks`, ``[bad, value]``).
:func:`raise_if_flagged` registers the :class:`IndexOutOfRangeError` naming the op, the argument
and the offending value; on the GPU it surfaces when the host next waits for the device (reading a
result, synchronizing), so that an index op never stalls the host. In-place ops run
:func:`check_range`, which waits, before they write anything.
"""

from typing import Any

import triton
import triton.language as tl

from ...errors import IndexOutOfRangeError
from ...shape import coalesce
from ...tensor import NBXTensor
from .. import checks
from ..launch import block_size, cdiv, launch
from .indexing import block_indices, needs_int64, strided_offsets


def flag_for(device: Any) -> NBXTensor:
    """A zeroed out-of-range flag for one launch (a slot of :mod:`nbx_core.runtime.checks`)."""
    return checks.slot(device)


def _out_of_range(op: str, arg: str, size: int | str, value: int) -> IndexOutOfRangeError:
    return IndexOutOfRangeError(
        f"{op}: {arg} holds {value}, out of bounds for a dimension of size {size}: "
        "indices must lie in range (negative ones count from the end only where the op allows)"
    )


def raise_if_flagged(op: str, arg: str, flag: NBXTensor, size: int | str) -> None:
    """Raise a clear error if a kernel raised ``flag``: at once on the interpreter, at the next host
    wait on the GPU (see :mod:`nbx_core.runtime.checks`)."""
    checks.raise_later(flag, lambda value: _out_of_range(op, arg, size, value))


def raise_now_if_flagged(op: str, arg: str, flag: NBXTensor, size: int | str) -> None:
    """Wait for the device and raise a clear error if a kernel raised ``flag``."""
    bad, value = checks.read_now(flag)
    if bad:
        raise _out_of_range(op, arg, size, value)


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
    """Raise unless every value of ``index`` lies in ``[0, size)`` (waits for the device: in-place
    ops call it before they write)."""
    n = index.numel()
    if n == 0:
        return
    flag = flag_for(index.device)
    shape, (st,) = coalesce(index.shape, index.stride())
    block = block_size(n)
    launch(_range_kernel, (cdiv(n, block),), index, flag, n, size, shape, st, NEG=False, NDIM=len(shape),
           BLOCK=block, INT64=needs_int64(n, index))
    raise_now_if_flagged(op, arg, flag, size)
