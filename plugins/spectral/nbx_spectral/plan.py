"""Host-side FFT planning: how a length factorises, and the float64-built tables the kernels read.

A transform of length ``n`` runs as one of five plans:

- ``row`` (a power of two in [256, MAX_ROW]): one program per row, two matmul stages (row_fft.py).
- ``columns`` (a power of two up to MAX_ROW * MAX_COLUMNS): a pass of short DFTs down the columns,
  then ``row`` transforms of the rows it leaves.
- ``direct`` (n <= DIRECT_MAX): one DFT-as-matmul against an (n x n_out) cos/sin matrix.
- ``four-step`` (n = n1 * n2, both <= DIRECT_MAX): DFTs of length n1 down the columns of the
  (n1 x n2) view, a twiddle multiply, DFTs of length n2 along the rows, stored transposed.
- ``bluestein`` (anything else: large prime factors): a chirp-z convolution through power-of-two
  FFTs of length m >= 2n - 1, themselves direct or four-step.

Every table is computed in float64 with exact integer angle reduction ((j*k) mod n) and rounded
once to float32, so table error is half an ulp whatever n is. Tables are cached per device.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import numpy as np

import nbx_core
from nbx_core.errors import NbxValueError
from nbx_core.tensor import NBXTensor

DIRECT_MAX = 512
"""Largest length done as one matmul (400-point STFT frames take this path)."""

PAD = 128
"""Matrix rows and columns are padded to a multiple of this (every kernel tile size divides it)."""


MAX_ROW = 4096
"""Longest row one program transforms (64 x 64 matmuls; a 64 x 128 split needs more shared memory
than an H200 has under Triton 3.6)."""

MIN_FACTOR = 16
"""Smallest matmul dimension tl.dot takes, hence the smallest factor of a row or column plan."""

MAX_COLUMNS = 128
"""Most columns a column pass transforms at once."""


def row_factors(n: int) -> tuple[int, int] | None:
    """(N1, N2), N1 * N2 == n and N1 <= N2, when ``n`` is a power of two in [MIN_FACTOR**2, MAX_ROW]."""
    if n & (n - 1) or not MIN_FACTOR * MIN_FACTOR <= n <= MAX_ROW:
        return None
    n1 = 1 << (n.bit_length() - 1) // 2
    return n1, n // n1


def column_split(n: int) -> tuple[int, int] | None:
    """(C, R) for a power of two ``n`` above MAX_ROW: C-point column DFTs, then rows of R = n / C
    done by the row plan (R <= MAX_ROW, C <= MAX_COLUMNS)."""
    if n & (n - 1) or not MAX_ROW < n <= MAX_ROW * MAX_COLUMNS:
        return None
    c = max(MIN_FACTOR, n // MAX_ROW)
    return c, n // c


def _round_up(n: int, m: int = PAD) -> int:
    return -(-n // m) * m


def split(n: int) -> tuple[int, int] | None:
    """Factors (n1, n2) of ``n`` with both <= DIRECT_MAX and n1 as close to sqrt(n) as possible."""
    for n1 in range(math.isqrt(n), 1, -1):
        if n % n1 == 0:
            n2 = n // n1
            return (n1, n2) if n2 <= DIRECT_MAX else None
    return None


def plan_kind(n: int) -> str:
    """``row``, ``columns``, ``direct``, ``four-step`` or ``bluestein`` for a transform of length ``n``."""
    if row_factors(n) is not None:
        return "row"
    if column_split(n) is not None:
        return "columns"
    if n <= DIRECT_MAX:
        return "direct"
    if split(n) is not None:
        return "four-step"
    return "bluestein"


def bluestein_length(n: int) -> int:
    """The power-of-two convolution length Bluestein uses for ``n``."""
    m = max(1 << (2 * n - 2).bit_length(), MIN_FACTOR * MIN_FACTOR)
    if plan_kind(m) not in ("row", "columns"):
        raise NbxValueError(
            f"fft: length {n} needs a {m}-point Bluestein convolution, beyond the largest NBX supports "
            f"({MAX_ROW * MAX_COLUMNS}): use a length with small prime factors or split the transform"
        )
    return m


def _angles(rows: int, cols: int, n: int) -> np.ndarray:
    j = np.arange(rows, dtype=np.int64)[:, None]
    k = np.arange(cols, dtype=np.int64)[None, :]
    return (2.0 * np.pi / n) * ((j * k) % n)


def _padded(*mats: np.ndarray) -> np.ndarray:
    k, n = mats[0].shape
    out = np.zeros((len(mats), _round_up(k), _round_up(n)), dtype=np.float64)
    for i, m in enumerate(mats):
        out[i, :k, :n] = m
    return out


def _matrix_host(kind: str, n: int, n_out: int, sign: int) -> np.ndarray:
    """The real (K x N) matrices ``[W_re, W_im]`` (c2r: ``[W]``) whose product with a row of input
    (complex rows interleaved re, im) gives the transform's real and imaginary parts."""
    if kind == "c2r":
        # Rows: half-spectrum bins k (re, im interleaved); columns: output samples j. Bins other than
        # DC and Nyquist stand for themselves and their conjugate mirror, hence weight 2.
        ang = _angles(n_out, n, n)
        w = np.where((np.arange(n_out) == 0) | (2 * np.arange(n_out) == n), 1.0, 2.0)[:, None]
        m = np.empty((2 * n_out, n))
        m[0::2], m[1::2] = w * np.cos(ang), -w * np.sin(ang)
        return _padded(m)
    ang = _angles(n, n_out, n)
    c, q = np.cos(ang), sign * np.sin(ang)
    if kind == "r2c":
        return _padded(c, q)
    re, im = np.empty((2 * n, n_out)), np.empty((2 * n, n_out))
    re[0::2], re[1::2] = c, -q
    im[0::2], im[1::2] = q, c
    return _padded(re, im)


def _device_table(arr: np.ndarray, device: Any) -> NBXTensor:
    return nbx_core.tensor(np.ascontiguousarray(arr, dtype=np.float32), device=device)


@lru_cache(maxsize=256)
def dft_matrix(kind: str, n: int, n_out: int, sign: int, device: Any) -> NBXTensor:
    """Cached float32 DFT matrices for ``kind`` in ("c2c", "r2c", "c2r"), shape (parts, Kp, Np)."""
    return _device_table(_matrix_host(kind, n, n_out, sign), device)


@lru_cache(maxsize=64)
def dense_dft(n: int, sign: int, device: Any) -> NBXTensor:
    """exp(sign * 2*pi*i * j*k / n) for j, k in [0, n), as (2, n, n) float32: real parts, then imaginary."""
    ang = _angles(n, n, n)
    return _device_table(np.stack([np.cos(ang), sign * np.sin(ang)]), device)


@lru_cache(maxsize=64)
def twiddles(n: int, sign: int, device: Any) -> NBXTensor:
    """exp(sign * 2*pi*i * t / n) for t in [0, n), as (n, 2) float32 pairs."""
    ang = (2.0 * np.pi / n) * np.arange(n)
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
    b[m - n + 1 :] = np.conj(chirp[1:])[::-1]
    spec = np.fft.fft(b)

    def pairs(z: np.ndarray) -> NBXTensor:
        return _device_table(np.stack([z.real, z.imag], axis=1), device)

    return m, pairs(chirp), pairs(spec)
