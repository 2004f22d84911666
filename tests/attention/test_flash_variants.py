"""The flash kernel's knobs (nbx_attention.flash_attention): the variants the sweep compares agree
with torch on the paths they change (interior and edge blocks, masks, scale sign, splits, float64).
The shipped knobs are what every other attention test runs."""

from __future__ import annotations

import pytest
import torch

from nbx_core.testing import check_op, make

SDPA = "aten::scaled_dot_product_attention"

VARIANTS = {
    "plain": dict(fold_scale=False, k_rows=False, rescale_slack=0.0, causal_longest_first=False, qk_ahead=False),
    "lazy": dict(rescale_slack=8.0, qk_ahead=False),
    "lazy_ahead": dict(rescale_slack=8.0, qk_ahead=True, k_rows=False),
}


@pytest.fixture(params=list(VARIANTS))
def variant(request, monkeypatch):
    import nbx_attention.flash_attention as fa

    for name, value in VARIANTS[request.param].items():
        assert hasattr(fa, name), name
        monkeypatch.setattr(fa, name, value)
    return request.param


def qkv(L, S, E=16, dtype="float32", h=2, seed=0):
    return make((1, h, L, E), dtype, seed=seed), make((1, h, S, E), dtype, seed=seed + 1), \
        make((1, h, S, E), dtype, seed=seed + 2)


def test_interior_and_edge_blocks(variant):
    # On the cpu backend the tiles are 64 x 64: 200 keys are three interior blocks and a tail, 70
    # queries two query blocks (the causal one of them crossing the diagonal).
    q, k, v = qkv(70, 200)
    check_op(SDPA, q, k, v)
    check_op(SDPA, q, k, v, None, 0.0, True)
    check_op(SDPA, *qkv(200, 200, dtype="bfloat16", h=1), None, 0.0, True)


def test_masks_and_scale_sign(variant):
    q, k, v = qkv(70, 200, dtype="float16")
    bool_mask = make((70, 200), "bool", seed=3)
    bool_mask[5] = False
    check_op(SDPA, q, k, v, bool_mask)
    additive = make((1, 2, 70, 200), "float32", seed=4)
    additive[0, 1, 9] = float("-inf")
    additive[0, 0, :, :64] = -1e4
    check_op(SDPA, q, k, v, additive, 0.0, True)
    # A non-positive scale keeps the scores scaled before the max (folding needs scale > 0).
    for s in (-0.7, 0.0):
        check_op(SDPA, *qkv(70, 200), scale=s)


def test_running_max_jumps(variant):
    # Keys grow along the sequence, so rows' maxima rise by far more than the rescale slack, block
    # after block; the scores reach about 60 in base 2.
    q, k, v = qkv(70, 260, dtype="float32")
    k = k * torch.linspace(0.2, 12.0, 260)[:, None]
    check_op(SDPA, q, k, v)
    check_op(SDPA, q, k.flip(2), v, None, 0.0, True)
    check_op(SDPA, q.bfloat16(), k.bfloat16(), v.bfloat16())
    # float16 P tiles overflow past 2**16: the slack must keep the exponentials below that.
    check_op(SDPA, q.half(), k.half(), v.half())


def test_split_and_float64(variant, monkeypatch):
    import nbx_attention.flash_attention as fa

    monkeypatch.setattr(fa, "TARGET_PROGRAMS", 64)
    monkeypatch.setattr(fa, "MIN_SPLIT_KEYS", 16)
    q, k, v = qkv(1, 200, dtype="bfloat16")
    check_op(SDPA, q, k * torch.linspace(0.2, 12.0, 200)[:, None].bfloat16(), v)
    check_op(SDPA, *qkv(3, 200, dtype="float64"), None, 0.0, True)
