"""Masks as data: the block lists the flash kernel walks (nbx_attention.mask_blocks), and sdpa under
masks that empty, fill or cut key blocks, against torch."""

from __future__ import annotations

import importlib.util
import math
import subprocess
import tempfile
from pathlib import Path

import pytest
import torch

from nbx_core.runtime.launch import BACKEND
from nbx_core.testing import check_op, from_torch, make, numeric, to_torch

SDPA = "aten::scaled_dot_product_attention"
SASS_LOOPS = Path(__file__).parents[2] / "scripts" / "sass_loops.py"


def _lists(mask: torch.Tensor, bm: int, bn: int) -> list[tuple[list[int], list[int]]]:
    from nbx_attention.mask_blocks import mask_blocks

    blocks = mask_blocks(from_torch(mask), bm, bn)
    partial, counts = to_torch(blocks.partial), to_torch(blocks.counts).tolist()
    return [(list(range(lo, hi)), partial[r, :n].tolist()) for r, (lo, hi, n) in enumerate(counts)]


@pytest.mark.skipif(not numeric(), reason="reads the block lists back")
def test_causal_mask_lists_the_lower_triangle():
    L = S = 64
    causal = torch.ones(L, S, dtype=torch.bool).tril().expand(2, 3, L, S)
    # Broadcast over batch and heads: one row of lists per query block.
    assert _lists(causal, 16, 16) == [([], [0]), ([0], [1]), ([0, 1], [2]), ([0, 1, 2], [3])]
    additive = torch.zeros(L, S).masked_fill(~causal[0, 0], -math.inf).expand(2, 3, L, S)
    assert _lists(additive, 16, 16) == _lists(causal, 16, 16)


@pytest.mark.skipif(not numeric(), reason="reads the block lists back")
def test_key_tail_and_finite_additive_values():
    # The key tail (S = 40: the last block holds 8 keys) is full when the mask keeps all of its keys;
    # a finite additive value (transformers' finfo.min) is kept, not skipped.
    keep = torch.ones(1, 2, 16, 40, dtype=torch.bool)
    keep[0, 1, :, :16] = False
    assert _lists(keep, 16, 16) == [([0, 1, 2], []), ([1, 2], [])]
    keep[0, 0, 3, 39] = False
    assert _lists(keep, 16, 16) == [([0, 1], [2]), ([1, 2], [])]
    additive = torch.zeros(1, 1, 16, 40)
    additive[..., :16] = torch.finfo(torch.float32).min
    assert _lists(additive, 16, 16) == [([1, 2], [0])]


@pytest.mark.skipif(not numeric(), reason="reads the block lists back")
def test_full_tiles_after_the_first_run_are_partial():
    # Key blocks: full, empty, full, full, partial (the key tail). The kernel walks one run of full
    # blocks as a range; the later full ones load the mask.
    keep = torch.ones(1, 1, 16, 72, dtype=torch.bool)
    keep[..., 16:32] = False
    keep[..., 0, 64:] = False
    assert _lists(keep, 16, 16) == [([0], [2, 3, 4])]


def _qkv(b, h, L, S, E=16, dtype="float32"):
    return make((b, h, L, E), dtype, seed=0), make((b, h, S, E), dtype, seed=1), make((b, h, S, E), dtype, seed=2)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_causal_mask_as_data_matches_is_causal(dtype):
    q, k, v = _qkv(1, 2, 150, 150, dtype=dtype)
    keep = torch.ones(150, 150, dtype=torch.bool).tril()
    check_op(SDPA, q, k, v, keep.expand(1, 1, 150, 150))
    check_op(SDPA, q, k, v, torch.zeros(150, 150).masked_fill(~keep, -math.inf).to(getattr(torch, dtype)))


def test_padding_mask_broadcast_over_heads_and_rows():
    # BERT's mask: per batch, the last keys padded; (Z, 1, 1, S) broadcast to every head and row.
    q, k, v = _qkv(2, 3, 90, 130)
    keep = torch.ones(2, 1, 1, 130, dtype=torch.bool)
    keep[0, ..., 70:] = False
    keep[1, ..., 100:] = False
    check_op(SDPA, q, k, v, keep)


def test_full_key_blocks_on_both_sides_of_an_empty_one():
    # With the kernel's 64-key tiles (the interpreter's for S >= 64): full, empty, full, full, then
    # the key tail.
    q, k, v = _qkv(1, 2, 20, 260)
    keep = torch.ones(1, 1, 20, 260, dtype=torch.bool)
    keep[..., 64:128] = False
    keep[..., 5, 258:] = False
    check_op(SDPA, q, k, v, keep)


@pytest.mark.parametrize("masked", [-math.inf, torch.finfo(torch.float32).min])
def test_an_additive_padding_mask(masked):
    # transformers' BERT mask: (Z, 1, 1, S), the same for every query row, 0 or a large negative;
    # the kernel loads one row of it per partial block.
    q, k, v = _qkv(2, 2, 30, 150)
    bias = torch.zeros(2, 1, 1, 150)
    bias[0, ..., 100:] = masked
    bias[1, ..., 40:70] = masked
    check_op(SDPA, q, k, v, bias)


def test_a_mask_that_keeps_every_key():
    # ViT's: transformers passes an all-True mask; the run of full blocks then covers the key tail.
    q, k, v = _qkv(2, 2, 40, 150)
    check_op(SDPA, q, k, v, torch.ones(1, 1, 1, 1, dtype=torch.bool).expand(2, 1, 40, 150))


