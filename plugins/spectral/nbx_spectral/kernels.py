"""Triton kernels of the FFT engine (the host side that plans and launches them is fft.py).

``dft_kernel`` does the arithmetic: a tiled matmul of input rows against a DFT matrix, with
two-level row addressing so that one kernel reads the strided columns of a Stockham stage, applies
its twiddles and stores in autosort order. Complex data is interleaved (re, im) float32 pairs; a
complex row is interleaved along the matmul's K (input) or N (output) dimension, so a complex
product is one real matmul. ``r2c_last_kernel`` is the last Stockham stage of a real signal's
half-length transform fused with the unpack to its spectrum. The others are pointwise:
``chirp_kernel`` (Bluestein), ``r2c_unpack_kernel`` / ``c2r_pack_kernel`` (a real transform of
even length n as an n/2-point complex one) and ``hermitian_kernel`` (the full spectrum of an
odd-length real inverse).

Strides are in elements (complex elements for complex data), and an element's floats are at
``element * P + part``: the multiply by a compile-time P lets Triton vectorize the (re, im) pair.
Tiles whose rows are contiguous in memory (strided columns) are loaded and stored as
[columns, rows, 2]: Triton then lays consecutive rows across a warp's threads, which coalesces.
"""

import triton
import triton.language as tl

from nbx_core.launch import BACKEND

_EMULATE_TF32 = tl.constexpr(BACKEND == "cpu")
"""The interpreter multiplies in float32: there, drop the bits tensor cores ignore of a tf32 operand."""


@triton.jit
def _tf32_hi(a):
    # ``a`` rounded to tf32 (10 mantissa bits, ties away from zero), as plan.tf32_round does.
    bits = a.to(tl.int32, bitcast=True)
    return ((bits + 0x1000) & -8192).to(tl.float32, bitcast=True)


@triton.jit
def _tf32_read(a):
    # What a tf32 tensor-core operand keeps of a float32 value (the top 19 bits).
    if _EMULATE_TF32:
        return (a.to(tl.int32, bitcast=True) & -8192).to(tl.float32, bitcast=True)
    else:
        return a


@triton.jit
def _table(w_ptrs, W_PART, PREC: tl.constexpr):
    # The [BK, BN] tile of a plan.dft_matrix table at ``w_ptrs`` as a product reads it: its tf32
    # (hi, lo) parts for "split", else the float32 matrix (twice).
    if PREC == "split":
        return tl.load(w_ptrs + W_PART), tl.load(w_ptrs + 2 * W_PART)
    else:
        w = tl.load(w_ptrs)
        return w, w


@triton.jit
def _dot(a, w_hi, w_lo, acc, PREC: tl.constexpr):
    # acc + a @ w in float32 accuracy for w = _table(...).
    if PREC == "split":
        # Three tf32 passes with the table's split precomputed: a*w ~ hi*w_lo + lo*w_hi + hi*w_hi.
        hi = _tf32_hi(a)
        lo = _tf32_read(a - hi)
        acc = tl.dot(hi, w_lo, acc, input_precision="tf32")
        acc = tl.dot(lo, w_hi, acc, input_precision="tf32")
        return tl.dot(hi, w_hi, acc, input_precision="tf32")
    else:
        return tl.dot(a, w_hi, acc, input_precision=PREC)


