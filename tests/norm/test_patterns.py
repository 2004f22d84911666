"""nbx::rms_norm_cast and the pattern that turns transformers' RMSNorm into it."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from nbx_norm.patterns import RMS_NORM

from nbx_core.graph import load
from nbx_core.graph.export import export_module
from nbx_core.registry import get_registry
from nbx_core.testing import assert_close, make, numeric, run_op


class LlamaRMSNorm(torch.nn.Module):
    """transformers' LlamaRMSNorm, as Llama, Qwen2 and Mistral write it."""

    def __init__(self, n: int, dtype: torch.dtype = torch.float32) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(n, dtype=dtype))
        self.eps = 1e-6

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        dtype = h.dtype
        h = h.to(torch.float32)
        variance = h.pow(2).mean(-1, keepdim=True)
        h = h * torch.rsqrt(variance + self.eps)
        return self.weight * h.to(dtype)


def _reference(x: torch.Tensor, weight: torch.Tensor, eps: float, dtype: torch.dtype) -> torch.Tensor:
    wide = x.double()
    normed = wide * torch.rsqrt(wide.pow(2).mean(-1, keepdim=True) + eps)
    return weight.double() * normed


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_rms_norm_cast_matches_the_formula(dtype):
    x, w = make((6, 40), dtype), make((40,), dtype)
    got = run_op("nbx::rms_norm_cast", x, w, 1e-6, getattr(torch, dtype))
    if numeric():
        want = _reference(x, w, 1e-6, x.dtype).to(x.dtype)
        assert_close(got, want)


def test_rms_norm_cast_with_a_float32_weight_runs_op_by_op():
    x, w = make((3, 8), "bfloat16"), make((8,), "float32")
    got = run_op("nbx::rms_norm_cast", x, w, 1e-5, torch.bfloat16)
    if numeric():
        want = LlamaRMSNorm(8)
        with torch.no_grad():
            want.weight.copy_(w)
            expected = want(x)
        assert got.dtype.name == "float32"
        assert_close(got, expected)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_the_pattern_replaces_transformers_rms_norm(tmp_path, dtype):
    module = LlamaRMSNorm(32, dtype).eval()
    x = torch.randn(2, 5, 32, dtype=dtype)
    path = export_module(module, (x,), tmp_path / "r.nbx")
    fused = load(path)
    assert [f.pattern.name for f in fused.fusions] == ["nbx::rms_norm_cast"]
    assert RMS_NORM in get_registry().patterns()
    if numeric():
        with torch.no_grad():
            want = module(x)
        got = fused(x)
        tol = 1e-5 if dtype is torch.float32 else 2e-2
        np.testing.assert_allclose(got.numpy().astype(np.float64), want.double().numpy(), rtol=tol, atol=tol)
