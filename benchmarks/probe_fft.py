"""Probe: where the time of the one-program row FFT (nbx_spectral.row_fft) goes, on 4096 x 4096 complex64.

Standalone variants of its kernel, each dropping or changing one part: the matmuls, the twiddle, the
second stage, where the DFT table loads (at each use or once before the row loop), Gauss's three
products or four, a gathered or dense twiddle table, and rows read transposed or in their own order
(then transposed in the program). Timings only: the variants that drop a part compute wrong results
on purpose; the others compute the FFT.

    python -m benchmarks.probe_fft --out DIR
"""

from __future__ import annotations

import sys

import numpy as np
import torch
import triton
import triton.language as tl
from nbx_spectral.row_fft import _cmatmul, _load_dft
from nbx_spectral.tf32 import dot3, split

from benchmarks.harness import probe_main


@triton.jit
def _mm(xr, xi, fr, fi, M: tl.constexpr, N: tl.constexpr, MULT: tl.constexpr):
    if MULT == 3:
        return _cmatmul(xr, xi, fr, fi, M, N, False)
    zero = tl.zeros((M, N), dtype=tl.float32)
    xr_hi, xr_lo = split(xr)
    xi_hi, xi_lo = split(-xi)
    fr_hi, fr_lo = split(fr)
    fi_hi, fi_lo = split(fi)
    re = dot3(xi_hi, xi_lo, fi_hi, fi_lo, zero) + dot3(xr_hi, xr_lo, fr_hi, fr_lo, zero)
    im = dot3(xr_hi, xr_lo, fi_hi, fi_lo, zero) - dot3(xi_hi, xi_lo, fr_hi, fr_lo, zero)
    return re, im


@triton.jit
def _tables(f_ptr, fr0, fi0, N: tl.constexpr, HOIST: tl.constexpr):
    # The DFT table read before the loop (HOIST) or again at each use.
    if HOIST:
        return fr0, fi0
    return _load_dft(f_ptr, N)


@triton.jit
def _probe_kernel(x_ptr, f_ptr, tw_ptr, tw2_ptr, y_ptr, rows, N1: tl.constexpr, N2: tl.constexpr,
                  DOTS: tl.constexpr, TWIDDLE: tl.constexpr, STAGE2: tl.constexpr, HOIST: tl.constexpr,
                  MULT: tl.constexpr, TW2D: tl.constexpr, ROW_ORDER: tl.constexpr):
    j2 = tl.arange(0, N2)
    j1 = tl.arange(0, N1)
    x_idx = 2 * (j1[None, :] * N2 + j2[:, None])
    row_idx = 2 * (j1[:, None] * N2 + j2[None, :])
    tw_idx = j2[:, None] * j1[None, :]
    bin_idx = 2 * (j1[:, None] + N1 * j2[None, :])
    fr0, fi0 = _load_dft(f_ptr, N1)
    for i in range(tl.program_id(0).to(tl.int64), rows, tl.num_programs(0)):
        base = i * (2 * N1 * N2)
        if ROW_ORDER:
            # The row in its own (N1 x N2) order, complex pairs last (16-byte loads), transposed here.
            pairs = tl.load(x_ptr + base + row_idx[:, :, None] + tl.arange(0, 2)[None, None, :])
            ar, ai = tl.split(pairs)
            ar, ai = tl.trans(ar), tl.trans(ai)
        else:
            ar = tl.load(x_ptr + base + x_idx)
            ai = tl.load(x_ptr + base + x_idx + 1)
        fr, fi = _tables(f_ptr, fr0, fi0, N1, HOIST)
        if DOTS:
            tr, ti = _mm(ar, ai, fr, fi, N2, N1, MULT)
        else:
            tr, ti = ar * fr, ai * fi
        if TWIDDLE:
            if TW2D:
                wr = tl.load(tw2_ptr + 2 * (j2[:, None] * N1 + j1[None, :]))
                wi = tl.load(tw2_ptr + 2 * (j2[:, None] * N1 + j1[None, :]) + 1)
            else:
                wr = tl.load(tw_ptr + 2 * tw_idx)
                wi = tl.load(tw_ptr + 2 * tw_idx + 1)
            tr, ti = tr * wr - ti * wi, tr * wi + ti * wr
        tr, ti = tl.trans(tr), tl.trans(ti)
        if STAGE2:
            fr, fi = _tables(f_ptr, fr0, fi0, N1, HOIST)
            if DOTS:
                tr, ti = _mm(tr, ti, fr, fi, N1, N2, MULT)
            else:
                tr, ti = tr * fr, ti * fi
        tl.store(y_ptr + base + bin_idx, tr)
        tl.store(y_ptr + base + bin_idx + 1, ti)


def run(h) -> None:
    n1 = n2 = 64
    rows = 4096
    z = torch.complex(h.randn((rows, n1 * n2), "float32"), h.randn((rows, n1 * n2), "float32"))
    zf = torch.view_as_real(z)
    out = torch.empty_like(zf)
    ang = 2 * np.pi * ((np.arange(n1)[:, None] * np.arange(n1)[None, :]) % n1) / n1
    f = torch.tensor(np.stack([np.cos(ang), -np.sin(ang)]), dtype=torch.float32, device=z.device)
    t = 2 * np.pi * np.arange(n1 * n2) / (n1 * n2)
    tw = torch.tensor(np.stack([np.cos(t), -np.sin(t)], 1), dtype=torch.float32, device=z.device)
    t2 = 2 * np.pi * (np.arange(n2)[:, None] * np.arange(n1)[None, :]) / (n1 * n2)
    tw2 = torch.tensor(np.stack([np.cos(t2), -np.sin(t2)], -1), dtype=torch.float32, device=z.device)
    base = dict(DOTS=1, TWIDDLE=1, STAGE2=1, HOIST=0, MULT=3, TW2D=0, ROW_ORDER=0)
    variants = [("full", {}), ("no dots", dict(DOTS=0)), ("no twiddle", dict(TWIDDLE=0)),
                ("stage 1 only", dict(STAGE2=0)), ("dense twiddle", dict(TW2D=1)), ("four products", dict(MULT=4)),
                ("tables hoisted", dict(HOIST=1)), ("hoisted + dense twiddle", dict(HOIST=1, TW2D=1)),
                ("no dots, stage 1 only", dict(DOTS=0, STAGE2=0)),
                ("four products, tables hoisted", dict(MULT=4, HOIST=1)),
                ("tables hoisted, rows in row order", dict(HOIST=1, ROW_ORDER=1)),
                ("four products, hoisted, row order", dict(MULT=4, HOIST=1, ROW_ORDER=1))]
    for name, change in variants:
        for warps, per_sm in [(4, 2), (4, 4), (8, 1), (8, 2)]:
            kw = {**base, **change}
            grid = (min(rows, 132 * per_sm),)

            def fn(kw=kw, grid=grid, warps=warps):
                _probe_kernel[grid](zf, f, tw, tw2, out, rows, N1=n1, N2=n2, num_warps=warps, num_stages=1, **kw)

            h.compare(f"row fft 4096x4096 {name} warps={warps} per_sm={per_sm}", nbx=fn,
                      torch=lambda: torch.fft.fft(z), shape=(rows, n1 * n2), dtype="complex64",
                      bytes=2 * z.numel() * 8)


if __name__ == "__main__":
    sys.exit(probe_main(__doc__, "fft", run))
