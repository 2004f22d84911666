"""Strided copy with dtype cast: the kernel behind contiguous, clone, _to_copy, copy_ and cat."""

from __future__ import annotations

import triton
import triton.language as tl

from ... import dtypes as D
from ...shape import broadcast_strides, coalesce_in_memory_order
from ...tensor import NBXTensor, empty_tensor
from ..launch import Prepared, block_size, cdiv, prepare
from ..plans import PlanCache, geometry
from .indexing import block_indices, needs_int64, offsets


@triton.jit
def cast_to(x, DST: tl.constexpr):
    """``x`` converted to ``DST`` the way torch converts: bool is ``x != 0``, float8 via float32."""
    if DST == tl.int1:
        if x.dtype.is_bf16() or x.dtype.is_fp8():
            # the interpreter compares these types wrongly; float32 is exact for them
            return x.to(tl.float32) != 0
        return x != 0
    elif DST.is_fp8() or x.dtype.is_fp8() or DST == tl.bfloat16:
        # Through float32 as torch converts; Triton's interpreter also mis-casts ints to bfloat16.
        f = x.to(tl.float32)
        return f.to(DST, fp_downcast_rounding="rtne" if DST.is_fp8() else None)
    else:
        return x.to(DST)


@triton.jit
def _copy_kernel(dst_ptr, src_ptr, n, shape, dst_strides, src_strides,
                 NDIM: tl.constexpr, CONTIG: tl.constexpr, BLOCK: tl.constexpr, INT64: tl.constexpr):
    idx, mask = block_indices(n, BLOCK, INT64)
    src_off = offsets(idx, shape, src_strides, NDIM, CONTIG)
    dst_off = offsets(idx, shape, dst_strides, NDIM, CONTIG)
    x = tl.load(src_ptr + src_off, mask=mask)
    tl.store(dst_ptr + dst_off, cast_to(x, dst_ptr.dtype.element_ty), mask=mask)


def copy_into(dst: NBXTensor, src: NBXTensor) -> None:
    """Write ``src`` (broadcast to ``dst``'s shape, cast to its dtype) into ``dst``'s elements.

    Real tensors only; complex copies go through float32 views (see nbx_core.ops.copy).
    """
    if dst.numel() == 0:
        return
    _plans.get((geometry(dst), geometry(src)), lambda: _plan(dst, src))(dst, src)


def contiguous_copy(x: NBXTensor, dtype: D.DType | None = None) -> NBXTensor:
    """A new contiguous tensor with ``x``'s values (cast to ``dtype``)."""
    out = empty_tensor(x.shape, dtype or x.dtype, x.device)
    copy_into(out, x)
    return out


_plans: PlanCache[Prepared] = PlanCache()


def _plan(dst: NBXTensor, src: NBXTensor) -> Prepared:
    n = dst.numel()
    src_strides = broadcast_strides(src.shape, src.stride(), dst.shape)
    shape, (dst_st, src_st) = coalesce_in_memory_order(dst.shape, dst.stride(), src_strides)
    block = block_size(n, gpu=2048)
    return prepare(_copy_kernel, (cdiv(n, block),), (None, None, n, shape, dst_st, src_st), (0, 1),
                   NDIM=len(shape), CONTIG=dst_st == src_st == (1,), BLOCK=block,
                   INT64=needs_int64(n, dst, src), num_warps=8)