@triton.jit
def _load_rows(x_ptr, row_x, m_ok, k0, K, sxk, PIN: tl.constexpr, MMAJOR: tl.constexpr,
               BM: tl.constexpr, BK: tl.constexpr):
    # Real columns k0 .. k0 + BK of BM rows as a [BM, BK] float32 tile (complex: re, im interleaved).
    if PIN == 2:
        j = (k0 // 2 + tl.arange(0, BK // 2)).to(row_x.dtype)
        c = tl.arange(0, 2)
        j_ok = j * 2 < K
        if MMAJOR:
            off = (row_x[None, :] + j[:, None] * sxk) * 2
            ok = j_ok[:, None] & m_ok[None, :]
            a = tl.load(x_ptr + off[:, :, None] + c[None, None, :], mask=ok[:, :, None], other=0.0)
            a = tl.permute(a, (1, 0, 2))
        else:
            off = (row_x[:, None] + j[None, :] * sxk) * 2
            ok = m_ok[:, None] & j_ok[None, :]
            a = tl.load(x_ptr + off[:, :, None] + c[None, None, :], mask=ok[:, :, None], other=0.0)
        return tl.reshape(a, (BM, BK))
    else:
        kk = (k0 + tl.arange(0, BK)).to(row_x.dtype)
        if MMAJOR:
            a = tl.load(x_ptr + row_x[None, :] + kk[:, None] * sxk, mask=(kk < K)[:, None] & m_ok[None, :],
                        other=0.0)
            return tl.trans(a)
        else:
            return tl.load(x_ptr + row_x[:, None] + kk[None, :] * sxk, mask=m_ok[:, None] & (kk < K)[None, :],
                           other=0.0)


@triton.jit
def _input(x_ptr, win_ptr, row_x, m_ok, k0, K, sxk, PIN: tl.constexpr, MMAJOR: tl.constexpr,
           WINDOW: tl.constexpr, BM: tl.constexpr, BK: tl.constexpr):
    # The [BM, BK] input tile at real column k0, times the window when WINDOW (STFT frames).
    a = _load_rows(x_ptr, row_x, m_ok, k0, K, sxk, PIN, MMAJOR, BM, BK)
    if WINDOW:
        kw = k0 + tl.arange(0, BK)
        a = a * tl.load(win_ptr + kw // PIN, mask=kw < K, other=0.0)[None, :]
    return a


@triton.jit
def _finish(acc, rm, m_ok, pid_n, y_ptr, tw_ptr, N, R1O, sy0, sy1, syk, fr, fc, n_lim, TW_DIV, TW_MOD, TW_COLS,
            scale, POUT: tl.constexpr, Y_MMAJOR: tl.constexpr, TWIDDLE: tl.constexpr, BM: tl.constexpr,
            BN: tl.constexpr):
    # Twiddle, scale and store a [BM, BN] tile of dft_kernel's output (column tile pid_n).
    row_y = (rm // R1O) * sy0 + (rm % R1O) * sy1
    if POUT == 2:
        re, im = tl.split(tl.reshape(acc, (BM, BN // 2, 2)))
        k = (pid_n * (BN // 2) + tl.arange(0, BN // 2)).to(row_y.dtype)
        c = tl.arange(0, 2)
        if TWIDDLE:
            t_row = ((rm // TW_DIV) % TW_MOD) * TW_COLS
            t_re, t_im = tl.split(tl.load(tw_ptr + ((t_row[:, None] + k[None, :]) * 2)[:, :, None] + c[None, None, :]))
            re, im = re * t_re - im * t_im, re * t_im + im * t_re
        out = tl.join(re * scale, im * scale)
        ok = m_ok[:, None] & (k < N // 2)[None, :] & ((rm % R1O)[:, None] * fr + k[None, :] * fc < n_lim)
        if Y_MMAJOR:
            off = (row_y[None, :] + k[:, None] * syk) * 2
            tl.store(y_ptr + off[:, :, None] + c[None, None, :], tl.permute(out, (1, 0, 2)),
                     mask=tl.trans(ok)[:, :, None])
        else:
            off = (row_y[:, None] + k[None, :] * syk) * 2
            tl.store(y_ptr + off[:, :, None] + c[None, None, :], out, mask=ok[:, :, None])
    else:
        k = (pid_n * BN + tl.arange(0, BN)).to(row_y.dtype)
        ok = m_ok[:, None] & (k < N)[None, :] & ((rm % R1O)[:, None] * fr + k[None, :] * fc < n_lim)
        if Y_MMAJOR:
            tl.store(y_ptr + row_y[None, :] + k[:, None] * syk, tl.trans(acc * scale), mask=tl.trans(ok))
        else:
            tl.store(y_ptr + row_y[:, None] + k[None, :] * syk, acc * scale, mask=ok)


@triton.jit
def dft_kernel(x_ptr, w_ptr, tw_ptr, win_ptr, y_ptr, M, K, N, W_COLS, W_PART,
               R1, sx0, sx1, sxk, R1O, sy0, sy1, syk, fr, fc, n_lim, TW_DIV, TW_MOD, TW_COLS, scale,
               PIN: tl.constexpr, POUT: tl.constexpr, X_MMAJOR: tl.constexpr, Y_MMAJOR: tl.constexpr,
               TWIDDLE: tl.constexpr, WINDOW: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
               BK: tl.constexpr, INT64: tl.constexpr, PREC: tl.constexpr, ONE_TILE: tl.constexpr):
    # Row m of the problem starts at element (m // R1) * sx0 + (m % R1) * sx1 of x, its input
    # element j at + j * sxk; output element k of row m goes to (m // R1O) * sy0 + (m % R1O) * sy1
    # + k * syk of y, stored only where its frequency (m % R1O) * fr + k * fc is below n_lim.
    # K and N count real columns (PIN, POUT floats per element). TWIDDLE multiplies output k by
    # tw[(m // TW_DIV) % TW_MOD, k]. With ONE_TILE (K <= BK, N <= BN: a Stockham stage) a
    # program loads the table once, keeps it in shared memory and walks row tiles pid, pid +
    # programs, ...; Triton prefetches the next tile's input while it computes this one
    # (num_stages >= 2). Otherwise a program computes one (row tile, column tile), K in BK steps.
    if ONE_TILE:
        w_hi, w_lo = _table(w_ptr + tl.arange(0, BK)[:, None] * W_COLS + tl.arange(0, BN)[None, :], W_PART, PREC)
        for t in range(tl.program_id(0), (M + BM - 1) // BM, tl.num_programs(0)):
            rm = t * BM + tl.arange(0, BM)
            if INT64:
                rm = rm.to(tl.int64)
            m_ok = rm < M
            row_x = (rm // R1) * sx0 + (rm % R1) * sx1
            a = _input(x_ptr, win_ptr, row_x, m_ok, 0, K, sxk, PIN, X_MMAJOR, WINDOW, BM, BK)
            acc = _dot(a, w_hi, w_lo, tl.zeros((BM, BN), dtype=tl.float32), PREC)
            _finish(acc, rm, m_ok, 0, y_ptr, tw_ptr, N, R1O, sy0, sy1, syk, fr, fc, n_lim, TW_DIV, TW_MOD,
                    TW_COLS, scale, POUT, Y_MMAJOR, TWIDDLE, BM, BN)
    else:
        n_tiles = (N + BN - 1) // BN
        pid_n = tl.program_id(0) % n_tiles
        rm = (tl.program_id(0) // n_tiles) * BM + tl.arange(0, BM)
        if INT64:
            rm = rm.to(tl.int64)
        m_ok = rm < M
        row_x = (rm // R1) * sx0 + (rm % R1) * sx1
        cols = pid_n * BN + tl.arange(0, BN)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k0 in range(0, K, BK):
            a = _input(x_ptr, win_ptr, row_x, m_ok, k0, K, sxk, PIN, X_MMAJOR, WINDOW, BM, BK)
            w_hi, w_lo = _table(w_ptr + (k0 + tl.arange(0, BK))[:, None] * W_COLS + cols[None, :], W_PART, PREC)
            acc = _dot(a, w_hi, w_lo, acc, PREC)
        _finish(acc, rm, m_ok, pid_n, y_ptr, tw_ptr, N, R1O, sy0, sy1, syk, fr, fc, n_lim, TW_DIV, TW_MOD,
                TW_COLS, scale, POUT, Y_MMAJOR, TWIDDLE, BM, BN)


@triton.jit
def chirp_kernel(x_ptr, t_ptr, y_ptr, n_in, n_cols, sx0, sxe, sy0, sye, scale,
                 PIN: tl.constexpr, BLOCK: tl.constexpr):
    # y[r, j] = x[r, j] * t[j] * scale for j < n_in, 0 for n_in <= j < n_cols (complex y).
    row = tl.program_id(0).to(tl.int64)
    j = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    valid = j < n_in
    x_off = (row * sx0 + j * sxe) * PIN
    x_re = tl.load(x_ptr + x_off, mask=valid, other=0.0)
    if PIN == 2:
        x_im = tl.load(x_ptr + x_off + 1, mask=valid, other=0.0)
    else:
        x_im = tl.zeros((BLOCK,), dtype=tl.float32)
    t_re = tl.load(t_ptr + 2 * j, mask=valid, other=0.0)
    t_im = tl.load(t_ptr + 2 * j + 1, mask=valid, other=0.0)
    y = tl.join((x_re * t_re - x_im * t_im) * scale, (x_re * t_im + x_im * t_re) * scale)
    y_off = (row * sy0 + j * sye) * 2
    tl.store(y_ptr + y_off[:, None] + tl.arange(0, 2)[None, :], y, mask=(j < n_cols)[:, None])


@triton.jit
def _pairs(ptr, off, mask):
    # Complex elements at float offsets ``off`` (masked to 0) as (re, im).
    return tl.split(tl.load(ptr + off[:, None] + tl.arange(0, 2)[None, :], mask=mask[:, None], other=0.0))


@triton.jit
def _unpack(a_re, a_im, b_re, b_im, t_re, t_im, scale):
    # X[k] = scale * (E + t O), E = (a + conj b) / 2, O = (a - conj b) / 2i, for a = Z[k], b = Z[M - k].
    e_re, e_im = 0.5 * (a_re + b_re), 0.5 * (a_im - b_im)
    o_re, o_im = 0.5 * (a_im + b_im), 0.5 * (b_re - a_re)
    return (e_re + t_re * o_re - t_im * o_im) * scale, (e_im + t_re * o_im + t_im * o_re) * scale


@triton.jit
def _store_bins(y_ptr, row_y, k, x_re, x_im, ok, M, n_out, sye):
    # X[k] (a [H, R] tile, k < M or k == M) to y[k], and conj X[k] to y[2M - k] where the full
    # spectrum is asked for; stored as [R, H, 2] so that consecutive k (rows) share a warp.
    c = tl.arange(0, 2)
    kt = tl.trans(k)
    val = tl.permute(tl.join(x_re, x_im), (1, 0, 2))
    ok_t = tl.trans(ok)
    tl.store(y_ptr + ((row_y + kt * sye) * 2)[:, :, None] + c[None, None, :], val,
             mask=(ok_t & (kt < n_out))[:, :, None])
    mirror = 2 * M - kt
    tl.store(y_ptr + ((row_y + mirror * sye) * 2)[:, :, None] + c[None, None, :],
             tl.permute(tl.join(x_re, -x_im), (1, 0, 2)),
             mask=(ok_t & (kt > 0) & (kt < M) & (mirror < n_out))[:, :, None])


@triton.jit
def r2c_last_kernel(x_ptr, w_ptr, rot_ptr, t_ptr, y_ptr, L, M, n_out, W_COLS, W_PART, n_blocks, sy0, sye, scale,
                    R: tl.constexpr, H: tl.constexpr, PREC: tl.constexpr):
    # The last Stockham stage of a real row's M-point transform (rows q < L of x, contiguous [B, M]
    # complex, element j at q + j * L) fused with the unpack to its spectrum (r2c_unpack_kernel).
    # Z[k] for k = q + L * k1 needs Z[M - k] = Z[(L - q) + L * (R - 1 - k1)]: a block takes rows
    # q = i and L - i (i in [i0, i0 + H)) as rows 2h and 2h + 1 of one tile. Row L - i is read in
    # reverse, x'[j] = x[-j mod R] * rot[j], rot[j] = exp(sign*2*pi*i*j/R), so its outputs come
    # column-reversed (out[k1] = Z[(L - i) + L * (R - 1 - k1)]) and align with row i's partners.
    # i = 0 pairs row 0 with itself reversed and not rotated: out[k1] = Z[L * (-k1 mod R)].
    # A program walks blocks pid, pid + programs, ... of n_blocks = B * cdiv(L // 2 + 1, H),
    # keeping the 2R x 2R table in shared memory.
    w_hi, w_lo = _table(w_ptr + tl.arange(0, 2 * R)[:, None] * W_COLS + tl.arange(0, 2 * R)[None, :], W_PART, PREC)
    n_blk = (L // 2 + H) // H
    c = tl.arange(0, 2)
    j = tl.arange(0, R)
    r = tl.arange(0, 2 * H)
    back = r % 2 == 1
    w_re, w_im = tl.split(tl.load(rot_ptr + (j * 2)[:, None] + c[None, :]))
    for blk in range(tl.program_id(0), n_blocks, tl.num_programs(0)):
        b = blk // n_blk
        i0 = (blk % n_blk) * H
        i = i0 + r // 2
        q = tl.where(back, (L - i) % L, i)
        row_x = b.to(tl.int64) * M + q
        src = tl.where(back[None, :], (R - j[:, None]) % R, j[:, None])
        a = tl.load(x_ptr + ((row_x[None, :] + src * L) * 2)[:, :, None] + c[None, None, :],
                    mask=(2 * i <= L)[None, :, None], other=0.0)
        a_re, a_im = tl.split(tl.permute(a, (1, 0, 2)))
        rot = (back & (i > 0))[:, None]
        r_re = tl.where(rot, w_re[None, :], 1.0)
        r_im = tl.where(rot, w_im[None, :], 0.0)
        a = tl.reshape(tl.join(a_re * r_re - a_im * r_im, a_re * r_im + a_im * r_re), (2 * H, 2 * R))
        acc = _dot(a, w_hi, w_lo, tl.zeros((2 * H, 2 * R), dtype=tl.float32), PREC)
        re, im = tl.split(tl.reshape(acc, (2 * H, R, 2)))
        z_re, zb_re = tl.split(tl.permute(tl.reshape(re, (H, 2, R)), (0, 2, 1)))
        z_im, zb_im = tl.split(tl.permute(tl.reshape(im, (H, 2, R)), (0, 2, 1)))
        ih = i0 + tl.arange(0, H)
        row_y = b.to(tl.int64) * sy0
        # Row i: bins k = i + L j, partner zb. Row L - i: bins L - i + L (R - 1 - j), partner z; from
        # i = 0 only bin M (Nyquist), and nothing where L - i <= i (row i already wrote those bins).
        k = ih[:, None] + L * j[None, :]
        t_re, t_im = _pairs2(t_ptr, k * 2, (k >= 0) & (k <= M))
        x_re, x_im = _unpack(z_re, z_im, zb_re, zb_im, t_re, t_im, scale)
        _store_bins(y_ptr, row_y, k, x_re, x_im, (2 * ih <= L)[:, None] & (j < R)[None, :], M, n_out, sye)
        k = (L - ih)[:, None] + L * (R - 1 - j)[None, :]
        t_re, t_im = _pairs2(t_ptr, k * 2, (k >= 0) & (k <= M))
        x_re, x_im = _unpack(zb_re, zb_im, z_re, z_im, t_re, t_im, scale)
        ok = (2 * ih < L)[:, None] & ((ih > 0)[:, None] | (j == 0)[None, :])
        _store_bins(y_ptr, row_y, k, x_re, x_im, ok, M, n_out, sye)


@triton.jit
def _pairs2(ptr, off, mask):
    # Complex elements at the float offsets of a 2-D tile ``off`` (masked to 0), as (re, im).
    return tl.split(tl.load(ptr + off[:, :, None] + tl.arange(0, 2)[None, None, :], mask=mask[:, :, None],
                            other=0.0))


@triton.jit
def r2c_unpack_kernel(z_ptr, t_ptr, y_ptr, M, n_out, sz0, sy0, sye, scale, BLOCK: tl.constexpr):
    # z = x[0::2] + i x[1::2] of a real row of length 2M, Z its M-point transform. For k <= M:
    # X[k] = E + t[k] O with E = (Z[k] + conj Z[M-k]) / 2 and O = (Z[k] - conj Z[M-k]) / 2i (Z[M] = Z[0]);
    # X[2M - k] = conj X[k] where the full spectrum is asked for (n_out > M + 1).
    row = tl.program_id(0).to(tl.int64)
    k = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    ok = k <= M
    a_re, a_im = _pairs(z_ptr, (row * sz0 + tl.where(k < M, k, 0)) * 2, ok)
    b_re, b_im = _pairs(z_ptr, (row * sz0 + tl.where(k > 0, M - k, 0)) * 2, ok)
    t_re, t_im = _pairs(t_ptr, k * 2, ok)
    x_re, x_im = _unpack(a_re, a_im, b_re, b_im, t_re, t_im, scale)
    c = tl.arange(0, 2)
    off = ((row * sy0 + k * sye) * 2)[:, None] + c[None, :]
    tl.store(y_ptr + off, tl.join(x_re, x_im), mask=(ok & (k < n_out))[:, None])
    mirror = 2 * M - k
    off = ((row * sy0 + mirror * sye) * 2)[:, None] + c[None, :]
    tl.store(y_ptr + off, tl.join(x_re, -x_im), mask=((k > 0) & (k < M) & (mirror < n_out))[:, None])


@triton.jit
def c2r_pack_kernel(x_ptr, t_ptr, z_ptr, M, sx0, sxe, sz0, BLOCK: tl.constexpr):
    # The inverse of r2c_unpack: from the half spectrum X[0..M] of a real row of length 2M,
    # Z[k] = (X[k] + conj X[M-k]) + i t[k] (X[k] - conj X[M-k]) for k < M, whose M-point inverse
    # transform is x[0::2] + i x[1::2]. The imaginary parts of DC and Nyquist are ignored, as torch does.
    row = tl.program_id(0).to(tl.int64)
    k = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    ok = k < M
    a_re, a_im = _pairs(x_ptr, (row * sx0 + k * sxe) * 2, ok)
    b_re, b_im = _pairs(x_ptr, (row * sx0 + (M - k) * sxe) * 2, ok)
    a_im = tl.where(k == 0, 0.0, a_im)
    b_im = tl.where(k == 0, 0.0, b_im)
    t_re, t_im = _pairs(t_ptr, k * 2, ok)
    d_re, d_im = a_re - b_re, a_im + b_im
    z_re = a_re + b_re - (t_re * d_im + t_im * d_re)
    z_im = a_im - b_im + (t_re * d_re - t_im * d_im)
    off = ((row * sz0 + k) * 2)[:, None] + tl.arange(0, 2)[None, :]
    tl.store(z_ptr + off, tl.join(z_re, z_im), mask=ok[:, None])


@triton.jit
def hermitian_kernel(x_ptr, y_ptr, n_half, n, sx0, sxe, BLOCK: tl.constexpr):
    # Full spectrum of a real signal from its first n_half bins: X[n - j] = conj(X[j]).
    row = tl.program_id(0).to(tl.int64)
    j = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mirror = j >= n_half
    src = tl.where(mirror, n - j, j)
    ok = j < n
    re, im = _pairs(x_ptr, (row * sx0 + src * sxe) * 2, ok)
    im = tl.where(mirror, -im, im)
    y_off = (row * n + j) * 2
    tl.store(y_ptr + y_off[:, None] + tl.arange(0, 2)[None, :], tl.join(re, im), mask=ok[:, None])
