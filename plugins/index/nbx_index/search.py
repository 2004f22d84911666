"""``nonzero`` (data-dependent size), ``bucketize`` and ``isin``.

nonzero counts the nonzero elements of each block on the device, reads the per-block counts back
to size the result, and a second kernel writes each element's coordinates at its block's offset
plus its rank within the block. ``block_offsets`` is that count-and-prefix step, shared with
masked_scatter. bucketize is a binary search per element; isin sorts the test elements and
searches them.
"""

from typing import Any

import numpy as np
import triton
import triton.language as tl

from nbx_core import dtypes as D
from nbx_core.errors import NbxTypeError, NbxValueError, ShapeError
from nbx_core.ops import views as V
from nbx_core.runtime.kernels.copy import cast_to, contiguous_copy
from nbx_core.runtime.kernels.indexing import block_indices, needs_int64, strided_offsets
from nbx_core.runtime.launch import block_size, cdiv, launch
from nbx_core.runtime.pointwise import tl_dtype
from nbx_core.shape import coalesce
from nbx_core.tensor import NBXTensor, check_device, empty_tensor, tensor
from nbx_core.tensor.args import tensor_arg

from .gather import gather


@triton.jit
def _count_kernel(cnt_ptr, x_ptr, n, shape, strides, NDIM: tl.constexpr, BLOCK: tl.constexpr,
                  INT64: tl.constexpr):
    i, m = block_indices(n, BLOCK, INT64)
    x = tl.load(x_ptr + strided_offsets(i, shape, strides, NDIM), mask=m)
    nz = m & (x != 0)
    tl.store(cnt_ptr + tl.program_id(0), tl.sum(nz.to(tl.int64), axis=0))


def block_offsets(x: NBXTensor, block: int) -> tuple[NBXTensor, int, tuple, tuple]:
    """Per-block exclusive offsets of ``x``'s nonzero elements (row-major) and their total.

    Returns (offsets on x's device, total, coalesced shape, strides)."""
    n = x.numel()
    shape, (st,) = coalesce(x.shape, x.stride())
    nb = cdiv(n, block)
    counts = empty_tensor((nb,), D.int64, x.device, zero=True)
    launch(_count_kernel, (nb,), counts, x, n, shape, st, NDIM=len(shape), BLOCK=block, INT64=needs_int64(n, x))
    c = np.asarray(counts.tolist(), dtype=np.int64).reshape(nb)
    offsets = np.concatenate([[0], np.cumsum(c)[:-1]]).astype(np.int64)
    return tensor(offsets, device=x.device), int(c.sum()), shape, st


@triton.jit
def _nonzero_kernel(out_ptr, off_ptr, x_ptr, n, total, shape, strides, full_shape,
                    NDIM: tl.constexpr, ODIM: tl.constexpr, BLOCK: tl.constexpr, INT64: tl.constexpr):
    i, m = block_indices(n, BLOCK, INT64)
    x = tl.load(x_ptr + strided_offsets(i, shape, strides, NDIM), mask=m)
    nz = m & (x != 0)
    pos = tl.load(off_ptr + tl.program_id(0)) + tl.cumsum(nz.to(tl.int64), axis=0) - 1
    # Never past the rows counted (bounds the write even if the input changed in between).
    ok = nz & (pos < total)
    rem = i.to(tl.int64)
    for k in tl.static_range(ODIM):
        tl.store(out_ptr + pos * ODIM + (ODIM - 1 - k), rem % full_shape[ODIM - 1 - k], mask=ok)
        rem = rem // full_shape[ODIM - 1 - k]


def nonzero(self: NBXTensor) -> NBXTensor:
    """``aten::nonzero``: the int64 coordinates (rows, in row-major order) of the nonzero elements."""
    if self.dtype.is_complex:
        raise NbxTypeError("aten::nonzero: complex input is not supported: use view_as_real first")
    n = self.numel()
    if n == 0:
        return empty_tensor((0, self.ndim), D.int64, self.device)
    block = block_size(n)
    offsets, total, shape, st = block_offsets(self, block)
    out = empty_tensor((total, self.ndim), D.int64, self.device)
    if self.ndim:
        launch(_nonzero_kernel, (cdiv(n, block),), out, offsets, self, n, total, shape, st, tuple(self.shape),
               NDIM=len(shape), ODIM=self.ndim, BLOCK=block, INT64=needs_int64(n, self))
    return out