@pytest.mark.parametrize("S", [40, 150])
@pytest.mark.parametrize("kind", ["bool", "additive"])
def test_a_mask_the_same_for_every_key(kind, S):
    # transformers builds ViT's all-True mask as (Z, 1, L, S) expanded from (1, 1, L, 1): the kernel
    # loads one column of it. Here some rows are removed whole (they see nothing, or are shifted by a
    # constant, which leaves their softmax unchanged, or made uniform by the lowest finite value).
    q, k, v = _qkv(2, 2, 40, S)
    rows = torch.arange(40)
    if kind == "bool":
        mask = rows % 7 != 3
    else:
        mask = torch.where(rows % 7 == 3, -2.5, 0.0)
        mask[rows % 11 == 5] = torch.finfo(torch.float32).min
    check_op(SDPA, q, k, v, mask.view(1, 1, 40, 1).expand(2, 1, 40, S))


def test_random_mask_and_rows_that_see_nothing():
    q, k, v = _qkv(1, 2, 80, 140)
    g = torch.Generator().manual_seed(3)
    keep = torch.rand(1, 2, 80, 140, generator=g) < 0.3
    keep[:, :, :64] &= torch.arange(140) >= 64  # whole tiles empty for the first rows
    keep[:, 0, 5] = False  # a row with no key at all: zeros, as torch's CPU kernel gives
    check_op(SDPA, q, k, v, keep)


@pytest.mark.skipif(BACKEND != "aot", reason="compiles for sm_90 (aot backend only)")
def test_block_list_kernels_compile_for_hopper(monkeypatch):
    import nbx_attention.flash_attention as fa

    compiled = []

    def compile_only(kernel, grid, *args, **kwargs):
        compiled.append(kernel.warmup(*args, grid=grid, **kwargs).metadata.name)

    monkeypatch.setattr(fa, "launch", compile_only)
    monkeypatch.setattr("nbx_attention.mask_blocks.launch", compile_only)
    q, k = from_torch(make((1, 16, 2048, 64), "bfloat16")), from_torch(make((1, 16, 2048, 64), "bfloat16"))
    keep = from_torch(torch.ones(2048, 2048, dtype=torch.bool).tril().expand(1, 16, 2048, 2048))
    # 16 heads of 32 query blocks: enough programs that the key range is not split.
    fa.flash_forward(q, k, k, keep, q, None, scale=0.125, causal=False, masked_lse=0.0)
    assert compiled == ["_mask_blocks_kernel", "_attn_fwd_kernel"]


def _sass_loops() -> object:
    spec = importlib.util.spec_from_file_location("sass_loops", SASS_LOOPS)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(BACKEND != "aot", reason="compiles for sm_90 (aot backend only)")
@pytest.mark.parametrize("mask_shape", [(1, 1, 197, 197), (1, 1, 197, 1), (1, 1, 1, 197)])
def test_masked_blocks_keep_the_softmax_in_the_products_layout(monkeypatch, mask_shape):
    # A mask applied in its load's layout pulls the scores into that layout, and every row max and
    # sum of the softmax becomes warp shuffles: 164 a block instead of 8 (ViT's shapes, Triton 3.9),
    # half the speed, which only the instruction stream shows without a GPU.
    import nbx_attention.flash_attention as fa

    sass_loops = _sass_loops()
    compiled = []

    def compile_only(kernel, grid, *args, **kwargs):
        compiled.append(kernel.warmup(*args, grid=grid, **kwargs))

    monkeypatch.setattr(fa, "launch", compile_only)
    monkeypatch.setattr("nbx_attention.mask_blocks.launch", lambda *args, **kwargs: None)
    q = from_torch(make((32, 12, 197, 64), "bfloat16"))
    keep = from_torch(torch.ones(mask_shape, dtype=torch.bool).expand(32, 1, 197, 197))
    fa.flash_forward(q, q, q, keep, q, None, scale=0.125, causal=False, masked_lse=0.0)
    with tempfile.TemporaryDirectory() as tmp:
        cubin = Path(tmp) / "attn.cubin"
        cubin.write_bytes(compiled[-1].asm["cubin"])
        sass = subprocess.run(
            [str(sass_loops.BIN / "cuobjdump"), "-sass", str(cubin)], capture_output=True, text=True, check=True
        ).stdout
    loops = sass_loops.loops(sass)
    # The first loop walks the blocks the mask keeps whole, the last one the blocks it cuts.
    shuffles = [sum(sass_loops._opcode(t).startswith("SHFL") for t in body) for _, _, body in loops]
    assert len(loops) >= 2 and shuffles[-1] <= 2 * max(shuffles[0], 8), shuffles


@pytest.mark.parametrize("kind", ["bool", "float32"])
def test_mask_with_causal_over_several_key_blocks(kind):
    # Both apply: the lists drop tiles past the diagonal and send the diagonal's through the mask.
    q, k, v = _qkv(1, 2, 140, 150)
    mask = make((140, 150), kind, seed=4)
    tril = torch.ones(140, 150, dtype=torch.bool).tril()
    both = mask & tril if kind == "bool" else mask.masked_fill(~tril, float("-inf"))
    check_op(
        SDPA, q, k, v, mask, 0.0, True, torch_fn=lambda *a: torch.ops.aten.scaled_dot_product_attention(q, k, v, both)
    )


def test_grouped_query_attention_with_a_causal_mask_as_data():
    # Llama's case: 4 query heads share 2 key/value heads; the mask broadcasts over all heads.
    q = make((1, 4, 130, 16), "float32", seed=0)
    k, v = make((1, 2, 130, 16), "float32", seed=1), make((1, 2, 130, 16), "float32", seed=2)
    keep = torch.ones(130, 130, dtype=torch.bool).tril().expand(1, 1, 130, 130)
    check_op(SDPA, q, k, v, keep, enable_gqa=True)
