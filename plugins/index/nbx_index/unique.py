"""``_unique2`` (``torch.unique``): the distinct elements in ascending order, with each element's
index among them and each one's count; ``unique_consecutive``: the same over runs of equal
elements, in their order.

For ``_unique2`` the flattened input is sorted (stable, NaN last: nbx_index.sort), so equal
elements lie together;
a group starts where an element differs from the one before it (NaN differs from NaN, as in
torch, so every NaN is its own group). The number of groups comes back to the host to size the
result (search.block_offsets); each group's rank is its block's offset plus an in-block prefix sum.
"""

import triton
import triton.language as tl

from nbx_core import dtypes as D
from nbx_core.errors import NbxTypeError
from nbx_core.ops import views as V
from nbx_core.runtime.kernels.copy import contiguous_copy
from nbx_core.runtime.kernels.indexing import block_indices, needs_int64
from nbx_core.runtime.launch import block_size, cdiv, launch
from nbx_core.shape import wrap_dim
from nbx_core.tensor import NBXTensor, empty_tensor

from .gather import index_select
from .search import block_offsets
from .sort import sort


@triton.jit
def _starts_kernel(first_ptr, v_ptr, n, BLOCK: tl.constexpr, INT64: tl.constexpr):
    i, m = block_indices(n, BLOCK, INT64)
    v = tl.load(v_ptr + i, mask=m)
    before = tl.load(v_ptr + i - 1, mask=m & (i > 0))
    if v.dtype.is_fp16() or v.dtype.is_bf16():  # compared as numbers (-0.0 == 0.0), not as bits
        v = v.to(tl.float32)
        before = before.to(tl.float32)
    tl.store(first_ptr + i, ((i == 0) | (v != before)).to(tl.int8), mask=m)


@triton.jit
def _row_starts_kernel(first_ptr, x_ptr, R, BLOCK_R: tl.constexpr, INT64: tl.constexpr):
    # One program per row of the (n, R) input: does it differ anywhere from the row before?
    i = tl.program_id(0)
    if INT64:
        i = i.to(tl.int64)
    cols = tl.arange(0, BLOCK_R)
    differs = i == 0
    if i > 0:
        for r0 in range(0, R, BLOCK_R):
            m = cols + r0 < R
            v = tl.load(x_ptr + i * R + r0 + cols, mask=m)
            before = tl.load(x_ptr + (i - 1) * R + r0 + cols, mask=m)
            if v.dtype.is_fp16() or v.dtype.is_bf16():
                v = v.to(tl.float32)
                before = before.to(tl.float32)
            differs = differs | (tl.max(tl.where(m & (v != before), 1, 0), axis=0) > 0)
    tl.store(first_ptr + i, differs.to(tl.int8))


@triton.jit
def _groups_kernel(
    values_ptr,
    starts_ptr,
    inverse_ptr,
    v_ptr,
    order_ptr,
    first_ptr,
    off_ptr,
    n,
    VALUES: tl.constexpr,
    INVERSE: tl.constexpr,
    SORTED: tl.constexpr,
    BLOCK: tl.constexpr,
    INT64: tl.constexpr,
):
    i, m = block_indices(n, BLOCK, INT64)
    first = m & (tl.load(first_ptr + i, mask=m, other=0) != 0)
    rank = tl.load(off_ptr + tl.program_id(0)) + tl.cumsum(first.to(tl.int64), axis=0) - 1
    if VALUES:
        tl.store(values_ptr + rank, tl.load(v_ptr + i, mask=first), mask=first)
    tl.store(starts_ptr + rank, i.to(tl.int64), mask=first)
    if INVERSE:
        if SORTED:  # element i of the sorted input came from position order[i]
            tl.store(inverse_ptr + tl.load(order_ptr + i, mask=m, other=0), rank, mask=m)
        else:
            tl.store(inverse_ptr + i, rank, mask=m)


@triton.jit
def _counts_kernel(counts_ptr, starts_ptr, groups, n, BLOCK: tl.constexpr):
    g = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = g < groups
    start = tl.load(starts_ptr + g, mask=m)
    end = tl.load(starts_ptr + g + 1, mask=m & (g + 1 < groups), other=n)
    tl.store(counts_ptr + g, end - start, mask=m)


def _flat(x: NBXTensor) -> NBXTensor:
    """``x``'s elements in row-major order, in contiguous memory (the kernels read them at stride 1)."""
    flat = V.reshape(x, (x.numel(),))
    return flat if flat.stride() == (1,) or x.numel() < 2 else contiguous_copy(flat)


