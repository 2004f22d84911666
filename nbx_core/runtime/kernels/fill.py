"""Fill a strided tensor with one value, and write arithmetic ranges (arange, linspace).

Scalars travel as both a float64 and an int64 argument and ``FLOAT`` picks one: a plain Python
float argument would be typed float32 by Triton and lose float64 precision.
"""


import triton
import triton.language as tl

from ...shape import coalesce_in_memory_order
from ...tensor import NBXTensor
from ..launch import block_size, cdiv, launch
from .copy import cast_to
from .indexing import block_indices, needs_int64, offsets


@triton.jit
def _fill_kernel(dst_ptr, fvalue: tl.float64, ivalue: tl.int64, n, shape, strides, FLOAT: tl.constexpr,
                 NDIM: tl.constexpr, CONTIG: tl.constexpr, BLOCK: tl.constexpr, INT64: tl.constexpr):
    idx, mask = block_indices(n, BLOCK, INT64)
    off = offsets(idx, shape, strides, NDIM, CONTIG)
    if FLOAT:
        v = tl.full([BLOCK], fvalue, tl.float64)
    else:
        v = tl.full([BLOCK], ivalue, tl.int64)
    tl.store(dst_ptr + off, cast_to(v, dst_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _range_kernel(dst_ptr, fstart: tl.float64, fstep: tl.float64, fend: tl.float64, istart: tl.int64, istep: tl.int64,
                  n, FLOAT: tl.constexpr, SYMMETRIC: tl.constexpr, BLOCK: tl.constexpr,
                  INT64: tl.constexpr):
    idx, mask = block_indices(n, BLOCK, INT64)
    if FLOAT:
        i = idx.to(tl.float64)
        v = fstart + fstep * i
        if SYMMETRIC:
            # linspace: the second half counts back from the end, as torch does, so both ends are exact.
            v = tl.where(idx < n // 2, v, fend - fstep * (n - 1 - idx).to(tl.float64))
    else:
        v = istart + istep * idx.to(tl.int64)
    tl.store(dst_ptr + idx, cast_to(v, dst_ptr.dtype.element_ty), mask=mask)


def _split(value: bool | int | float) -> tuple[float, int, bool]:
    if isinstance(value, bool | int):
        return 0.0, int(value), False
    return float(value), 0, True


def fill_into(dst: NBXTensor, value: bool | int | float) -> None:
    """Set every element of ``dst`` to ``value`` (a Python bool, int or float)."""
    n = dst.numel()
    if n == 0:
        return
    shape, (st,) = coalesce_in_memory_order(dst.shape, dst.stride())
    block = block_size(n, gpu=2048)
    f, i, is_float = _split(value)
    launch(_fill_kernel, (cdiv(n, block),), dst, f, i, n, shape, st, FLOAT=is_float, NDIM=len(shape),
           CONTIG=st == (1,), BLOCK=block, INT64=needs_int64(n, dst), num_warps=8)


def range_into(dst: NBXTensor, start: int | float, step: int | float, end: float | None = None) -> None:
    """Write ``start + i * step`` into the contiguous ``dst``; with ``end``, linspace's symmetric form.

    Integer ``start`` and ``step`` compute in int64, anything else in float64, then cast once.
    """
    n = dst.numel()
    if n == 0:
        return
    block = block_size(n)
    is_float = not (isinstance(start, int) and isinstance(step, int)) or end is not None
    launch(_range_kernel, (cdiv(n, block),), dst, float(start), float(step), float(end or 0.0),
           int(start) if not is_float else 0, int(step) if not is_float else 0, n,
           FLOAT=is_float, SYMMETRIC=end is not None, BLOCK=block, INT64=needs_int64(n, dst))
