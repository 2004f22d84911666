"""Device helpers that turn a flat element index into strided offsets."""

from __future__ import annotations

from typing import Protocol

import triton
import triton.language as tl

from .. import launch as _launch  # noqa: F401  (configures Triton before the kernels below)

_INT32_MAX = 2**31 - 1


class Strided(Protocol):
    """What :func:`needs_int64` reads of an operand: a tensor, or the geometry of one not allocated yet."""

    @property
    def shape(self) -> tuple[int, ...]: ...

    def stride(self) -> tuple[int, ...]: ...


def needs_int64(n: int, *tensors: Strided) -> bool:
    """Whether a flat index or an element offset of a launch over ``n`` elements can pass 2**31."""
    if n > _INT32_MAX:
        return True
    return any(_reach(t.shape, t.stride()) > _INT32_MAX for t in tensors)


def slice_needs_int64(*parts: tuple[Strided | None, int]) -> bool:
    """Whether an element offset within one slice of a tensor can pass 2**31, for kernels that index
    the leading dims in int64 and the rest in int32: each part is a tensor (None: skipped) and the
    first dim of its slice."""
    return any(t is not None and _reach(t.shape[first:], t.stride()[first:]) > _INT32_MAX for t, first in parts)


def _reach(shape: tuple[int, ...], strides: tuple[int, ...]) -> int:
    """The largest element offset from the first element of a view (strides may be negative)."""
    return sum(abs(st) * (s - 1) for s, st in zip(shape, strides, strict=True))


@triton.jit
def strided_offsets(idx, shape, strides, NDIM: tl.constexpr):
    """Offsets of the row-major elements ``idx`` of a tensor with ``shape`` and ``strides``."""
    if NDIM == 1:
        off = idx * strides[0]
    else:
        rem = idx
        off = (rem % shape[NDIM - 1]) * strides[NDIM - 1]
        rem = rem // shape[NDIM - 1]
        for i in tl.static_range(1, NDIM - 1):
            off += (rem % shape[NDIM - 1 - i]) * strides[NDIM - 1 - i]
            rem = rem // shape[NDIM - 1 - i]
        off += rem * strides[0]
    return off


@triton.jit
def offsets(idx, shape, strides, NDIM: tl.constexpr, CONTIG: tl.constexpr):
    """``strided_offsets``, or ``idx`` itself when ``CONTIG`` says every operand is contiguous: a
    stride known to be 1 at compile time lets Triton vectorise the loads (Triton 3.6 does not
    specialise ints inside tuples)."""
    if CONTIG:
        return idx
    else:
        return strided_offsets(idx, shape, strides, NDIM)


@triton.jit
def block_indices(n, BLOCK: tl.constexpr, INT64: tl.constexpr):
    """This program's element indices and their in-range mask; int64 math when ``INT64``."""
    pid = tl.program_id(0)
    if INT64:
        idx = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK).to(tl.int64)
    else:
        idx = pid * BLOCK + tl.arange(0, BLOCK)
    return idx, idx < n
