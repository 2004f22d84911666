"""Accuracy against float64 numpy.fft at the lengths speech and signal code use, primes included.

Bound (stated in nbx_spectral.fft): max-abs error / RMS of the exact output < 5e-7 * log2(n) + 2e-6.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from nbx_core.testing import numeric, run_op


def _rel_err(got, exact: np.ndarray) -> float:
    return float(np.abs(got.numpy().astype(exact.dtype) - exact).max() / np.sqrt(np.mean(np.abs(exact) ** 2)))


@pytest.mark.parametrize("n", [16, 400, 480, 1009, 4096, 8192, 65536, 1 << 19])
def test_accuracy_vs_float64(n):
    rng = np.random.default_rng(n)
    x = rng.standard_normal((2, n))
    z = x + 1j * rng.standard_normal((2, n))
    bound = 5e-7 * math.log2(n) + 2e-6
    got_r = run_op("aten::fft_rfft", torch.from_numpy(x.astype(np.float32)))
    got_c = run_op("aten::fft_fft", torch.from_numpy(z.astype(np.complex64)))
    got_i = run_op("aten::fft_irfft", torch.from_numpy(np.fft.rfft(x).astype(np.complex64)), n)
    if not numeric():
        return
    # The exact reference is the transform of the float32-rounded input.
    x32, z32 = x.astype(np.float32).astype(np.float64), z.astype(np.complex64).astype(np.complex128)
    assert _rel_err(got_r, np.fft.rfft(x32)) < bound
    assert _rel_err(got_c, np.fft.fft(z32)) < bound
    h32 = np.fft.rfft(x).astype(np.complex64).astype(np.complex128)
    assert _rel_err(got_i, np.fft.irfft(h32, n)) < bound
