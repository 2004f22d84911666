"""nbx::gelu_tanh and the pattern that turns GPT-2's spelt-out tanh GELU into it."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from nbx_elementwise.patterns import GELU_TANH

from nbx_core.graph import load
from nbx_core.graph.export import export_module
from nbx_core.registry import get_registry
from nbx_core.testing import assert_close, from_torch, make, numeric, run_op


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
