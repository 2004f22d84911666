"""Conformance of aten::scaled_dot_product_attention against torch (CPU)."""

from __future__ import annotations

import pytest
import torch

import nbx_core
from nbx_core.errors import DeviceError, NbxValueError, ShapeError
from nbx_core.testing import check_op, check_raises, from_torch, layouts, make, on_other_device, run_op

SDPA = "aten::scaled_dot_product_attention"
DTYPES = ["float16", "bfloat16", "float32"]


def qkv(b=1, h=2, L=5, S=7, E=16, ev=None, dtype="float32", hk=None, seed=0):
    """Random (query, key, value) shaped (b, h, L, E), (b, hk, S, E), (b, hk, S, ev)."""
    hk = h if hk is None else hk
    return (
        make((b, h, L, E), dtype, seed=seed),
        make((b, hk, S, E), dtype, seed=seed + 1),
        make((b, hk, S, ev or E), dtype, seed=seed + 2),
    )


@pytest.mark.parametrize("dtype", [*DTYPES, "float64"])
@pytest.mark.parametrize("causal", [False, True])
def test_dtypes(dtype, causal):
    check_op(SDPA, *qkv(dtype=dtype), None, 0.0, causal)


def test_float64_keeps_float64_precision():
    # The scale reaches the kernel as a float64 (on the interpreter too: a float32 scale left
    # errors of 2e-8 here), and an additive float64 mask is added at full precision.
    q, k, v = qkv(dtype="float64", L=9, S=11)
    mask = make((9, 11), "float64", seed=5)
    for scale in (None, 0.3):
        check_op(SDPA, q, k, v, mask, 0.0, False, scale=scale, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", [*DTYPES, "float64"])
@pytest.mark.parametrize("slope", [0.02, 0.05, 0.15])
def test_scores_growing_along_the_keys(dtype, slope):
    # Scores that climb along the keys, slowly or by more than 2^8 a key block, so the running max
    # and the accumulator's rescale change block after block; rows start with masked keys.
    S = 300
    q = torch.full((1, 2, 6, 16), 0.5)
    k = (torch.arange(S, dtype=torch.float64) * slope / 2).reshape(1, 1, S, 1).expand(1, 2, S, 16)
    k = k + 0.1 * make((1, 2, S, 16), "float64", seed=1)
    v = make((1, 2, S, 16), "float64", seed=2)
    keep = torch.ones(6, S, dtype=torch.bool)
    keep[:3, :70] = False
    tol = {"rtol": 1e-12, "atol": 1e-12} if dtype == "float64" else {}
    to = getattr(torch, dtype)
    check_op(SDPA, q.to(to), k.to(to), v.to(to), keep, **tol)
    check_op(SDPA, q.to(to), k.flip(2).to(to), v.to(to), None, 0.0, True, **tol)


@pytest.mark.parametrize("L,S", [(5, 3), (3, 9), (1, 6), (6, 1), (70, 40), (40, 70), (100, 100)])
def test_causal_lengths(L, S):
    # torch aligns the causal mask top-left: query i sees keys j <= i (tril of an L x S matrix).
    q, k, v = qkv(h=1, L=L, S=S)
    got = check_op(SDPA, q, k, v, None, 0.0, True)
    tril = torch.ones(L, S, dtype=torch.bool).tril()
    check_op(
        SDPA, q, k, v, None, 0.0, True, torch_fn=lambda *a: torch.ops.aten.scaled_dot_product_attention(q, k, v, tril)
    )
    assert got.shape == (1, 1, L, 16)


@pytest.mark.parametrize("dtype", DTYPES)
def test_long_sequences_cross_blocks(dtype):
    check_op(SDPA, *qkv(h=1, L=67, S=131, dtype=dtype), make((67, 131), "bool", seed=9))


@pytest.mark.parametrize("mask_shape", [(5, 7), (1, 7), (2, 1, 7), (1, 2, 5, 7), (1, 1, 1, 1)])
@pytest.mark.parametrize("kind", ["bool", "float32"])
def test_masks_broadcast(mask_shape, kind):
    mask = make(mask_shape, kind, seed=5)
    check_op(SDPA, *qkv(), mask)


def test_fully_masked_rows_give_zeros():
    q, k, v = qkv()
    mask = make((5, 7), "bool", seed=3)
    mask[1] = False
    fmask = torch.zeros(2, 5, 7)
    fmask[0, 2] = float("-inf")
    # float64 turns a bool mask into an additive one first (see sdpa._attention).
    for dtype in (torch.float32, torch.bfloat16, torch.float64):
        args = (q.to(dtype), k.to(dtype), v.to(dtype))
        got = check_op(SDPA, *args, mask)
        check_op(SDPA, *args, fmask.to(torch.float64) if dtype is torch.float64 else fmask)
        check_op(SDPA, *args, mask, 0.0, True)
        if nbx_core.testing.numeric():
            assert (nbx_core.testing.to_torch(got)[:, :, 1] == 0).all()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
def test_rows_masked_with_the_lowest_finite_value_are_uniform(dtype):
    """transformers masks padding with finfo.min, not -inf: a row masked so everywhere (a padded query
    under a causal float mask) weighs every key alike, as in torch, and is not empty."""
    q, k, v = (t.to(dtype) for t in qkv(L=5, S=70))
    low = torch.finfo(dtype).min
    mask = torch.zeros(5, 70, dtype=dtype).masked_fill(torch.ones(5, 70).triu(1).bool(), low)
    mask[0] = low
    mask[3, 40:] = float("-inf")
    got = check_op(SDPA, q, k, v, mask)
    if nbx_core.testing.numeric():
        assert nbx_core.testing.to_torch(got)[:, :, 0].abs().sum() > 0


def test_mask_dtypes():
    q, k, v = qkv(dtype="float16")
    check_op(SDPA, q, k, v, make((5, 7), "float16"))
    check_op(SDPA, q, k, v, make((5, 7), "float32"))
    check_op(SDPA, q.bfloat16(), k.bfloat16(), v.bfloat16(), make((5, 7), "float32"))


@pytest.mark.parametrize("kind", ["bool", "float32"])
def test_mask_with_causal_combine(kind):
    # torch's CPU flash path combines a 2-D mask with is_causal; its math path refuses other masks.
    # NBX always combines: the mask applies and keys past the diagonal are dropped.
    q, k, v = qkv(L=6, S=4)
    check_op(SDPA, q, k, v, make((6, 4), kind, seed=2), 0.0, True)
    mask = make((2, 6, 4), kind, seed=2)
    tril = torch.ones(6, 4, dtype=torch.bool).tril()
    both = mask & tril if kind == "bool" else mask.masked_fill(~tril, float("-inf"))
    check_op(
        SDPA, q, k, v, mask, 0.0, True, torch_fn=lambda *a: torch.ops.aten.scaled_dot_product_attention(q, k, v, both)
    )


@pytest.mark.parametrize("E", [16, 96])
def test_scale(E):
    # From head dim 128 (96 pads to it), positive scales ride in the softmax's fused multiply-add
    # (without an additive mask); zero and negative ones, and smaller heads, scale the scores first.
    from nbx_attention.flash_attention import FLASH

    assert FLASH.lookup("float32", 8, 8, 96, 96, False)["FOLD_SCALE"]
    assert not FLASH.lookup("float32", 8, 8, 64, 64, False)["FOLD_SCALE"]
    q, k, v = qkv(E=E)
    keep = make((q.shape[-2], k.shape[-2]), seed=7) > 0
    for s in (0.05, 1.0, -0.7, 2, 0.0):
        check_op(SDPA, q, k, v, scale=s)
        check_op(SDPA, q, k, v, keep, scale=s)


@pytest.mark.parametrize("hk,hv", [(2, 2), (2, 1), (1, 4), (4, 4)])
def test_grouped_query_attention(hk, hv):
    q = make((2, 4, 5, 16))
    k, v = make((2, hk, 7, 16), seed=1), make((2, hv, 7, 8), seed=2)
    check_op(SDPA, q, k, v, enable_gqa=True)
    check_op(SDPA, q, k, v, None, 0.0, True, enable_gqa=True)
    check_op(SDPA, q.bfloat16(), k.bfloat16(), v.bfloat16(), make((4, 5, 7), "bool"), enable_gqa=True)
    check_op(SDPA, q[0], k[0], v[0], enable_gqa=True)


@pytest.mark.parametrize("E", [16, 80, 96, 128, 256])
@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_head_dims(E, dtype):
    check_op(SDPA, *qkv(h=1, L=3, S=5, E=E, dtype=dtype), None, 0.0, True)


@pytest.mark.parametrize("E,ev", [(16, 8), (24, 80), (64, 32), (20, 100)])
def test_value_head_dim_differs(E, ev):
    check_op(SDPA, *qkv(L=4, S=6, E=E, ev=ev))
    check_op(SDPA, *qkv(L=4, S=6, E=E, ev=ev, dtype="bfloat16"), None, 0.0, True)


@pytest.mark.parametrize("dtype", DTYPES)
def test_decoding(dtype):
    q, k, v = qkv(b=2, h=4, L=1, S=33, E=32, dtype=dtype)
    check_op(SDPA, q, k, v)
    check_op(SDPA, q, k, v, make((2, 1, 1, 33), "bool", seed=4))
    check_op(SDPA, q, k[:, :2], v[:, :2], enable_gqa=True)


@pytest.mark.parametrize("causal", [False, True])
def test_split_keys_path(causal, monkeypatch):
    # Keys split between programs, the last of a row block merging; five split launches in a row,
    # each finding the ticket counters the one before left at zero.
    import nbx_attention.flash_attention as fa

    splits, launch = [], fa.launch
    # 132 programs wanted (the cpu backend's SM count)
    monkeypatch.setattr(fa.SPLIT, "lookup", lambda *a, **kw: {"PROGRAMS_PER_SM": 1})
    monkeypatch.setattr(fa, "MIN_SPLIT_KEYS", 16)
    monkeypatch.setattr(
        fa, "launch", lambda kernel, grid, *a, **kw: splits.append(grid[2]) or launch(kernel, grid, *a, **kw)
    )
    for dtype in ("float32", "bfloat16"):
        q, k, v = qkv(b=1, h=2, L=1, S=75, E=16, dtype=dtype)
        check_op(SDPA, q, k, v, None, 0.0, causal)
        mask = make((1, 75), "bool", seed=1)
        mask[:, :40] = False
        check_op(SDPA, q, k, v, mask)
        check_op(SDPA, *qkv(h=2, L=3, S=75, dtype=dtype), None, 0.0, causal)
    # Four splits asked (75 keys, at least 16 each), rounded to whole key blocks of the backend's
    # tiles: two on the interpreter's 64-key blocks, two or three on the GPU's.
    assert len(splits) == 6 and all(n > 1 for n in splits)


def test_ranks_and_batch_broadcasting():
    check_op(SDPA, make((5, 16)), make((7, 16), seed=1), make((7, 8), seed=2))
    check_op(SDPA, make((3, 5, 16)), make((3, 7, 16), seed=1), make((3, 7, 16), seed=2), None, 0.0, True)
    check_op(
        SDPA,
        make((2, 3, 2, 5, 16)),
        make((2, 3, 2, 7, 16), seed=1),
        make((2, 3, 2, 7, 16), seed=2),
        make((3, 1, 5, 7), "bool"),
    )
    check_op(SDPA, make((2, 2, 5, 16)), make((1, 2, 7, 16), seed=1), make((2, 1, 7, 16), seed=2))
    check_op(SDPA, make((2, 2, 5, 16)), make((2, 7, 16), seed=1), make((7, 16), seed=2))


def test_non_contiguous_inputs():
    # The usual layout: (B, L, H, E) projections viewed as (B, H, L, E).
    q = make((1, 5, 2, 16)).transpose(1, 2)
    k = make((1, 7, 2, 16), seed=1).transpose(1, 2)
    v = make((1, 7, 2, 16), seed=2).transpose(1, 2)
    check_op(SDPA, q, k, v, None, 0.0, True)
    check_op(SDPA, q.bfloat16(), k.bfloat16(), v.bfloat16(), make((7, 5), "bool").t())
    for _, t in layouts(make((2, 2, 5, 16))):
        check_op(SDPA, t, k.expand(2, 2, 7, 16), v.expand(2, 2, 7, 16))
    for _, t in layouts(make((2, 2, 7, 16))):
        check_op(SDPA, q, t, t)


def test_zero_size():
    check_op(SDPA, *qkv(L=0))
    check_op(SDPA, *qkv(S=0))
    check_op(SDPA, *qkv(b=0))
    check_op(SDPA, *qkv(S=0), None, 0.0, True)


def test_bad_input():
    q, k, v = qkv()
    check_raises(SDPA, q, make((1, 2, 7, 8)), v, match="query head dim 16 != key head dim 8")
    check_raises(SDPA, q, k, v, make((5, 6), "bool"), match="do not broadcast")
    check_raises(SDPA, q, k, v, make((1, 1, 2, 5, 7), "bool"), match="does not broadcast")
    check_raises(SDPA, q, k, v, make((7,), "bool"), match="at least 2 dims")
    check_raises(SDPA, q, k, v, make((7,), "float32"), match="at least 2 dims")
    check_raises(SDPA, q.long(), k.long(), v.long(), match="query has dtype int64, expected floating")
    check_raises(SDPA, q, k.double(), v, match="must have the same dtype")
    check_raises(SDPA, q, k, v, make((5, 7), "int64"), match="attn_mask has dtype int64")
    check_raises(SDPA, q, k, v, make((5, 7), "float64"), match="attn_mask has dtype float64")
    check_raises(SDPA, make((16,)), make((16,)), make((16,)), match="at least 2 dims")
    check_raises(SDPA, make((1, 3, 5, 16)), k, v, enable_gqa=True, match="must divide the number of heads")
    check_raises(SDPA, make((1, 3, 5, 16)), k, v, match="broadcast")
    with pytest.raises(ShapeError, match="key length 7 != value length 6"):
        run_op(SDPA, q, k, make((1, 2, 6, 16)))
    with pytest.raises(NbxValueError, match="dropout_p=0.5 needs random dropout"):
        run_op(SDPA, q, k, v, None, 0.5)
    with pytest.raises(NbxValueError, match="head dim 512 is outside"):
        run_op(SDPA, *qkv(L=2, S=2, E=512))


def test_mixed_devices():
    q, k, v = (from_torch(t) for t in qkv())
    kd = on_other_device(k)
    with pytest.raises(DeviceError, match="scaled_dot_product_attention: expected all tensors on one device"):
        run_op(SDPA, q, kd, v)


@pytest.mark.parametrize("order", ["default", "heavy first", "in order"])
def test_query_tile_orders(order, monkeypatch):
    # A head's query tiles (three of 64 rows here) launch last row first under a causal mask and in
    # row order otherwise; either order, forced, gives the same results.
    import nbx_attention.flash_attention as fa

    seen, launch, lookup = [], fa.launch, fa.FLASH.lookup
    if order != "default":
        monkeypatch.setattr(
            fa.FLASH, "lookup", lambda *a, **kw: {**lookup(*a, **kw), "HEAVY_FIRST": int(order == "heavy first")}
        )
    monkeypatch.setattr(
        fa,
        "launch",
        lambda kernel, grid, *a, **kw: seen.append((grid[0], kw.get("HEAVY_FIRST"))) or launch(kernel, grid, *a, **kw),
    )
    q, k, v = qkv(h=2, L=150, S=140)
    check_op(SDPA, q, k, v, None, 0.0, True)
    check_op(SDPA, q, k, v, None, 0.0, False)
    expect = [True, False] if order == "default" else [order == "heavy first"] * 2
    assert seen == [(3, e) for e in expect]
