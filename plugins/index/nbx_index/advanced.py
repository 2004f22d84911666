"""Advanced indexing: ``aten::index``, ``index_put`` and ``index_put_``.

An index list holds, per leading dim of ``self``, an integer tensor, a bool/uint8 mask (which
spans as many dims as it has and becomes their ``nonzero`` coordinates) or None (the whole dim).
The index tensors broadcast together to a shape ``B``. When the indexed dims are adjacent the
result is ``self.shape[:first] + B + self.shape[last + 1:]``; otherwise ``B`` moves to the front,
followed by the other dims in order (torch's rule).

One kernel folds every index into a single int64 element offset per position of ``B`` (wrapping
negative values and checking the range), so the gather is one row copy (gather.take_rows) and the
put is one serial scatter (scatter.scatter_serial): each lane walks the positions of ``B`` in
order, so with duplicate indices the **last** value wins and ``accumulate=True`` adds in index
order, deterministic on every backend.
"""

from collections.abc import Sequence
from typing import Any

import triton
import triton.language as tl

from nbx_core import dtypes as D
from nbx_core.errors import IndexOutOfRangeError, NbxTypeError
from nbx_core.ops import views as V
from nbx_core.runtime.kernels.copy import contiguous_copy
from nbx_core.runtime.kernels.index_range import checked, flag_for, raise_if_flagged, raise_now_if_flagged
from nbx_core.runtime.kernels.indexing import block_indices, needs_int64, strided_offsets
from nbx_core.runtime.launch import block_size, cdiv, launch
from nbx_core.shape import broadcast_shapes, coalesce, numel
from nbx_core.tensor import NBXTensor, check_device, empty_tensor
from nbx_core.tensor.args import check_broadcasts_to, optional_tensor, same_dtype, tensor_arg

from .gather import take_rows
from .scatter import ADD, SET, scatter_serial

BIG = 2**62
"""The bound passed with offsets that were range-checked already: no offset reaches it."""


@triton.jit
def _lin_kernel(
    lin_ptr,
    idx_ptr,
    flag_ptr,
    n,
    size,
    stride,
    shape,
    strides,
    ACC: tl.constexpr,
    NDIM: tl.constexpr,
    BLOCK: tl.constexpr,
    INT64: tl.constexpr,
):
    i, m = block_indices(n, BLOCK, INT64)
    v = checked(tl.load(idx_ptr + strided_offsets(i, shape, strides, NDIM), mask=m, other=0), size, flag_ptr, m, True)
    off = v * stride
    if ACC:
        off += tl.load(lin_ptr + i, mask=m, other=0)
    tl.store(lin_ptr + i, off, mask=m)


class _Plan:
    """What an index list means for one tensor: the result shape and the folded offsets."""

    def __init__(self, op: str, x: NBXTensor, indices: Sequence[Any]) -> None:
        x, slots = _expand_masks(op, x, indices)
        self.x = x
        adv = [d for d, t in enumerate(slots) if t is not None]
        self.bshape = broadcast_shapes(op, *(slots[d].shape for d in adv))
        rest = [d for d in range(x.ndim) if d not in adv]
        adjacent = adv == list(range(adv[0], adv[-1] + 1))
        pre = [d for d in rest if d < adv[0]] if adjacent else []
        post = [d for d in rest if d not in pre]
        self.pre = (tuple(x.shape[d] for d in pre), tuple(x.stride(d) for d in pre))
        self.post = (tuple(x.shape[d] for d in post), tuple(x.stride(d) for d in post))
        self.shape = (*self.pre[0], *self.bshape, *self.post[0])
        self.slots, self.adv = slots, adv

    def offsets(self, op: str, wait: bool = False) -> NBXTensor:
        """int64 element offsets into ``x`` for each position of the broadcast index shape;
        ``wait``: read the range checks at once (before an in-place write)."""
        x = self.x
        n = numel(self.bshape)
        lin = empty_tensor((n,), D.int64, x.device)
        if n == 0:
            return lin
        block = block_size(n)
        for k, d in enumerate(self.adv):
            flag = flag_for(x.device)
            t = V.expand(self.slots[d], self.bshape)
            shape, (st,) = coalesce(t.shape, t.stride())
            launch(
                _lin_kernel,
                (cdiv(n, block),),
                lin,
                t,
                flag,
                n,
                x.shape[d],
                x.stride(d),
                shape,
                st,
                ACC=k > 0,
                NDIM=len(shape),
                BLOCK=block,
                INT64=needs_int64(n, t),
            )
            (raise_now_if_flagged if wait else raise_if_flagged)(op, f"indices[{d}]", flag, x.shape[d])
        return lin


