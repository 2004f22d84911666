"""Fixtures for the spectral tests: a check whose tolerance scales with the transform length."""

from __future__ import annotations

import math

import nbx_spectral.plan as plan
import pytest
import torch

from nbx_core.testing import check_op


@pytest.fixture
def small_plans(monkeypatch):
    """Shrink the direct-matmul limit so four-step and Bluestein plans run at interpreter-friendly sizes."""
    monkeypatch.setattr(plan, "DIRECT_MAX", 16)


def _fft_check(name: str, *args, n: int, torch_fn=None, **kwargs):
    """check_op with rtol/atol of 1e-5 * log2(n) relative to the RMS of torch's output."""
    ref = (torch_fn or getattr(torch.ops.aten, name.removeprefix("aten::").split(".")[0]))(*args, **kwargs)
    rms = ref.abs().double().pow(2).mean().sqrt().item() if ref.numel() else 1.0
    tol = 1e-5 * max(math.log2(max(n, 2)), 1.0)
    return check_op(name, *args, torch_fn=torch_fn, rtol=tol, atol=tol * max(rms, 1e-3), **kwargs)


@pytest.fixture
def fft_check():
    """check_op with rtol/atol of 1e-5 * log2(n) relative to the RMS of torch's output."""
    return _fft_check
