"""``masked_scatter`` and ``masked_select``: the source's elements, in row-major order, land where
the mask is true; the elements where the mask is true, in row-major order, as a 1-D tensor.

The mask's per-block counts come back to the host (see search.block_offsets): too short a source
is an error before anything is written, and a selection's length is known before it is allocated.
Each element's rank among the true mask elements is its block's offset plus an in-block prefix sum.
"""

import triton
import triton.language as tl

from nbx_core import dtypes as D
from nbx_core.errors import NbxTypeError, NbxValueError
from nbx_core.ops import views as V
from nbx_core.runtime.kernels.indexing import block_indices, needs_int64, strided_offsets
from nbx_core.runtime.launch import block_size, cdiv, launch
from nbx_core.shape import broadcast_shapes, coalesce, numel
from nbx_core.tensor import NBXTensor, check_device, empty_tensor

from .search import block_offsets


@triton.jit
def _masked_scatter_kernel(out_ptr, x_ptr, m_ptr, s_ptr, off_ptr, n, total, shape, x_strides, m_strides,
                           s_shape, s_strides, NDIM: tl.constexpr, SDIM: tl.constexpr, BLOCK: tl.constexpr,
                           INT64: tl.constexpr):
    i, m = block_indices(n, BLOCK, INT64)
    x = tl.load(x_ptr + strided_offsets(i, shape, x_strides, NDIM), mask=m)
    take = m & (tl.load(m_ptr + strided_offsets(i, shape, m_strides, NDIM), mask=m, other=0) != 0)
    pos = tl.load(off_ptr + tl.program_id(0)) + tl.cumsum(take.to(tl.int64), axis=0) - 1
    take = take & (pos < total)
    s = tl.load(s_ptr + strided_offsets(tl.where(take, pos, 0), s_shape, s_strides, SDIM), mask=take)
    tl.store(out_ptr + i, tl.where(take, s, x), mask=m)


@triton.jit
def _masked_select_kernel(out_ptr, x_ptr, m_ptr, off_ptr, n, total, shape, x_strides, m_strides,
                          NDIM: tl.constexpr, BLOCK: tl.constexpr, INT64: tl.constexpr):
    i, m = block_indices(n, BLOCK, INT64)
    take = m & (tl.load(m_ptr + strided_offsets(i, shape, m_strides, NDIM), mask=m, other=0) != 0)
    pos = tl.load(off_ptr + tl.program_id(0)) + tl.cumsum(take.to(tl.int64), axis=0) - 1
    take = take & (pos < total)  # never past the elements counted
    x = tl.load(x_ptr + strided_offsets(i, shape, x_strides, NDIM), mask=take)
    tl.store(out_ptr + pos, x, mask=take)


class _Masked:
    """``self`` and ``mask`` expanded to their broadcast ``shape`` (not empty), the launch geometry
    over it, and the mask's true elements: per-block offsets (read back to the host) and total."""

    def __init__(self, self_: NBXTensor, mask: NBXTensor, shape: tuple[int, ...]) -> None:
        self.x, self.mask = V.expand(self_, shape), V.expand(mask, shape)
        self.n = numel(shape)
        self.block = block_size(self.n)
        self.grid = (cdiv(self.n, self.block),)
        scalar = ((1,), (0,), (0,))  # a 0-dim shape is launched as one element
        self.geometry = (tuple(shape), tuple(self.x.stride()), tuple(self.mask.stride())) if shape else scalar
        flat_mask = self.mask if shape else V.reshape(self.mask, (1,))
        self.offsets, self.total, _, _ = block_offsets(flat_mask, self.block)


def _mask_arg(op: str, mask: NBXTensor) -> None:
    if mask.dtype is not D.bool_:
        raise NbxTypeError(f"{op}: mask must be bool, got {mask.dtype}: compare it (mask != 0) first")


def masked_select(self: NBXTensor, mask: NBXTensor) -> NBXTensor:
    """``aten::masked_select``: the elements of ``self`` (broadcast with ``mask``) where ``mask`` is
    true, in row-major order, as a 1-D tensor; its length is read from the mask."""
    op = "aten::masked_select"
    check_device(op, self, mask)
    _mask_arg(op, mask)
    shape = broadcast_shapes(op, self.shape, mask.shape)
    if numel(shape) == 0:
        return empty_tensor((0,), self.dtype, self.device)
    m = _Masked(self, mask, shape)
    out = empty_tensor((m.total,), self.dtype, self.device)
    if m.total:
        launch(_masked_select_kernel, m.grid, out, m.x, m.mask, m.offsets, m.n, m.total, *m.geometry,
               NDIM=len(m.geometry[0]), BLOCK=m.block, INT64=needs_int64(m.n, m.x, m.mask))
    return out


def masked_scatter(self: NBXTensor, mask: NBXTensor, source: NBXTensor) -> NBXTensor:
    """``aten::masked_scatter``: ``self`` (broadcast with ``mask``) with ``source``'s leading
    elements written, in order, where ``mask`` is true."""
    op = "aten::masked_scatter"
    check_device(op, self, mask, source)
    _mask_arg(op, mask)
    if source.dtype is not self.dtype:
        raise NbxTypeError(f"{op}: source has dtype {source.dtype} but self has {self.dtype}: cast source")
    shape = broadcast_shapes(op, self.shape, mask.shape)
    out = empty_tensor(shape, self.dtype, self.device)
    n = out.numel()
    if n == 0:
        return out
    m = _Masked(self, mask, shape)
    if m.total > source.numel():
        raise NbxValueError(f"{op}: the mask selects {m.total} elements but source has only {source.numel()}: "
                            "pass a source with at least as many elements as the mask has true values")
    s_shape, (s_st,) = coalesce(source.shape, source.stride()) if source.numel() else ((1,), ((0,),))
    src = source if source.numel() else self
    launch(_masked_scatter_kernel, m.grid, out, m.x, m.mask, src, m.offsets, n, m.total, *m.geometry, s_shape,
           s_st, NDIM=len(m.geometry[0]), SDIM=len(s_shape), BLOCK=m.block, INT64=needs_int64(n, m.x, m.mask, source))
    return out
