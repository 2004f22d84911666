"""nbx::gelu_tanh and nbx::rotary, and the patterns that turn GPT-2's spelt-out tanh GELU and
transformers' rotary embedding into them."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from nbx_elementwise.patterns import GELU_TANH, ROTARY

from nbx_core.graph import load
from nbx_core.graph.export import export_module
from nbx_core.registry import get_registry
from nbx_core.testing import assert_close, from_torch, make, numeric, run_op, to_torch


class NewGELU(torch.nn.Module):
    """transformers' NewGELUActivation (GPT-2's gelu_new)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
def test_gelu_tanh_is_aten_gelu_tanh(dtype):
    x = make((5, 33), dtype)
    got = run_op("nbx::gelu_tanh", x)
    if numeric():
        assert_close(got, torch.nn.functional.gelu(x, approximate="tanh"))


def test_the_pattern_replaces_the_spelt_out_chain_and_keeps_its_values(tmp_path):
    path = export_module(NewGELU(), (torch.randn(3, 16),), tmp_path / "g.nbx")
    fused = load(path)
    plain = load(path, fusion=False)
    assert [f.pattern.name for f in fused.fusions] == ["nbx::gelu_tanh"]
    assert [n.op for n in fused.graph.nodes] == ["nbx::gelu_tanh"]
    assert len(plain.graph.nodes) == 8
    assert GELU_TANH in get_registry().patterns()
    if numeric():
        x = torch.randn(3, 16) * 3
        want = NewGELU()(x.double()).numpy()
        np.testing.assert_allclose(fused(x).numpy(), want, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(plain(x).numpy(), want, rtol=1e-5, atol=1e-6)


def test_a_chain_whose_intermediate_is_read_elsewhere_is_left_alone(tmp_path):
    class Leaky(torch.nn.Module):
        def forward(self, x):
            inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))
            return 0.5 * x * (1.0 + torch.tanh(inner)), inner

    path = export_module(Leaky(), (torch.randn(4),), tmp_path / "l.nbx")
    prog = load(path)
    assert prog.fusions == []
    if numeric():
        x = from_torch(torch.randn(4)).numpy()
        a, b = prog(x)
        want_a, want_b = Leaky()(torch.from_numpy(x))
        np.testing.assert_allclose(a.numpy(), want_a.numpy(), rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(b.numpy(), want_b.numpy(), rtol=1e-6, atol=1e-6)


def _rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """transformers' apply_rotary_pos_emb for one tensor."""
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return x * cos + torch.cat((-x2, x1), dim=-1) * sin


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
@pytest.mark.parametrize("trig", [(2, 1, 5, 8), (1, 1, 5, 8), (5, 8), (2, 3, 5, 1)])
def test_rotary_matches_the_ops_it_replaces(dtype, trig):
    x = make((2, 3, 5, 8), dtype, seed=1).transpose(1, 2).contiguous().transpose(1, 2)  # heads as a view
    cos, sin = make(trig, dtype, seed=2), make(trig, dtype, seed=3)
    got = run_op("nbx::rotary", x, cos, sin, 3, 4)
    if numeric():
        want = _rotary(x.double(), cos.double(), sin.double())
        # One rounding where the chain rounds four times: within the chain's own error of the exact value.
        chain = _rotary(x, cos, sin).double()
        assert (to_torch(got).double() - want).abs().max() <= (chain - want).abs().max() + 1e-6


def test_rotary_runs_the_written_ops_for_uneven_halves_mixed_dtypes_and_numbers():
    x, cos = make((2, 8, 8), "float32"), make((2, 8, 8), "float32", seed=1)
    cases = [
        (x, cos, make((8,), "float64", seed=2), 4),
        (x, cos, make((8,), "float32", seed=2), 3),
        (x, 0.5, make((8,), "float32", seed=2), 4),  # mul.Tensor takes a Python number too
        (make((2, 8), "int64", low=-5, high=5), cos[0, :2], 2.0, 4),
    ]
    for t, c, s, half in cases:
        got = run_op("nbx::rotary", t, c, s, t.ndim - 1, half)
        if numeric():
            rotated = torch.cat((-t[..., half:], t[..., :half]), -1)
            assert_close(got, t * c + rotated * s)


class _Rope(torch.nn.Module):
    """Llama's attention inputs with rotary embedding, as transformers computes them."""

    def forward(self, q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor):
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        return _rotary(q, cos, sin), _rotary(k, cos, sin)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_the_pattern_replaces_transformers_rotary_embedding(dtype, tmp_path):
    q, k = torch.randn(2, 4, 6, 16, dtype=dtype), torch.randn(2, 2, 6, 16, dtype=dtype)
    cos, sin = torch.randn(2, 6, 16, dtype=dtype), torch.randn(2, 6, 16, dtype=dtype)
    path = export_module(_Rope(), (q, k, cos, sin), tmp_path / "rope.nbx")
    fused, plain = load(path), load(path, fusion=False)
    assert [f.pattern.name for f in fused.fusions] == ["nbx::rotary", "nbx::rotary"]
    assert ROTARY in get_registry().patterns()
    if numeric():
        want = [t.double() for t in _Rope()(q.double(), k.double(), cos.double(), sin.double())]
        chain = plain(q, k, cos, sin)
        for got, ref, written in zip(fused(q, k, cos, sin), want, chain, strict=True):
            got, written = to_torch(got).double(), to_torch(written).double()
            assert (got - ref).abs().max() <= (written - ref).abs().max() + 1e-6
