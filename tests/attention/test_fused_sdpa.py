"""The fused sdpa variants: their own argument orders, extra outputs and layouts.

``_scaled_dot_product_flash_attention_for_cpu`` runs in torch on the CPU and is compared directly.
The CUDA-only variants are compared with torch's sdpa (output), a float64 logsumexp computed here,
and the shapes, dtypes and strides of torch's fake (meta) kernels on CUDA.
"""

from __future__ import annotations

import math

import pytest
import torch
from torch._subclasses import FakeTensorMode

from nbx_core.errors import NbxTypeError, NbxValueError, ShapeError
from nbx_core.testing import assert_close, check_op, check_raises, make, run_op

CPU = "aten::_scaled_dot_product_flash_attention_for_cpu"
FLASH = "aten::_scaled_dot_product_flash_attention"
EFFICIENT = "aten::_scaled_dot_product_efficient_attention"
CUDNN = "aten::_scaled_dot_product_cudnn_attention"


def qkv(b=1, h=2, L=5, S=7, E=16, ev=None, dtype="float32", hk=None):
    hk = h if hk is None else hk
    return make((b, h, L, E), dtype), make((b, hk, S, E), dtype, seed=1), make((b, hk, S, ev or E), dtype, seed=2)


def ref_lse(q, k, mask=None, causal=False, scale=None):
    """Natural-log logsumexp of each query row's scores, in float64; masked rows are -inf."""
    q, k = q.double(), k.double()
    if k.shape[1] != q.shape[1]:
        k = k.repeat_interleave(q.shape[1] // k.shape[1], 1)
    s = (q @ k.transpose(-1, -2)) * (scale if scale is not None else 1 / math.sqrt(q.shape[-1]))
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else s + mask.double()
    if causal:
        s = s.masked_fill(~torch.ones(s.shape[-2:], dtype=torch.bool).tril(), float("-inf"))
    return torch.logsumexp(s, -1)


def ref_out(q, k, v, mask=None, causal=False, scale=None):
    gqa = k.shape[1] != q.shape[1]
    if mask is not None and causal:
        # torch's math path refuses mask + causal: fold the causal mask in.
        tril = torch.ones(q.shape[2], k.shape[2], dtype=torch.bool).tril()
        mask = mask & tril if mask.dtype == torch.bool else mask.masked_fill(~tril, float("-inf"))
        causal = False
    return torch.ops.aten.scaled_dot_product_attention(q, k, v, mask, 0.0, causal, scale=scale, enable_gqa=gqa)


def fake_outputs(name, *args, **kwargs):
    """torch's meta results of a CUDA-only op for these arguments (shapes, dtypes, strides)."""
    op = getattr(torch.ops.aten, name.removeprefix("aten::"))
    with FakeTensorMode():
        fake = [
            torch.empty_strided(a.shape, a.stride(), dtype=a.dtype, device="cuda") if isinstance(a, torch.Tensor) else a
            for a in args
        ]
        return op(*fake, **kwargs)


def assert_like_meta(got, meta):
    assert len(got) == len(meta)
    for i, (g, m) in enumerate(zip(got, meta, strict=True)):
        if isinstance(m, torch.Tensor):
            assert tuple(g.shape) == tuple(m.shape), f"output {i}: shape {g.shape} != meta {tuple(m.shape)}"
            # NBX has no uint64: the random-state outputs are int64 there.
            want = "int64" if m.dtype == torch.uint64 else str(m.dtype).removeprefix("torch.")
            assert g.dtype.name == want, f"output {i}: dtype {g.dtype} != {want}"
            if m.numel() > 1:
                assert tuple(g.stride()) == tuple(m.stride()), f"output {i}: strides {g.stride()} != {m.stride()}"
        else:
            assert g == m, f"output {i}: {g!r} != meta {m!r}"


# -- _scaled_dot_product_flash_attention_for_cpu ---------------------------------------------------


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("causal", [False, True])
def test_for_cpu(dtype, causal):
    check_op(CPU, *qkv(dtype=dtype), 0.0, causal, check_stride=True)


@pytest.mark.parametrize("L,S", [(6, 3), (2, 9), (1, 7)])
def test_for_cpu_lengths_scale_gqa(L, S):
    check_op(CPU, *qkv(L=L, S=S), 0.0, True, scale=0.25)
    check_op(CPU, *qkv(h=4, hk=2, L=L, S=S), 0.0, L > S)


def test_for_cpu_masks():
    q, k, v = qkv()
    mask = make((5, 7), "float32")
    mask[1] = float("-inf")
    check_op(CPU, q, k, v, attn_mask=mask)
    check_op(CPU, q, k, v, 0.0, True, attn_mask=make((1, 2, 1, 7), "float32"))
    check_op(CPU, q.bfloat16(), k.bfloat16(), v.bfloat16(), attn_mask=make((1, 7), "float32"))
    check_op(CPU, q.half(), k.half(), v.half(), attn_mask=make((1, 1, 5, 7), "float16"))


def test_for_cpu_layouts():
    # (B, L, H, E) projections viewed as (B, H, L, E): torch returns the output in that layout too.
    q, k, v = (t.transpose(1, 2).contiguous().transpose(1, 2) for t in qkv())
    check_op(CPU, q, k, v, 0.0, True, check_stride=True)
    check_op(CPU, q, k.transpose(0, 1).contiguous().transpose(0, 1), v[:, :, :].expand(1, 2, 7, 16))
    # torch's CPU kernel misreads a query whose last dim is strided; compare with its sdpa instead.
    qs = make((1, 2, 16, 5)).transpose(2, 3)
    check_op(
        CPU,
        qs,
        k,
        v,
        torch_fn=lambda q, k, v: (
            torch.ops.aten.scaled_dot_product_attention(q, k, v),
            torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(q.contiguous(), k, v)[1],
        ),
    )


def test_for_cpu_bad_input():
    q, k, v = qkv()
    check_raises(CPU, q[0], k[0], v[0], match="must be 4-D")
    check_raises(CPU, q, k, make((1, 2, 7, 8)), match="one head size")
    check_raises(CPU, q, k, v, attn_mask=make((2, 5, 7), "float32"), match="2-D .* or 4-D")
    check_raises(CPU, q, k, v, attn_mask=make((5, 7), "bool"), match="attn_mask has dtype bool")
    check_raises(CPU, q, k, v, 0.1, match="dropout_p=0.1")


# -- the CUDA-only variants ------------------------------------------------------------------------


def _cuda_variant(name, q, k, v, mask, causal, scale=None):
    """Run ``name``; check the meta layout and compare output and logsumexp rows."""
    if name == FLASH:
        args = (q, k, v, 0.0, causal, False)
    elif name == EFFICIENT:
        args = (q, k, v, mask, True, 0.0, causal)
    else:
        args = (q, k, v, mask, True, 0.0, causal, False)
    kw = {} if scale is None else {"scale": scale}
    got = run_op(name, *args, **kw)
    assert_like_meta(got, fake_outputs(name, *args, **kw))
    assert_close(got[0], ref_out(q, k, v, mask, causal, scale), what=f"{name} output")
    L = q.shape[2]
    lse = got[1]
    want = ref_lse(q, k, mask, causal, scale).float()
    want = want.masked_fill(want == float("-inf"), float("inf"))
    if name == EFFICIENT:
        pad = torch.full((*want.shape[:2], lse.shape[2]), float("inf"))
        pad[..., :L] = want
        want = pad
    elif name == CUDNN:
        want = want.unsqueeze(-1)
    assert_close(lse, want, rtol=1e-4, atol=1e-4, what=f"{name} logsumexp")
    return got


@pytest.mark.parametrize("name", [FLASH, EFFICIENT, CUDNN])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("causal", [False, True])
def test_cuda_variants(name, dtype, causal):
    _cuda_variant(name, *qkv(dtype=dtype), None, causal)


@pytest.mark.parametrize("name", [FLASH, EFFICIENT, CUDNN])
def test_cuda_variants_lengths_gqa_scale(name):
    _cuda_variant(name, *qkv(L=9, S=4), None, True, 0.5)
    _cuda_variant(name, *qkv(L=1, S=40, h=4, hk=2), None, False)
    _cuda_variant(name, *qkv(L=33, S=5), None, False)


@pytest.mark.parametrize("name", [EFFICIENT, CUDNN])
def test_cuda_variants_bias_and_value_dim(name):
    q, k, v = qkv(ev=24)
    bias = make((1, 2, 5, 7), "float32")
    bias[0, 1, 3] = float("-inf")
    _cuda_variant(name, q, k, v, bias, False)
    _cuda_variant(name, q, k, v, make((5, 7), "bool"), True)
    _cuda_variant(name, q.half(), k.half(), v.half(), make((1, 1, 5, 7), "float16"), False)


def test_efficient_without_logsumexp():
    q, k, v = qkv()
    got = run_op(EFFICIENT, q, k, v, None, False)
    assert_like_meta(got, fake_outputs(EFFICIENT, q, k, v, None, False))
    assert_close(got[0], ref_out(q, k, v))


def test_cuda_variants_bad_input():
    q, k, v = qkv()
    for name, args in ((FLASH, (0.0, False)), (EFFICIENT, (None, True)), (CUDNN, (None, True))):
        with pytest.raises(ShapeError, match="must be 4-D"):
            run_op(name, q[0], k[0], v[0], *args)
        with pytest.raises(ShapeError, match="query head dim 16 != key head dim 8"):
            run_op(name, q, make((1, 2, 7, 8)), v, *args)
        with pytest.raises(NbxTypeError, match="must have the same dtype"):
            run_op(name, q, k.half(), v, *args)
        with pytest.raises(ShapeError, match="heads .* must divide query heads"):
            run_op(name, q, make((1, 3, 7, 16)), make((1, 3, 7, 16)), *args)
    with pytest.raises(NbxValueError, match="dropout_p=0.2"):
        run_op(FLASH, q, k, v, 0.2)
    with pytest.raises(NbxValueError, match="dropout_p=0.3"):
        run_op(EFFICIENT, q, k, v, None, True, 0.3)
    with pytest.raises(NbxValueError, match="return_debug_mask=True"):
        run_op(FLASH, q, k, v, 0.0, False, True)
    with pytest.raises(NbxValueError, match="return_debug_mask=True"):
        run_op(CUDNN, q, k, v, None, True, 0.0, False, True)
    with pytest.raises(ShapeError, match="one head size"):
        run_op(FLASH, q, k, make((1, 2, 7, 8)))
    with pytest.raises(ShapeError, match="do not broadcast"):
        run_op(EFFICIENT, q, k, v, make((5, 6), "float32"), True)
    with pytest.raises(NbxTypeError, match="attn_bias has dtype int64"):
        run_op(CUDNN, q, k, v, make((5, 7), "int64"), True)
