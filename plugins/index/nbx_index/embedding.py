"""``embedding`` (a row gather) and ``_embedding_bag`` (a gather-reduce per bag).

embedding's ``padding_idx`` only affects the gradient: the forward output is the plain lookup, as
in torch. ``_embedding_bag`` returns torch's four outputs with torch CPU's shapes and values:
``offset2bag`` (bag of each index; empty in sum mode without a padding_idx on a contiguous
weight, torch's fast path), ``bag_size``
(non-padding indices per bag; zeros in sum mode) and ``max_indices`` (sum: zeros; mean: bag_size;
max: the weight row of each maximum). Offsets are clamped into ``[0, len(indices)]`` in the
kernel, so malformed offsets can never read outside the indices.
"""

from collections.abc import Mapping
from pathlib import Path

import triton
import triton.language as tl

from nbx_core.errors import NbxTypeError, NbxValueError, ShapeError
from nbx_core.ops import views as V
from nbx_core.runtime.kernels.copy import contiguous_copy
from nbx_core.runtime.kernels.index_range import checked, flag_for, raise_if_flagged
from nbx_core.runtime.launch import launch, next_pow2
from nbx_core.runtime.tuning import Key, Tunable, bucket
from nbx_core.tensor import NBXTensor, check_device, empty_tensor
from nbx_core.tensor.args import INDEX, tensor_arg

from .gather import take_rows

EMBEDDING_BAG = Tunable(
    "index", "embedding_bag", {"BLOCK_D": "pow2"},
    key=lambda dtype, d: Key({"dtype": dtype, "D": bucket(d)}),
    rule=lambda dtype, d: {"BLOCK_D": min(next_pow2(max(d, 1)), 1024)},
    interpreter=lambda dtype, d: {"BLOCK_D": min(next_pow2(max(d, 1)), 4096)},
    tables=Path(__file__).with_name("configs"))
"""Columns per program of ``_embedding_bag`` (a program reduces one bag over BLOCK_D columns); the
interpreter takes rows up to 4096 wide in one program. Arguments: the weight's dtype name and the
embedding dimension."""


def embedding(weight: NBXTensor, indices: NBXTensor, padding_idx: int = -1, scale_grad_by_freq: bool = False,
              sparse: bool = False) -> NBXTensor:
    """``aten::embedding``: ``weight[indices]``, rows of a 2-D weight (shape ``indices.shape + (dim,)``)."""
    op = "aten::embedding"
    tensor_arg(op, indices, "indices", dtypes=INDEX)
    check_device(op, weight, indices)
    if weight.ndim != 2:
        raise ShapeError(f"{op}: weight must be 2-D, got {weight.ndim} dims")
    flat = V.reshape(indices, (indices.numel(),))
    return take_rows(op, "indices", weight, flat, weight.shape[0], weight.stride(0), ((), ()),
                     ((weight.shape[1],), (weight.stride(1),)), (*indices.shape, weight.shape[1]))


@triton.jit
def _bag_kernel(out_ptr, maxi_ptr, o2b_ptr, size_ptr, w_ptr, idx_ptr, off_ptr, psw_ptr, flag_ptr,
                N, D, V, w_row, w_col, pad, n_off,
                MODE: tl.constexpr, PSW: tl.constexpr, O2B: tl.constexpr, BLOCK_D: tl.constexpr):
    b = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    cm = cols < D
    start = tl.minimum(tl.maximum(tl.load(off_ptr + b).to(tl.int64), 0), N)
    nxt = tl.load(off_ptr + tl.minimum(b + 1, n_off - 1)).to(tl.int64)
    end = tl.where(b + 1 < n_off, nxt, N)
    end = tl.minimum(tl.maximum(end, start), N)
    if MODE == 2:
        acc = tl.full([BLOCK_D], float("-inf"), tl.float32)
    else:
        acc = tl.zeros([BLOCK_D], tl.float32)
    arg = tl.zeros([BLOCK_D], tl.int64)
    cnt = 0
    one = tl.arange(0, 1)
    first = (one * 0 + tl.program_id(1)) == 0
    for i in range(start, end):
        v = checked(tl.load(idx_ptr + i + one), V, flag_ptr, one == 0, False)
        valid = v != pad
        row = tl.load(w_ptr + v * w_row + cols * w_col, mask=cm & valid, other=0).to(tl.float32)
        if MODE == 0:
            if PSW:
                row = row * tl.load(psw_ptr + i + one).to(tl.float32)
            acc += tl.where(valid, row, 0.0)
        elif MODE == 1:
            acc += tl.where(valid, row, 0.0)
        else:
            better = valid & ((row > acc) | (cnt == 0))
            acc = tl.where(better, row, acc)
            arg = tl.where(better, v, arg)
        cnt += tl.sum(valid.to(tl.int32), axis=0)
        if O2B:
            tl.store(o2b_ptr + i + one, (b + one * 0).to(o2b_ptr.dtype.element_ty), mask=first)
    if MODE == 1:
        acc = acc / tl.maximum(cnt, 1).to(tl.float32)
    if MODE == 2:
        acc = tl.where(cnt > 0, acc, 0.0)
        tl.store(maxi_ptr + b * D + cols, arg.to(maxi_ptr.dtype.element_ty), mask=cm)
    tl.store(out_ptr + b * D + cols, acc.to(out_ptr.dtype.element_ty), mask=cm)
    if MODE != 0:
        tl.store(size_ptr + b + one, (cnt + one * 0).to(size_ptr.dtype.element_ty), mask=first)