@triton.jit
def _search_kernel(out_ptr, x_ptr, b_ptr, n, m, b_stride, steps, shape, strides, row_len,
                   SIDE: tl.constexpr, COMP: tl.constexpr, NDIM: tl.constexpr, ROWS: tl.constexpr,
                   BLOCK: tl.constexpr, INT64: tl.constexpr):
    i, mask = block_indices(n, BLOCK, INT64)
    v = cast_to(tl.load(x_ptr + strided_offsets(i, shape, strides, NDIM), mask=mask), COMP)
    if ROWS:  # a sorted row per row of values: contiguous rows of m boundaries, row_len values each
        b_ptr = b_ptr + (i // row_len).to(tl.int64) * m
    lo = tl.zeros([BLOCK], tl.int64)
    hi = tl.zeros([BLOCK], tl.int64) + m
    for _ in range(steps):
        go = lo < hi
        mid = (lo + hi) // 2
        b = cast_to(tl.load(b_ptr + mid * b_stride, mask=mask & go), COMP)
        # torch's comparisons: lower bound !(b >= v), upper bound !(b > v); isin keeps NaN last.
        if SIDE == 0:
            right = ~(b >= v)
        elif SIDE == 1:
            right = ~(b > v)
        else:
            right = b < v
        right = go & right
        lo = tl.where(right, mid + 1, lo)
        hi = tl.where(go & ~right, mid, hi)
    if SIDE == 2:
        hit = tl.load(b_ptr + lo * b_stride, mask=mask & (lo < m))
        found = (lo < m) & (cast_to(hit, COMP) == v)
        tl.store(out_ptr + i, found, mask=mask)
    else:
        tl.store(out_ptr + i, lo.to(out_ptr.dtype.element_ty), mask=mask)


def _search(x: NBXTensor, b: NBXTensor, side: int, out_dtype: D.DType, comp: D.DType) -> NBXTensor:
    """Per value of ``x``, its position in the sorted last dim of ``b``: one 1-D ``b`` for all values,
    or (``b`` N-D) the row of ``b`` with the leading indices of the value's row."""
    out = empty_tensor(x.shape, out_dtype, x.device)
    n = x.numel()
    if n == 0:
        return out
    rows = b.ndim > 1
    if rows and not b.is_contiguous():
        b = contiguous_copy(b)
    shape, (st,) = coalesce(x.shape, x.stride())
    m = b.shape[-1]
    block = block_size(n)
    launch(_search_kernel, (cdiv(n, block),), out, x, b, n, m, b.stride(-1), (m + 1).bit_length(), shape, st,
           x.shape[-1] if rows else 1, SIDE=side, COMP=tl_dtype(D.compute_dtype(comp)), NDIM=len(shape), ROWS=rows,
           BLOCK=block, INT64=needs_int64(n, x, b))
    return out


def _scalar_tensor(v: Any, device: Any) -> NBXTensor:
    if not isinstance(v, bool | int | float):
        raise NbxTypeError(f"expected a number, got {type(v).__name__}")
    return tensor(v, dtype=D.scalar_dtype(v), device=device)


def bucketize(self: Any, boundaries: NBXTensor, *, out_int32: bool = False, right: bool = False) -> NBXTensor:
    """``aten::bucketize`` (Tensor and Scalar): for each value, the index of its bucket in the
    sorted 1-D ``boundaries`` (``right`` puts values equal to a boundary in the next bucket)."""
    op = "aten::bucketize"
    tensor_arg(op, boundaries, "boundaries", ndim=1)
    x = self if isinstance(self, NBXTensor) else _scalar_tensor(self, boundaries.device)
    check_device(op, x, boundaries)
    for t, arg in ((x, "self"), (boundaries, "boundaries")):
        if t.dtype.is_complex or t.dtype is D.bool_:
            raise NbxTypeError(f"{op}: {arg} has dtype {t.dtype}: use a real numeric dtype")
    comp = D.promote_types(x.dtype, boundaries.dtype)
    return _search(x, boundaries, 1 if right else 0, D.int32 if out_int32 else D.int64, comp)


def searchsorted(sorted_sequence: NBXTensor, self: Any, *, out_int32: bool = False, right: bool = False,
                 side: str | None = None, sorter: NBXTensor | None = None) -> NBXTensor:
    """``aten::searchsorted`` (Tensor and Scalar): for each value, where it would go in the sorted
    last dim of ``sorted_sequence`` (1-D: one sequence for all values; N-D: one per row of values,
    with the same leading dims). ``right`` or ``side="right"`` puts equal values after; ``sorter``
    gives the order that sorts an unsorted sequence."""
    op = "aten::searchsorted"
    seq = tensor_arg(op, sorted_sequence, "sorted_sequence")
    x = self if isinstance(self, NBXTensor) else _scalar_tensor(self, seq.device)
    check_device(op, x, seq)
    if side is not None:
        if side not in ("left", "right"):
            raise NbxValueError(f"{op}: side must be 'left' or 'right', got {side!r}")
        if right and side == "left":
            raise NbxValueError(f"{op}: side='left' and right=True disagree: give one of them")
        right = side == "right"
    for t, arg in ((x, "self"), (seq, "sorted_sequence")):
        if t.dtype.is_complex or t.dtype is D.bool_:
            raise NbxTypeError(f"{op}: {arg} has dtype {t.dtype}: use a real numeric dtype")
    if seq.ndim > 1 and (x.ndim != seq.ndim or x.shape[:-1] != seq.shape[:-1]):
        raise ShapeError(f"{op}: sorted_sequence {list(seq.shape)} and values {list(x.shape)} must agree in "
                         "every dim but the last (or sorted_sequence be 1-D)")
    if sorter is not None:
        tensor_arg(op, sorter, "sorter")
        if sorter.shape != seq.shape or sorter.dtype is not D.int64:
            raise ShapeError(f"{op}: sorter must be int64 of sorted_sequence's shape {list(seq.shape)}, got "
                             f"{sorter.dtype} {list(sorter.shape)}")
        seq = gather(seq, seq.ndim - 1, sorter)
    comp = D.promote_types(x.dtype, seq.dtype)
    return _search(x, seq, 1 if right else 0, D.int32 if out_int32 else D.int64, comp)


def isin(elements: Any, test_elements: Any, *, assume_unique: bool = False, invert: bool = False) -> NBXTensor:
    """``aten::isin`` (Tensor_Tensor, Tensor_Scalar, Scalar_Tensor): whether each element occurs in
    ``test_elements`` (``invert``: does not). ``assume_unique`` changes nothing here."""
    op = "aten::isin"
    from .sort import sort_values

    dev = next(t.device for t in (elements, test_elements) if isinstance(t, NBXTensor))
    e = elements if isinstance(elements, NBXTensor) else _scalar_tensor(elements, dev)
    t = test_elements if isinstance(test_elements, NBXTensor) else _scalar_tensor(test_elements, dev)
    check_device(op, e, t)
    if e.dtype.is_complex or t.dtype.is_complex:
        raise NbxTypeError(f"{op}: complex inputs are not supported")
    comp = D.result_type(elements, test_elements)
    flat = V.reshape(t, (t.numel(),))
    if flat.dtype is not comp:
        flat = contiguous_copy(flat, comp)
    found = _search(e, sort_values(flat) if flat.numel() else flat, 2, D.bool_, comp)
    if invert:
        from nbx_core.runtime.pointwise import pointwise

        found = pointwise(op, _not, found, dtype=D.bool_)
    return found


@triton.jit
def _not(x, sc):
    return x == 0
