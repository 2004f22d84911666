"""Block lists of an attention mask: which key blocks each query block must visit, and how.

A model's mask is data (transformers builds Llama's causal mask, GPT-2's and BERT's padding masks
as tensors), so the flash kernel cannot know from ``is_causal`` that half its key blocks are masked
out. One pass over the mask sorts each (query block, key block) tile of it into:

- *empty*: no score is kept (bool False, or an additive -inf, everywhere): the tile is skipped;
- *full*: every score is kept unchanged (bool True, or an additive 0, everywhere) and the tile lies
  inside the key length: it runs without loading the mask;
- *partial*: anything else, and every tile at the key length's edge: it loads the mask.

The lists are in key order per (mask batch, mask head, query block); a dim the mask broadcasts
(stride 0) is summarised once. Under ``is_causal`` too, keys past the diagonal count as masked.
The flash kernel walks the full tiles, then the partial ones.
"""

from dataclasses import dataclass

import triton
import triton.language as tl

from nbx_core import dtypes as D
from nbx_core.runtime.launch import cdiv, launch
from nbx_core.tensor import NBXTensor, empty_tensor


@triton.jit
def _mask_blocks_kernel(mask_ptr, full_ptr, part_ptr, count_ptr, HB, L, S, NB, smz, smh, smm, smn,
                        KIND: tl.constexpr, CAUSAL: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
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
    rows_ok = offs_m < L
    n_full = tl.zeros((), tl.int32)
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
        inside = (b + 1) * BLOCK_N <= S
        is_full = any_keep & all_plain & inside
        is_part = any_keep & ~is_full
        tl.store(full_ptr + row * NB + n_full, b, mask=is_full)
        tl.store(part_ptr + row * NB + n_part, b, mask=is_part)
        n_full += is_full.to(tl.int32)
        n_part += is_part.to(tl.int32)
    tl.store(count_ptr + row * 2, n_full)
    tl.store(count_ptr + row * 2 + 1, n_part)


@dataclass(frozen=True)
class MaskBlocks:
    """A mask's block lists (int32): ``full`` and ``partial`` of shape (mask batches x heads x query
    blocks, key blocks), ``counts`` (..., 2) how many of each row are used; ``batch_stride`` and
    ``head_stride`` step between list rows (0 where the mask broadcasts), ``blocks`` is the number of
    key blocks."""

    full: NBXTensor
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
    full = empty_tensor((rows, nb), D.int32, mask.device)
    partial = empty_tensor((rows, nb), D.int32, mask.device)
    counts = empty_tensor((rows, 2), D.int32, mask.device)
    launch(_mask_blocks_kernel, (mb, zb * hb), mask, full, partial, counts, hb, L, S, nb, smz, smh, smm, smn,
           KIND=1 if mask.dtype is D.bool_ else 2, CAUSAL=causal, BLOCK_M=block_m, BLOCK_N=block_n, num_warps=4)
    return MaskBlocks(full, partial, counts, 0 if smz == 0 else hb * mb, 0 if smh == 0 else mb, nb)