def _expand_masks(op: str, x: NBXTensor, indices: Sequence[Any]) -> tuple[NBXTensor, list[Any]]:
    if not isinstance(indices, list | tuple):
        raise NbxTypeError(f"{op}: indices must be a list of tensors or None, got {type(indices).__name__}")
    slots: list[Any] = []
    for k, t in enumerate(indices):
        if t is None:
            slots.append(None)
            continue
        optional_tensor(op, t, f"indices[{k}]")
        check_device(op, x, t)
        if t.dtype in (D.bool_, D.uint8):
            d0 = len(slots)
            if t.ndim == 0:
                x = V.unsqueeze(x, d0)
                t = V.reshape(t, (1,))
            want = x.shape[d0 : d0 + t.ndim]
            if tuple(want) != tuple(t.shape):
                raise IndexOutOfRangeError(
                    f"{op}: the mask of shape {tuple(t.shape)} at indices[{k}] does not match the indexed "
                    f"dims {tuple(want)} of self {tuple(x.shape)}"
                )
            from .search import nonzero

            nz = nonzero(t)
            slots.extend(V.select(nz, 1, j) for j in range(t.ndim))
        elif t.dtype in (D.int32, D.int64, D.int8, D.int16):
            slots.append(t)
        else:
            raise NbxTypeError(f"{op}: tensors used as indices must be long, int, byte or bool, got {t.dtype}")
    if len(slots) > x.ndim:
        raise IndexOutOfRangeError(f"{op}: too many indices ({len(slots)}) for a tensor of dimension {x.ndim}")
    slots += [None] * (x.ndim - len(slots))
    if all(s is None for s in slots):
        raise NbxTypeError(f"{op}: indices hold no tensor: use slicing for a plain view")
    return x, slots


def index(self: NBXTensor, indices: Sequence[Any]) -> NBXTensor:
    """``aten::index.Tensor``: ``self[indices]`` with advanced (tensor and mask) indices."""
    op = "aten::index"
    plan = _Plan(op, self, indices)
    lin = plan.offsets(op)
    return take_rows(op, "indices", plan.x, lin, BIG, 1, plan.pre, plan.post, plan.shape)


def _put(op: str, dst: NBXTensor, indices: Sequence[Any], values: NBXTensor, accumulate: bool) -> None:
    tensor_arg(op, values, "values")
    check_device(op, dst, values)
    same_dtype(op, ("self", dst), ("values", values))
    plan = _Plan(op, dst, indices)
    check_broadcasts_to(op, values, "values", plan.shape, "the indexed result")
    vals = V.expand(values, plan.shape)
    lin = plan.offsets(op, wait=True)
    J, Q = lin.numel(), numel(plan.post[0])
    vals = contiguous_copy(vals)
    lanes = (*plan.pre[0], *plan.post[0])
    dst_ls = (*plan.pre[1], *plan.post[1])
    nb = len(plan.bshape)
    vst = vals.stride()
    src_ls = (*vst[: len(plan.pre[0])], *vst[len(plan.pre[0]) + nb :])
    scatter_serial(
        plan.x,
        lin,
        vals,
        None,
        ADD if accumulate else SET,
        lanes,
        dst_ls,
        src_ls,
        tuple(0 for _ in lanes),
        J,
        1,
        Q,
        1,
        BIG,
    )


def index_put_(self: NBXTensor, indices: Sequence[Any], values: NBXTensor, accumulate: bool = False) -> NBXTensor:
    """``aten::index_put_``: ``self[indices] = values`` (``+=`` with ``accumulate``) in place.

    Duplicate indices: the last value wins; accumulate adds them in order."""
    _put("aten::index_put_", self, indices, values, accumulate)
    return self


def index_put(self: NBXTensor, indices: Sequence[Any], values: NBXTensor, accumulate: bool = False) -> NBXTensor:
    """``aten::index_put``: a copy of ``self`` with ``values`` put at ``indices`` (see index_put_)."""
    out = contiguous_copy(self)
    _put("aten::index_put", out, indices, values, accumulate)
    return out
