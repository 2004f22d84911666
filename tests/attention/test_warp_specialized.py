"""The warp-specialized Hopper attention kernel, run on the interpreter by switching it on there.

It serves unmasked, non-causal half-type attention at head dim 128 with whole 128-key tiles and no
logsumexp; the portable kernel serves the rest (checked by which kernel each launch ran).
"""

from __future__ import annotations

import pytest

from nbx_core.testing import check_op, make

from .test_fused_sdpa import FLASH, _cuda_variant

SDPA = "aten::scaled_dot_product_attention"


@pytest.fixture
def kernels(monkeypatch) -> list[str]:
    """Switch the warp-specialized kernel on; the names of the kernels launched, in order."""
    import nbx_attention.flash_attention as fa
    import nbx_attention.warp_specialized as ws

    seen: list[str] = []
    monkeypatch.setattr(fa, "WARP_SPECIALIZE", True)
    for module in (fa, ws):
        launch = module.launch
        monkeypatch.setattr(module, "launch", lambda kernel, grid, *a, launch=launch, **kw:
                            seen.append(kernel.__name__) or launch(kernel, grid, *a, **kw))
    return seen


def _qkv(L=200, S=256, h=2, hk=2, dtype="bfloat16", E=128):
    return make((1, h, L, E), dtype), make((1, hk, S, E), dtype, seed=1), make((1, hk, S, E), dtype, seed=2)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_warp_specialized_attention(kernels, dtype):
    # Query rows past L (200 = 128 + 72) load as zeros and are clipped at the store; two key tiles.
    q, k, v = _qkv(dtype=dtype)
    check_op(SDPA, q, k, v)
    check_op(SDPA, q, k, v, None, 0.0, False, scale=0.3)
    check_op(SDPA, *_qkv(h=4, hk=2, dtype=dtype), enable_gqa=True)  # query head h reads key head h // 2
    # (B, L, H, E) projections viewed as (B, H, L, E): rows H * E apart.
    q4, k4, v4 = (make((1, n, 2, 128), dtype, seed=s).transpose(1, 2) for n, s in ((128, 0), (384, 1), (384, 2)))
    check_op(SDPA, q4, k4, v4)
    assert kernels == ["_ws_attn_kernel"] * 4


def test_logsumexp_keeps_the_portable_kernel(kernels):
    # The fused variants' logsumexp: the warp-specialized kernel got it wrong on the H200.
    _cuda_variant(FLASH, *_qkv(L=130, S=128), None, False)
    assert kernels == ["_attn_fwd_kernel"]


def test_warp_specialized_attention_falls_back(kernels):
    q, k, v = _qkv()
    check_op(SDPA, q, k, v, None, 0.0, True)  # causal
    check_op(SDPA, q, k, v, make((200, 256), "bool", seed=3))  # a mask
    check_op(SDPA, *_qkv(S=200))  # a key tail would need masking
    check_op(SDPA, *_qkv(L=64))  # less than one query tile
    check_op(SDPA, *_qkv(E=64))  # head dim 64: the portable kernel is faster there
    check_op(SDPA, *_qkv(dtype="float32"))
    check_op(SDPA, q, k, v, None, 0.0, False, scale=-0.5)  # the scale cannot ride in the row max
    q2 = make((1, 2, 200, 136), "bfloat16")[..., 3:131]  # rows 2 bytes off 16-byte alignment
    check_op(SDPA, q2, k, v)
    assert kernels == ["_attn_fwd_kernel"] * 8


def test_key_splits_keep_the_portable_kernel(kernels, monkeypatch):
    # Few query tiles over a long key range split it between programs: that path is the portable
    # kernel's.
    import nbx_attention.flash_attention as fa

    monkeypatch.setattr(fa.SPLIT, "lookup", lambda *a, **kw: {"PROGRAMS_PER_SM": 1})
    monkeypatch.setattr(fa, "MIN_SPLIT_KEYS", 128)
    check_op(SDPA, *_qkv(L=128, S=512, h=1, hk=1))
    assert kernels == ["_attn_fwd_kernel"]