def _embedding_bag(weight: NBXTensor, indices: NBXTensor, offsets: NBXTensor, scale_grad_by_freq: bool = False,
                   mode: int = 0, sparse: bool = False, per_sample_weights: NBXTensor | None = None,
                   include_last_offset: bool = False, padding_idx: int = -1
                   ) -> tuple[NBXTensor, NBXTensor, NBXTensor, NBXTensor]:
    """``aten::_embedding_bag``: sum (0), mean (1) or max (2) of the weight rows of each bag.

    Bag ``b`` holds ``indices[offsets[b]:offsets[b+1]]`` (the last bag runs to the end unless
    ``include_last_offset``); indices equal to ``padding_idx`` are left out. Returns
    ``(output, offset2bag, bag_size, max_indices)``.
    """
    op = "aten::_embedding_bag"
    tensor_arg(op, indices, "indices", dtypes=INDEX)
    tensor_arg(op, offsets, "offsets", dtypes=INDEX)
    check_device(op, weight, indices, offsets, *([per_sample_weights] if per_sample_weights is not None else []))
    if weight.ndim != 2 or not weight.dtype.is_floating_point:
        raise NbxTypeError(f"{op}: weight must be a 2-D floating tensor, got {weight.ndim}-D {weight.dtype}")
    if indices.ndim != 1 or offsets.ndim != 1:
        raise ShapeError(f"{op}: indices and offsets must be 1-D, got {indices.ndim}-D and {offsets.ndim}-D")
    if mode not in (0, 1, 2):
        raise NbxValueError(f"{op}: mode={mode}: expected 0 (sum), 1 (mean) or 2 (max)")
    if per_sample_weights is not None:
        if mode != 0:
            raise NbxValueError(f"{op}: per_sample_weights is only supported for mode sum (0), got mode {mode}")
        if tuple(per_sample_weights.shape) != tuple(indices.shape):
            raise ShapeError(f"{op}: per_sample_weights must have the shape of indices {tuple(indices.shape)}")
    return bags(op, weight, indices, offsets, mode, per_sample_weights, include_last_offset, padding_idx)


def bags(op: str, weight: NBXTensor, indices: NBXTensor, offsets: NBXTensor, mode: int,
         per_sample_weights: NBXTensor | None, include_last_offset: bool, padding_idx: int,
         config: Mapping[str, int] | None = None) -> tuple[NBXTensor, NBXTensor, NBXTensor, NBXTensor]:
    """``_embedding_bag``'s four outputs for checked arguments (``op`` names it in errors);
    ``config`` replaces :data:`EMBEDDING_BAG`'s lookup."""
    V_, Dm = weight.shape
    N = indices.numel()
    n_off = offsets.numel()
    B = n_off - 1 if include_last_offset else n_off
    if B < 0:
        raise ShapeError(f"{op}: include_last_offset needs at least one offset")
    pad = padding_idx if padding_idx >= 0 else -(2**62)
    dev = weight.device
    out = empty_tensor((B, Dm), weight.dtype, dev)
    # torch's CPU fast path (sum, no padding_idx, contiguous weight) leaves offset2bag empty.
    fast = mode == 0 and padding_idx < 0 and weight.is_contiguous()
    o2b_n = 0 if fast else N
    it = indices.dtype
    o2b = empty_tensor((o2b_n,), it, dev, zero=True)
    bag_size = empty_tensor((B,), it, dev, zero=True)
    maxi = empty_tensor((B, Dm) if mode == 2 else (B,), it, dev, zero=True)
    if B == 0:
        return out, o2b, bag_size, maxi
    flag = flag_for(dev)
    bd = EMBEDDING_BAG.choose(config, weight.dtype.name, Dm)["BLOCK_D"]
    ind = indices if indices.is_contiguous() else contiguous_copy(indices)
    launch(_bag_kernel, (B, -(-Dm // bd) if Dm else 1), out, maxi, o2b if o2b_n else bag_size, bag_size, weight,
           ind if N else offsets, offsets, per_sample_weights if per_sample_weights is not None else weight, flag,
           N, Dm, V_, weight.stride(0), weight.stride(1), pad, n_off, MODE=mode,
           PSW=per_sample_weights is not None, O2B=o2b_n > 0, BLOCK_D=bd)
    raise_if_flagged(op, "indices", flag, V_)
    if mode == 1:
        maxi = bag_size
    return out, o2b, bag_size, maxi


