"""Power-of-two FFTs whose rows fit in one program: two matmul stages and a twiddle, in one launch.

A row of ``n = N1 * N2`` samples is read as the (N2 x N1) matrix ``A[j2, j1] = x[j1 * N2 + j2]``.
Then ``T = A @ F1`` (length-N1 DFTs), ``T[j2, k1] *= w_n^(j2 * k1)`` and ``Z^T = T^T @ F2``
(length-N2 DFTs) give ``X[k1 + N1 * k2] = Z^T[k1, k2]``: the four-step algorithm with every
intermediate kept in the program, so a row costs one read and one write of memory. Programs
stride over the rows, so a DFT table (and its tf32 split) is read once per program, not per row.

Longer rows first take a column pass (``_column_kernel``): DFTs of length C down the columns of
the (C x R) view, twiddled by ``w_n^(j * k1)`` and stored as C rows of length R, which the
one-program kernel then finishes, writing bin ``k1 + C * k2``.

Precision: the matmuls run on tf32 tensor cores in three passes (tf32.py), which keeps
float32-level accuracy; complex products use Gauss's three real products (four measured slower,
benchmarks/probe_fft.py). Tables (DFT matrices, twiddles) come from plan.py, computed in float64
and rounded once.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import triton
import triton.language as tl

from nbx_core.device import Device
from nbx_core.ops import views
from nbx_core.runtime.kernels.indexing import needs_int64
from nbx_core.runtime.launch import cdiv, launch, multiprocessors
from nbx_core.runtime.tuning import Key, Tunable, bucket
from nbx_core.tensor import NBXTensor

from . import plan
from .tf32 import dot3, split


@triton.jit
def _load_dft(f_ptr, N: tl.constexpr):
    # The (N x N) DFT matrix, stored as (2, N, N): real parts, then imaginary parts.
    offs = tl.arange(0, N)[:, None] * N + tl.arange(0, N)[None, :]
    return tl.load(f_ptr + offs), tl.load(f_ptr + N * N + offs)


@triton.jit
def _cmatmul(xr, xi, fr, fi, M: tl.constexpr, N: tl.constexpr, X_REAL: tl.constexpr):
    # (xr + i xi) @ (fr + i fi) by Gauss: k1 = (xr + xi) @ fr, k2 = xr @ (fi - fr), k3 = xi @ (fr + fi);
    # real k1 - k3, imaginary k1 + k2. A real x needs two products.
    zero = tl.zeros((M, N), dtype=tl.float32)
    xr_hi, xr_lo = split(xr)
    fr_hi, fr_lo = split(fr)
    if X_REAL:
        fi_hi, fi_lo = split(fi)
        return dot3(xr_hi, xr_lo, fr_hi, fr_lo, zero), dot3(xr_hi, xr_lo, fi_hi, fi_lo, zero)
    s_hi, s_lo = split(xr + xi)
    xi_hi, xi_lo = split(xi)
    d_hi, d_lo = split(fi - fr)
    p_hi, p_lo = split(fr + fi)
    k1 = dot3(s_hi, s_lo, fr_hi, fr_lo, zero)
    k2 = dot3(xr_hi, xr_lo, d_hi, d_lo, zero)
    k3 = dot3(xi_hi, xi_lo, p_hi, p_lo, zero)
    return k1 - k3, k1 + k2


@triton.jit
def _load_rows(x_ptr, offs, mask, COMPLEX: tl.constexpr):
    # Real samples, or complex ones as (re, im) float32 pairs at offs and offs + 1.
    if COMPLEX:
        pair = tl.arange(0, 2)[None, None, :]
        v = tl.load(x_ptr + offs[:, :, None] + pair, mask=mask[:, :, None], other=0.0)
        return tl.split(v)
    v = tl.load(x_ptr + offs, mask=mask, other=0.0)
    return v, v


@triton.jit
def _twiddle(tr, ti, tw_ptr, idx):
    # (tr + i ti) * exp(sign * 2 pi i * idx / n), from the (n, 2) table.
    wr = tl.load(tw_ptr + 2 * idx)
    wi = tl.load(tw_ptr + 2 * idx + 1)
    return tr * wr - ti * wi, tr * wi + ti * wr


@triton.jit
def _row_fft_kernel(x_ptr, f1_ptr, f2_ptr, tw_ptr, y_ptr, rows, sx_row, sx_el, C, sy_row, sy_el, n_lim, scale,
                    N1: tl.constexpr, N2: tl.constexpr, COMPLEX_IN: tl.constexpr, UNIT_X: tl.constexpr,
                    UNIT_Y: tl.constexpr, INT64: tl.constexpr):
    # Row m: samples at m * sx_row + j * sx_el; bin k at (m // C) * sy_row + ((m % C) + C * k) * sy_el,
    # stored while (m % C) + C * k < n_lim. Programs stride over the rows. UNIT_X / UNIT_Y: the
    # element stride is one sample (known at compile time, so accesses vectorize).
    if UNIT_X:
        sx_el = 2 if COMPLEX_IN else 1
    elif INT64:
        sx_el = sx_el.to(tl.int64)
    if UNIT_Y:
        sy_el = 2
    elif INT64:
        sy_el = sy_el.to(tl.int64)
    j2 = tl.arange(0, N2)
    j1 = tl.arange(0, N1)
    # A square split (N1 == N2) has one table, read once per program; the two tables of a non-square
    # split would not fit beside the row, so those load per row (L1/L2 hits).
    if N1 == N2:
        g_r, g_i = _load_dft(f1_ptr, N1)
    x_idx = (j1[None, :] * N2 + j2[:, None]) * sx_el
    tw_idx = j2[:, None] * j1[None, :]
    bin_idx = j1[:, None] + N1 * j2[None, :]
    every = tw_idx >= 0
    first = tl.program_id(0)
    if INT64:
        first = first.to(tl.int64)
    for m in range(first, rows, tl.num_programs(0)):
        # T = A @ F1 with A[j2, j1] = x[j1 * N2 + j2], twiddled; then Z^T = T^T @ F2, so both products
        # take the row as their register operand and a table as the shared-memory one.
        ar, ai = _load_rows(x_ptr + m * sx_row, x_idx, every, COMPLEX_IN)
        if N1 == N2:
            f1r, f1i = g_r, g_i
        else:
            f1r, f1i = _load_dft(f1_ptr, N1)
        tr, ti = _cmatmul(ar, ai, f1r, f1i, N2, N1, not COMPLEX_IN)
        tr, ti = _twiddle(tr, ti, tw_ptr, tw_idx)
        if N1 == N2:
            f2r, f2i = g_r, g_i
        else:
            f2r, f2i = _load_dft(f2_ptr, N2)
        zr, zi = _cmatmul(tl.trans(tr), tl.trans(ti), f2r, f2i, N1, N2, False)
        bins = m % C + C * bin_idx
        y_off = (m // C) * sy_row + bins * sy_el
        out = tl.join(zr * scale, zi * scale)
        tl.store(y_ptr + y_off[:, :, None] + tl.arange(0, 2)[None, None, :], out, mask=(bins < n_lim)[:, :, None])


@triton.jit
def _column_kernel(x_ptr, f_ptr, tw_ptr, y_ptr, R, sx_row, sx_el,
                   C: tl.constexpr, BJ: tl.constexpr, COMPLEX_IN: tl.constexpr, UNIT_X: tl.constexpr,
                   INT64: tl.constexpr):
    # Row b, columns j0..j0+BJ of its (C x R) view: A[j, j1] = x[b, j1 * R + j]; T = A @ F_C, twiddled by
    # w_n^(j * k1), stored complex to y[b, k1, j] (y contiguous, (B, C, R)).
    if UNIT_X:
        sx_el = 2 if COMPLEX_IN else 1
    elif INT64:
        sx_el = sx_el.to(tl.int64)
    b = tl.program_id(1)
    if INT64:
        b = b.to(tl.int64)
    j = tl.program_id(0) * BJ + tl.arange(0, BJ)
    k = tl.arange(0, C)
    ok = (j < R)[:, None] & (k >= 0)[None, :]
    ar, ai = _load_rows(x_ptr + b * sx_row, (k[None, :] * R + j[:, None]) * sx_el, ok, COMPLEX_IN)
    fr, fi = _load_dft(f_ptr, C)
    tr, ti = _cmatmul(ar, ai, fr, fi, BJ, C, not COMPLEX_IN)
    tr, ti = _twiddle(tr, ti, tw_ptr, j[:, None] * k[None, :])
    y_off = 2 * (b * C * R + k[None, :] * R + j[:, None])
    tl.store(y_ptr + y_off[:, :, None] + tl.arange(0, 2)[None, None, :], tl.join(tr, ti), mask=ok[:, :, None])


ROW_FFT = Tunable(
    "spectral", "row_fft", {"num_warps": "pow2", "PROGRAMS_PER_SM": "count", "PROGRAMS": "count0"},
    key=lambda n, complex_in: Key({"input": "complex" if complex_in else "real", "N": bucket(n)}),
    rule=lambda n, complex_in: {"num_warps": 4, "PROGRAMS_PER_SM": 4},
    # Each program costs the interpreter Python time: four at most.
    interpreter=lambda n, complex_in: {"num_warps": 1, "PROGRAMS_PER_SM": 4, "PROGRAMS": 4},
    tables=Path(__file__).with_name("configs"), optional=("PROGRAMS",))
"""The row kernel's launch: num_warps (one warpgroup; 8 warps ran slower on the H200, probe_fft.py),
PROGRAMS_PER_SM, row programs per SM, SMs counted by ``nbx_core.runtime.launch.multiprocessors``
(each program loops over rows), and PROGRAMS, a cap on the programs in all (0 or absent: none but
the rows). Arguments: the row length and whether the input is complex."""

COLUMN_PASS = Tunable(
    "spectral", "column_pass", {"BLOCK_J": "pow2"},
    key=lambda n, c: Key({"N": bucket(n)}),
    # Column DFTs of up to 64 points take 128 columns a program; 128-point ones take 32 (at 64 or
    # more their tables' tf32 splits need 256 KB of shared memory or more, over an SM's 227 KB).
    rule=lambda n, c: {"BLOCK_J": 128 if c <= 64 else 32},
    interpreter=lambda n, c: {"BLOCK_J": min(n // c, 256)}, tables=Path(__file__).with_name("configs"))
"""Columns a column-pass program transforms. Arguments: the transform length and the column DFTs'
length."""


def _programs(rows: int, device: Device, cfg: Mapping[str, int]) -> int:
    programs = min(rows, multiprocessors(device.index or 0) * cfg["PROGRAMS_PER_SM"])
    return min(programs, cfg["PROGRAMS"]) if cfg.get("PROGRAMS") else programs


def row_fft(x: NBXTensor, y: NBXTensor, *, n: int, n_lim: int, sign: int, scale: float,
            columns: int = 1, config: Mapping[str, int] | None = None) -> None:
    """FFT of each row of ``x`` (2-D, real or complex) into complex 2-D ``y``, bins below ``n_lim`` only.

    ``columns`` > 1: row m of x is column bin m % columns of output row m // columns, its bin k going
    to ``(m % columns) + columns * k`` (what finishing a column pass needs). ``config`` replaces
    :data:`ROW_FFT`'s lookup.
    """
    n1, n2 = plan.row_factors(n)
    xf = views.view_as_real(x) if x.dtype.is_complex else x
    cplx = 2 if x.dtype.is_complex else 1
    yf = views.view_as_real(y)
    sy_row, sy_el = y.stride()
    f1 = plan.dense_dft(n1, sign, x.device)
    f2 = plan.dense_dft(n2, sign, x.device)
    tw = plan.twiddles(n, sign, x.device)
    rows = x.shape[0]
    cfg = ROW_FFT.choose(config, n, x.dtype.is_complex)
    programs = _programs(rows, x.device, cfg)
    launch(_row_fft_kernel, (programs,), xf, f1, f2, tw, yf, rows, x.stride(0) * cplx,
           x.stride(1) * cplx, columns, 2 * sy_row, 2 * sy_el, n_lim, float(scale),
           N1=n1, N2=n2, COMPLEX_IN=x.dtype.is_complex, UNIT_X=x.stride(1) == 1, UNIT_Y=sy_el == 1,
           INT64=needs_int64(max(x.numel() * cplx, y.numel() * 2), xf, yf),
           num_warps=cfg["num_warps"], num_stages=1)


def column_pass(x: NBXTensor, tmp: NBXTensor, *, n: int, c: int, sign: int,
                config: Mapping[str, int] | None = None) -> None:
    """tmp[b, k1, j] = w_n^(j * k1) * sum_j1 x[b, j1 * R + j] w_c^(j1 * k1), R = n / c (tmp complex,
    contiguous). ``config`` replaces :data:`COLUMN_PASS`'s lookup."""
    r = n // c
    xf = views.view_as_real(x) if x.dtype.is_complex else x
    cplx = 2 if x.dtype.is_complex else 1
    bj = COLUMN_PASS.choose(config, n, c)["BLOCK_J"]
    launch(_column_kernel, (cdiv(r, bj), x.shape[0]), xf, plan.dense_dft(c, sign, x.device),
           plan.twiddles(n, sign, x.device), views.view_as_real(tmp), r, x.stride(0) * cplx, x.stride(1) * cplx,
           C=c, BJ=bj, COMPLEX_IN=x.dtype.is_complex, UNIT_X=x.stride(1) == 1,
           INT64=needs_int64(max(x.numel() * cplx, tmp.numel() * 2), xf, tmp),
           num_warps=4)

