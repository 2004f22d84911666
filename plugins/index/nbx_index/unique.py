"""``_unique2`` (``torch.unique``): the distinct elements in ascending order, with each element's
index among them and each one's count.

The flattened input is sorted (stable, NaN last: nbx_index.sort), so equal elements lie together;
a group starts where an element differs from the one before it (NaN differs from NaN, as in
torch, so every NaN is its own group). The number of groups comes back to the host to size the
result (search.block_offsets); each group's rank is its block's offset plus an in-block prefix sum.
"""

import triton
import triton.language as tl

from nbx_core import dtypes as D
from nbx_core.errors import NbxTypeError
from nbx_core.ops import views as V
from nbx_core.runtime.kernels.indexing import block_indices, needs_int64
from nbx_core.runtime.launch import block_size, cdiv, launch
from nbx_core.tensor import NBXTensor, empty_tensor

from .search import block_offsets
from .sort import sort


@triton.jit
def _starts_kernel(first_ptr, v_ptr, n, BLOCK: tl.constexpr, INT64: tl.constexpr):
    i, m = block_indices(n, BLOCK, INT64)
    v = tl.load(v_ptr + i, mask=m)
    before = tl.load(v_ptr + i - 1, mask=m & (i > 0))
    tl.store(first_ptr + i, ((i == 0) | (v != before)).to(tl.int8), mask=m)


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
    INVERSE: tl.constexpr,
    BLOCK: tl.constexpr,
    INT64: tl.constexpr,
):
    i, m = block_indices(n, BLOCK, INT64)
    first = m & (tl.load(first_ptr + i, mask=m, other=0) != 0)
    rank = tl.load(off_ptr + tl.program_id(0)) + tl.cumsum(first.to(tl.int64), axis=0) - 1
    tl.store(values_ptr + rank, tl.load(v_ptr + i, mask=first), mask=first)
    tl.store(starts_ptr + rank, i.to(tl.int64), mask=first)
    if INVERSE:
        tl.store(inverse_ptr + tl.load(order_ptr + i, mask=m, other=0), rank, mask=m)


@triton.jit
def _counts_kernel(counts_ptr, starts_ptr, groups, n, BLOCK: tl.constexpr):
    g = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = g < groups
    start = tl.load(starts_ptr + g, mask=m)
    end = tl.load(starts_ptr + g + 1, mask=m & (g + 1 < groups), other=n)
    tl.store(counts_ptr + g, end - start, mask=m)


def _unique2(
    self: NBXTensor, sorted: bool = True, return_inverse: bool = False, return_counts: bool = False
) -> tuple[NBXTensor, NBXTensor, NBXTensor]:
    """``aten::_unique2``: (the distinct elements, ascending; with ``return_inverse`` each element's
    index among them, in self's shape; with ``return_counts`` how often each occurs). Results not
    asked for are empty, as torch's. Always sorted: torch's ``sorted=False`` leaves the order open."""
    op = "aten::_unique2"
    if self.dtype.is_complex:
        raise NbxTypeError(f"{op}: complex input has no order; unique the real and imaginary parts instead")
    n = self.numel()
    device = self.device
    inverse = empty_tensor(self.shape if return_inverse else (0,), D.int64, device)
    if n == 0:
        return empty_tensor((0,), self.dtype, device), inverse, empty_tensor((0,), D.int64, device)
    values_sorted, order = sort(V.reshape(self, (n,)), 0)
    block = block_size(n)
    wide = needs_int64(n)
    first = empty_tensor((n,), D.int8, device)
    launch(_starts_kernel, (cdiv(n, block),), first, values_sorted, n, BLOCK=block, INT64=wide)
    offsets, groups, _, _ = block_offsets(first, block)
    values = empty_tensor((groups,), self.dtype, device)
    starts = empty_tensor((groups,), D.int64, device)
    launch(
        _groups_kernel,
        (cdiv(n, block),),
        values,
        starts,
        inverse if return_inverse else starts,
        values_sorted,
        order,
        first,
        offsets,
        n,
        INVERSE=bool(return_inverse),
        BLOCK=block,
        INT64=wide,
    )
    counts = empty_tensor((groups if return_counts else 0,), D.int64, device)
    if return_counts:
        cb = block_size(groups)
        launch(_counts_kernel, (cdiv(groups, cb),), counts, starts, groups, n, BLOCK=cb)
    return values, inverse, counts
