"""Host-side FFT planning: how a length factorises, and the float64-built tables the kernels read.

A complex transform of length ``n`` runs as one of three plans:

- ``direct`` (n <= DIRECT_MAX): one DFT-as-matmul against an n-point DFT matrix.
- ``stockham`` (n = r1 * r2 * ... with every radix <= min(RADIX_MAX, DIRECT_MAX)): one matmul stage
  per radix (Stockham autosort, decimation in frequency); see ``radices`` for the choice.
- ``bluestein`` (anything else: a prime factor above the radix limit): a chirp-z convolution
  through power-of-two FFTs of length m >= 2n - 1, themselves direct or Stockham.

Real input of even length n > DIRECT_MAX is transformed as n / 2 complex points (fft.py), so the
plan above is that of n / 2.

Every table is computed in float64 with exact integer angle reduction ((j*k) mod n) and rounded
once to float32, so table error is half an ulp whatever n is. DFT matrices also carry a tf32 split
(``hi`` + ``lo``, each exactly representable in tf32) for the kernels' three-pass tensor-core
product. Tables are cached per device and padding.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

import nbx_core
from nbx_core.tensor import NBXTensor

DIRECT_MAX = 512
"""Largest length done as one matmul (400-point STFT frames take this path)."""

RADIX_MAX = 64
"""Largest radix of a Stockham stage: fewer stages (memory passes) against more arithmetic per
point (a radix-r stage costs ~8r flops per complex point, three tensor-core passes each)."""


def radix_limit() -> int:
    """The largest radix a Stockham stage may take now (both knobs can be changed at run time)."""
    return max(2, min(RADIX_MAX, DIRECT_MAX))


@lru_cache(maxsize=512)
def _factorise(n: int, limit: int) -> tuple[int, ...] | None:
    # Fewest stages, then the least padded work (sum of radices rounded up to powers of two, as
    # the kernel's tiles are), then the most even split: a radix-64 stage does 2x the arithmetic
    # per point of a radix-32 one.
    if n <= limit:
        return (n,)
    best: tuple[tuple[int, int, int], tuple[int, ...]] | None = None
    for r in range(min(limit, n // 2), 1, -1):
        if n % r:
            continue
        rest = _factorise(n // r, limit)
        if rest is None:
            continue
        plan = tuple(sorted((r, *rest), reverse=True))
        key = (len(plan), sum(1 << (f - 1).bit_length() for f in plan), plan[0])
        if best is None or key < best[0]:
            best = (key, plan)
    return None if best is None else best[1]


def radices(n: int) -> tuple[int, ...] | None:
    """The Stockham radices (first stage first) for a complex transform of length ``n`` >
    DIRECT_MAX, or None when a prime factor exceeds the radix limit (Bluestein)."""
    plan = _factorise(n, radix_limit())
    return plan if plan is not None and len(plan) > 1 else None


def plan_kind(n: int) -> str:
    """``direct``, ``stockham`` or ``bluestein`` for a complex transform of length ``n``."""
    if n <= DIRECT_MAX:
        return "direct"
    return "stockham" if radices(n) is not None else "bluestein"


def bluestein_length(n: int) -> int:
    """The power-of-two convolution length Bluestein uses for ``n``."""
    return 1 << (2 * n - 2).bit_length()


def _angles(rows: int, cols: int, n: int) -> np.ndarray:
    j = np.arange(rows, dtype=np.int64)[:, None]
    k = np.arange(cols, dtype=np.int64)[None, :]
    return (2.0 * np.pi / n) * ((j * k) % n)


def _round_up(n: int, m: int) -> int:
    return -(-n // m) * m


def tf32_round(a: np.ndarray) -> np.ndarray:
    """float32 ``a`` rounded to tf32 (10 mantissa bits, ties away from zero), as the kernels do."""
    bits = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    return ((bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32)


def _matrix_host(kind: str, n: int, n_out: int, sign: int) -> np.ndarray:
    """The real (K x N) matrix whose product with a row of input gives a row of output. Complex
    input rows are interleaved (re, im) along K; complex output columns interleaved (re, im)."""
    if kind == "c2r":
        # Rows: half-spectrum bins k (re, im interleaved); columns: output samples j. Bins other than
        # DC and Nyquist stand for themselves and their conjugate mirror, hence weight 2.
        ang = _angles(n_out, n, n)
        w = np.where((np.arange(n_out) == 0) | (2 * np.arange(n_out) == n), 1.0, 2.0)[:, None]
        m = np.empty((2 * n_out, n))
        m[0::2], m[1::2] = w * np.cos(ang), -w * np.sin(ang)
        return m
    ang = _angles(n, n_out, n)
    c, q = np.cos(ang), sign * np.sin(ang)
    if kind == "r2c":
        m = np.empty((n, 2 * n_out))
        m[:, 0::2], m[:, 1::2] = c, q
        return m
    # (a + ib)(c + iq) = (ac - bq) + i(aq + bc).
    m = np.empty((2 * n, 2 * n_out))
    m[0::2, 0::2], m[1::2, 0::2], m[0::2, 1::2], m[1::2, 1::2] = c, -q, q, c
    return m


def _device_table(arr: np.ndarray, device: Any) -> NBXTensor:
    return nbx_core.tensor(np.ascontiguousarray(arr, dtype=np.float32), device=device)


@lru_cache(maxsize=256)
def dft_matrix(kind: str, n: int, n_out: int, sign: int, pad_k: int, pad_n: int, device: Any) -> NBXTensor:
    """The ``kind`` ("c2c", "r2c", "c2r") DFT matrix as float32 (3, Kp, Np): the matrix, its tf32
    high part and its tf32 low part (matrix - high, rounded to tf32); zero-padded to multiples of
    ``pad_k`` rows and ``pad_n`` columns."""
    m = _matrix_host(kind, n, n_out, sign)
    k, cols = m.shape
    out = np.zeros((3, _round_up(k, pad_k), _round_up(cols, pad_n)), dtype=np.float32)
    f32 = m.astype(np.float32)
    hi = tf32_round(f32)
    out[0, :k, :cols] = f32
    out[1, :k, :cols] = hi
    out[2, :k, :cols] = tf32_round((m - hi).astype(np.float32))
    return _device_table(out, device)


@lru_cache(maxsize=128)
def stage_twiddles(p: int, rows: int, cols: int, pad: int, sign: int, device: Any) -> NBXTensor:
    """exp(sign * 2*pi*i * j*k / p) for j < rows, k < cols as (rows, Cp, 2) float32 pairs, the
    columns zero-padded to a multiple of ``pad``: the twiddles of a Stockham stage."""
    ang = _angles(rows, cols, p)
    out = np.zeros((rows, _round_up(cols, pad), 2))
    out[:, :cols, 0], out[:, :cols, 1] = np.cos(ang), sign * np.sin(ang)
    return _device_table(out, device)


@lru_cache(maxsize=64)
def half_twiddles(n: int, sign: int, device: Any) -> NBXTensor:
    """exp(sign * 2*pi*i * k / n) for k <= n // 2, as (n // 2 + 1, 2) float32 pairs: the twiddles
    that turn an n / 2-point complex transform of a real signal's (even, odd) pairs into its spectrum."""
    ang = (2.0 * np.pi / n) * np.arange(n // 2 + 1)
    return _device_table(np.stack([np.cos(ang), sign * np.sin(ang)], axis=1), device)


def _chirp(n: int, sign: int) -> np.ndarray:
    """exp(sign * pi*i * j^2 / n) for j in [0, n), with j^2 reduced mod 2n exactly."""
    j = np.arange(n, dtype=np.int64)
    ang = (np.pi / n) * ((j * j) % (2 * n))
    return np.exp(sign * 1j * ang)


@lru_cache(maxsize=32)
def bluestein_tables(n: int, sign: int, device: Any) -> tuple[int, NBXTensor, NBXTensor]:
    """(m, chirp, kernel spectrum) for Bluestein of length ``n``: X = chirp * ifft(fft(x * chirp) * K)."""
    m = bluestein_length(n)
    chirp = _chirp(n, sign)
    b = np.zeros(m, dtype=np.complex128)
    b[:n] = np.conj(chirp)
    b[m - n + 1:] = np.conj(chirp[1:])[::-1]
    spec = np.fft.fft(b)

    def pairs(z: np.ndarray) -> NBXTensor:
        return _device_table(np.stack([z.real, z.imag], axis=1), device)

    return m, pairs(chirp), pairs(spec)


def clear_caches() -> None:
    """Drop every cached plan and table (after changing a knob or to free device memory)."""
    for f in (_factorise, dft_matrix, stage_twiddles, half_twiddles, bluestein_tables):
        f.cache_clear()