def _groups(
    op: str, flat: NBXTensor, order: NBXTensor | None, shape: tuple[int, ...], return_inverse: bool, return_counts: bool
) -> tuple[NBXTensor, NBXTensor, NBXTensor]:
    """(values, inverse, counts) of the runs of equal elements of the 1-D ``flat``; ``order`` is the
    sort's permutation (None: ``flat`` is the input's own order); ``shape`` is the inverse's."""
    if flat.dtype.is_complex:
        raise NbxTypeError(f"{op}: complex input has no order; unique the real and imaginary parts instead")
    n, device = flat.shape[0], flat.device
    if n == 0:
        inverse = empty_tensor(shape if return_inverse else (0,), D.int64, device)
        return empty_tensor((0,), flat.dtype, device), inverse, empty_tensor((0,), D.int64, device)
    block = block_size(n)
    first = empty_tensor((n,), D.int8, device)
    launch(_starts_kernel, (cdiv(n, block),), first, flat, n, BLOCK=block, INT64=needs_int64(n))
    values, _, inverse, counts = _runs(first, flat, order, shape, return_inverse, return_counts)
    assert values is not None
    return values, inverse, counts


def _runs(
    first: NBXTensor,
    flat: NBXTensor | None,
    order: NBXTensor | None,
    shape: tuple[int, ...],
    return_inverse: bool,
    return_counts: bool,
) -> tuple[NBXTensor | None, NBXTensor, NBXTensor, NBXTensor]:
    """From ``first`` (int8, 1 where a run starts): the runs' values (the elements of ``flat`` that
    start them; None without ``flat``), their starts, each position's run index (in ``shape``,
    through ``order`` when sorted; empty unless asked) and each run's length (empty unless asked)."""
    n, device = first.shape[0], first.device
    block = block_size(n)
    offsets, groups, _, _ = block_offsets(first, block)
    starts = empty_tensor((groups,), D.int64, device)
    values = empty_tensor((groups,), flat.dtype, device) if flat is not None else None
    inverse = empty_tensor(shape if return_inverse else (0,), D.int64, device)
    launch(
        _groups_kernel,
        (cdiv(n, block),),
        values if values is not None else starts,
        starts,
        inverse if return_inverse else starts,
        flat if flat is not None else first,
        order if order is not None else starts,
        first,
        offsets,
        n,
        VALUES=values is not None,
        INVERSE=bool(return_inverse),
        SORTED=order is not None,
        BLOCK=block,
        INT64=needs_int64(n),
    )
    counts = empty_tensor((groups if return_counts else 0,), D.int64, device)
    if return_counts:
        cb = block_size(groups)
        launch(_counts_kernel, (cdiv(groups, cb),), counts, starts, groups, n, BLOCK=cb)
    return values, starts, inverse, counts


def _unique2(
    self: NBXTensor, sorted: bool = True, return_inverse: bool = False, return_counts: bool = False
) -> tuple[NBXTensor, NBXTensor, NBXTensor]:
    """``aten::_unique2``: (the distinct elements, ascending; with ``return_inverse`` each element's
    index among them, in self's shape; with ``return_counts`` how often each occurs). Results not
    asked for are empty, as torch's. Always sorted: torch's ``sorted=False`` leaves the order open."""
    op = "aten::_unique2"
    if self.dtype.is_complex or self.numel() == 0:
        return _groups(op, _flat(self), None, self.shape, return_inverse, return_counts)
    values_sorted, order = sort(V.reshape(self, (self.numel(),)), 0)
    return _groups(op, values_sorted, order, self.shape, return_inverse, return_counts)


def unique_consecutive(
    self: NBXTensor, return_inverse: bool = False, return_counts: bool = False, dim: int | None = None
) -> tuple[NBXTensor, NBXTensor, NBXTensor]:
    """``aten::unique_consecutive``: the first element of each run of equal elements of the
    flattened input, in order (with each element's run index, and each run's length); with ``dim``,
    runs of equal slices along it (``inverse`` and ``counts`` then index the slices)."""
    op = "aten::unique_consecutive"
    if dim is None:
        return _groups(op, _flat(self), None, self.shape, return_inverse, return_counts)
    if self.dtype.is_complex:
        raise NbxTypeError(f"{op}: complex input has no order; unique the real and imaginary parts instead")
    d = wrap_dim(op, dim, self.ndim)
    n, device = self.shape[d], self.device
    if n == 0:
        none = empty_tensor((0,), D.int64, device)
        return empty_tensor(self.shape, self.dtype, device), none, none
    rows = contiguous_copy(V.movedim(self, d, 0))  # (n, ...): slice i is row i
    width = rows.numel() // n
    first = empty_tensor((n,), D.int8, device)
    block_r = min(block_size(max(width, 1)), 1024)
    launch(_row_starts_kernel, (n,), first, rows, width, BLOCK_R=block_r, INT64=needs_int64(rows.numel()))
    # Along a dim torch returns the inverse and the counts whether asked for or not.
    _, starts, inverse, counts = _runs(first, None, None, (n,), True, True)
    return index_select(self, d, starts), inverse, counts
