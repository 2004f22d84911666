"""Block lists of an attention mask: which key blocks each query block must visit, and how.

A model's mask is data (transformers builds Llama's causal mask, GPT-2's and BERT's padding masks
as tensors), so the flash kernel cannot know from ``is_causal`` that half its key blocks are masked
out. One pass over the mask sorts each (query block, key block) tile of it into:

- *empty*: no score is kept (bool False, or an additive -inf, everywhere): the tile is skipped;
- *full*: every score within the key length is kept unchanged (bool True, or an additive 0): it
  runs without loading the mask (the key length's last tile keeps its bounds check);
- *partial*: anything else: it loads the mask.

Full tiles are kept as one run of consecutive key blocks per (mask batch, mask head, query block):
the first run of them. The flash kernel walks that run as a plain range, as it walks the keys of
unmasked attention, which Triton pipelines (a list of block indices it could not); a mask that
keeps every key walks the same loops as no mask. The masks models build (padding, causal,
all-True, a sliding window) have one such run; a full tile after it is listed as partial, which
loads the mask and gives the same scores. Partial tiles are listed in key order; a dim the mask
broadcasts (stride 0) is summarised once. Under ``is_causal`` too, keys past the diagonal count as
masked. The flash kernel walks the run, then the partial tiles.
"""

from dataclasses import dataclass

import triton
import triton.language as tl

from nbx_core import dtypes as D
from nbx_core.runtime.kernels.indexing import slice_needs_int64
from nbx_core.runtime.launch import cdiv, launch
from nbx_core.tensor import NBXTensor, empty_tensor


@triton.jit
def _mask_blocks_kernel(mask_ptr, part_ptr, count_ptr, HB, L, S, NB, smz, smh, smm, smn,
                        KIND: tl.constexpr, CAUSAL: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                        INT64: tl.constexpr):
    # Grid: (query blocks, mask batches x mask heads). Tiles are classified branch-free and appended
    # with masked scalar stores, so one program's loop has no data-dependent control flow.
    start_m = tl.program_id(0)
    zh = tl.program_id(1)
    z = (zh // HB).to(tl.int64)
    h = (zh % HB).to(tl.int64)
    base = mask_ptr + z * smz + h * smh
    row = zh.to(tl.int64) * tl.num_programs(0) + start_m
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    if INT64:  # offsets within one (z, h) slice of the mask are 32-bit unless one can pass 2**31
        offs_m = offs_m.to(tl.int64)
        offs_n = offs_n.to(tl.int64)
    rows_ok = offs_m < L
    run_lo = tl.zeros((), tl.int32)
    run_hi = tl.full((), -1, tl.int32)
    n_part = tl.zeros((), tl.int32)
    for b in range(0, NB):
        cols = b * BLOCK_N + offs_n
        ok = rows_ok[:, None] & (cols < S)[None, :]
        m = tl.load(base + offs_m[:, None] * smm + cols[None, :] * smn, mask=ok, other=0)
        if KIND == 1:
            keep = m != 0
            plain = keep
        else:
            keep = m != float("-inf")
            plain = m == 0
        if CAUSAL:
            seen = cols[None, :] <= offs_m[:, None]
            keep = keep & seen
            plain = plain & seen
        any_keep = tl.max(tl.where(ok & keep, 1, 0)) > 0
        all_plain = tl.min(tl.where(ok & ~plain, 0, 1)) > 0
        is_full = any_keep & all_plain
        # The run starts at the first full tile and grows while the next tile is full too.
        in_run = is_full & ((run_hi < 0) | (run_hi == b))
        run_lo = tl.where(in_run & (run_hi < 0), b, run_lo)
        run_hi = tl.where(in_run, b + 1, run_hi)
        is_part = any_keep & ~in_run
        tl.store(part_ptr + row * NB + n_part, b, mask=is_part)
        n_part += is_part.to(tl.int32)
    tl.store(count_ptr + row * 3, run_lo)
    tl.store(count_ptr + row * 3 + 1, tl.maximum(run_hi, 0))
    tl.store(count_ptr + row * 3 + 2, n_part)


@dataclass(frozen=True)
class MaskBlocks:
    """A mask's block lists (int32): ``partial`` of shape (mask batches x heads x query blocks, key
    blocks); ``counts`` (..., 3): each row's run of full key blocks ``[lo, hi)`` and how many of its
    ``partial`` entries are used; ``batch_stride`` and ``head_stride`` step between list rows (0 where
    the mask broadcasts), ``blocks`` is the number of key blocks."""

    partial: NBXTensor
    counts: NBXTensor
    batch_stride: int
    head_stride: int
    blocks: int


def mask_blocks(mask: NBXTensor, block_m: int, block_n: int, causal: bool = False) -> MaskBlocks:
    """The block lists of a (Z, H, L, S) bool or additive ``mask`` view for ``block_m`` x ``block_n``
    tiles (the flash kernel's); with ``causal``, keys past the diagonal count as masked."""
    Z, H, L, S = mask.shape
    smz, smh, smm, smn = mask.stride()
    zb = 1 if smz == 0 else Z
    hb = 1 if smh == 0 else H
    mb, nb = cdiv(L, block_m), cdiv(S, block_n)
    rows = zb * hb * mb
    partial = empty_tensor((rows, nb), D.int32, mask.device)
    counts = empty_tensor((rows, 3), D.int32, mask.device)
    launch(_mask_blocks_kernel, (mb, zb * hb), mask, partial, counts, hb, L, S, nb, smz, smh, smm, smn,
           KIND=1 if mask.dtype is D.bool_ else 2, CAUSAL=causal, BLOCK_M=block_m, BLOCK_N=block_n,
           INT64=slice_needs_int64((mask, 2)), num_warps=4)
    return MaskBlocks(partial, counts, 0 if smz == 0 else hb * mb, 0 if smh == 0 else mb, nb)
