"""FFT kernels and the row engine behind every spectral op.

The engine transforms the rows of a strided 2-D batch: ``fft_rows(x, ...)`` with ``x`` real
(float32) or complex (complex64, read through its float32 view). One kernel does the arithmetic:
``_dft_kernel``, a tiled matmul of input rows against a DFT matrix (see plan.py), with generic
two-level row addressing so that the same kernel reads the columns of a four-step decomposition,
multiplies by its twiddles and stores transposed. Bluestein adds ``_chirp_kernel``
(pointwise complex multiply by a table, zero padding); inverse real transforms of long rows use
``_hermitian_kernel`` to rebuild the full spectrum.

Accuracy (float32 in, float32 out, against float64 numpy.fft): the max-abs error relative to the
output's RMS stays below ``5e-7 * log2(n) + 2e-6`` for every plan (tests/spectral/test_accuracy.py).
Direct plans accumulate n products in float32 (error ~ sqrt(n) eps, bounded since n <= 512);
four-step and Bluestein compose two or four such stages with exactly rounded tables.
On the GPU, ``tl.dot`` runs in ``tf32x3`` (three tensor-core passes, float32-level precision).
"""

from collections.abc import Callable, Mapping
from pathlib import Path

import triton
import triton.language as tl

from nbx_core import dtypes as D
from nbx_core.ops import views
from nbx_core.ops.copy import copy_
from nbx_core.runtime.kernels.indexing import needs_int64
from nbx_core.runtime.launch import cdiv, launch
from nbx_core.runtime.tuning import Config, Key, Tunable, bucket
from nbx_core.tensor import NBXTensor, empty_tensor

from . import plan, row_fft

DOT_PRECISION = "tf32x3"

DFT = Tunable(
    "spectral", "dft", {"BM": "pow2", "BN": "pow2", "BK": "pow2", "num_warps": "pow2", "num_stages": "count"},
    key=lambda kind, n, rows: Key({"kind": kind, "N": bucket(n), "M": bucket(rows)}),
    # Narrow tiles won on the H200's stft sweep (configs/h200.json's source): 201 bins fill
    # 32-column tiles with little waste.
    rule=lambda kind, n, rows: {"BM": 64, "BN": 32, "BK": 32, "num_warps": 2, "num_stages": 3},
    # Few, large programs on the interpreter, where each costs Python time.
    interpreter=lambda kind, n, rows: {"BM": min(max(triton.next_power_of_2(rows), 16), 256), "BN": 64, "BK": 64,
                                       "num_warps": 1, "num_stages": 1},
    tables=Path(__file__).with_name("configs"))
"""Tiles of ``_dft_kernel`` (BM rows by BN bins, BK samples a step), warps and stages. Arguments:
the DFT's kind (r2c, c2c, c2r), its length and the rows it transforms."""


def block_rule(cap: int, least: int = 16) -> Callable[..., Config]:
    """A rule of a kernel that runs a program per BLOCK floats of a row: the row's length (at least
    ``least``) rounded up to a power of two, up to ``cap``."""
    return lambda n, *_: {"BLOCK": min(triton.next_power_of_2(max(n, least)), cap)}


def _row_blocks(name: str, least: int) -> Tunable:
    # Up to 1024 floats a program on a GPU; few, long programs (4096) on the interpreter.
    return Tunable("spectral", name, {"BLOCK": "pow2"}, key=lambda n: Key({"N": bucket(n)}),
                   rule=block_rule(1024, least), interpreter=block_rule(4096, least),
                   tables=Path(__file__).with_name("configs"))


CHIRP = _row_blocks("chirp", 16)
"""Columns a program of ``_chirp_kernel`` (Bluestein's multiply by a chirp) writes. Argument: the
columns of a row."""
HERMITIAN = _row_blocks("hermitian", 1)
"""Bins a program of ``_hermitian_kernel`` (an inverse real transform's full spectrum) writes.
Argument: the transform length."""


@triton.jit
def _dft_kernel(x_ptr, w_ptr, tw_ptr, win_ptr, y_ptr, M, K, N, W_COLS, W_PART,
                R1, sx0, sx1, sxk, R1O, sy0, sy1, syk, fr, fc, n_lim, tw_n, scale,
                PIN: tl.constexpr, COMPLEX_OUT: tl.constexpr, TWIDDLE: tl.constexpr, WINDOW: tl.constexpr,
                BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, INT64: tl.constexpr,
                PREC: tl.constexpr):
    # Row m of the problem sits at (m // R1) * sx0 + (m % R1) * sx1 in x; its real column kk
    # (interleaved re, im when PIN == 2) at (kk // PIN) * sxk + kk % PIN.
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    if INT64:
        rm = rm.to(tl.int64)
    row_x = (rm // R1) * sx0 + (rm % R1) * sx1
    m_ok = rm < M
    acc_re = tl.zeros((BM, BN), dtype=tl.float32)
    acc_im = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        kk = k0 + tl.arange(0, BK)
        col_x = (kk // PIN) * sxk + kk % PIN
        a = tl.load(x_ptr + row_x[:, None] + col_x[None, :], mask=m_ok[:, None] & (kk < K)[None, :], other=0.0)
        if WINDOW:
            a = a * tl.load(win_ptr + kk // PIN, mask=kk < K, other=0.0)[None, :]
        w_off = kk[:, None] * W_COLS + rn[None, :]
        acc_re = tl.dot(a, tl.load(w_ptr + w_off), acc_re, input_precision=PREC)
        if COMPLEX_OUT:
            acc_im = tl.dot(a, tl.load(w_ptr + W_PART + w_off), acc_im, input_precision=PREC)
    if TWIDDLE:
        # Four-step: output column k1 of row (b, j2) is multiplied by exp(sign*2*pi*i*k1*j2/n).
        t = ((rm % R1)[:, None] * rn[None, :]) % tw_n
        t_re = tl.load(tw_ptr + 2 * t)
        t_im = tl.load(tw_ptr + 2 * t + 1)
        acc_re, acc_im = acc_re * t_re - acc_im * t_im, acc_re * t_im + acc_im * t_re
    row_y = (rm // R1O) * sy0 + (rm % R1O) * sy1
    freq = (rm % R1O)[:, None] * fr + rn[None, :] * fc
    mask = m_ok[:, None] & (rn < N)[None, :] & (freq < n_lim)
    y_off = row_y[:, None] + rn[None, :] * syk
    if COMPLEX_OUT:
        out = tl.join(acc_re * scale, acc_im * scale)
        tl.store(y_ptr + y_off[:, :, None] + tl.arange(0, 2)[None, None, :], out, mask=mask[:, :, None])
    else:
        tl.store(y_ptr + y_off, acc_re * scale, mask=mask)


@triton.jit
def _chirp_kernel(x_ptr, t_ptr, y_ptr, n_in, n_cols, sx_row, sx_el, sy_row, scale,
                  PIN: tl.constexpr, BLOCK: tl.constexpr):
    # y[r, j] = x[r, j] * t[j] * scale for j < n_in, 0 for n_in <= j < n_cols (complex rows).
    row = tl.program_id(0).to(tl.int64)
    j = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    valid = j < n_in
    x_off = row * sx_row + j * sx_el
    x_re = tl.load(x_ptr + x_off, mask=valid, other=0.0)
    if PIN == 2:
        x_im = tl.load(x_ptr + x_off + 1, mask=valid, other=0.0)
    else:
        x_im = tl.zeros((BLOCK,), dtype=tl.float32)
    t_re = tl.load(t_ptr + 2 * j, mask=valid, other=0.0)
    t_im = tl.load(t_ptr + 2 * j + 1, mask=valid, other=0.0)
    y = tl.join((x_re * t_re - x_im * t_im) * scale, (x_re * t_im + x_im * t_re) * scale)
    y_off = row * sy_row + 2 * j
    tl.store(y_ptr + y_off[:, None] + tl.arange(0, 2)[None, :], y, mask=(j < n_cols)[:, None])


@triton.jit
def _hermitian_kernel(x_ptr, y_ptr, n_half, n, sx_row, sx_el, BLOCK: tl.constexpr):
    # Full spectrum of a real signal from its first n_half bins: X[n - j] = conj(X[j]).
    row = tl.program_id(0).to(tl.int64)
    j = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mirror = j >= n_half
    src = tl.where(mirror, n - j, j)
    ok = j < n
    re = tl.load(x_ptr + row * sx_row + src * sx_el, mask=ok, other=0.0)
    im = tl.load(x_ptr + row * sx_row + src * sx_el + 1, mask=ok, other=0.0)
    im = tl.where(mirror, -im, im)
    y_off = row * 2 * n + 2 * j
    tl.store(y_ptr + y_off[:, None] + tl.arange(0, 2)[None, :], tl.join(re, im), mask=ok[:, None])


def _floats(t: NBXTensor) -> NBXTensor:
    """The float32 data of ``t`` (a complex tensor's re, im pairs); strides in float32 elements."""
    return views.view_as_real(t) if t.dtype.is_complex else t


def dft(x: NBXTensor, y: NBXTensor, *, kind: str, n: int, n_out: int, sign: int, rows: int,
        xa: tuple[int, int, int, int], ya: tuple[int, int, int, int], k_in: int, freq: tuple[int, int, int],
        scale: float = 1.0, twiddle: int = 0, window: NBXTensor | None = None,
        config: Mapping[str, int] | None = None) -> None:
    """One matmul stage: ``rows`` rows of ``x`` against the ``kind`` DFT matrix of length ``n``.

    ``xa``/``ya`` = (R1, s0, s1, sk) in float32 elements: row m at (m // R1) * s0 + (m % R1) * s1,
    input sample (output bin) i at i * sk. ``k_in`` is the number of input samples read per row;
    ``freq`` = (fr, fc, limit) masks stores whose bin (m % R1) * fr + col * fc reaches ``limit``.
    ``twiddle`` = n_total multiplies output col k1 of row m by exp(sign*2*pi*i*k1*(m % R1)/n_total).
    ``config`` replaces :data:`DFT`'s lookup.
    """
    xf, yf = _floats(x), _floats(y)
    pin = 2 if x.dtype.is_complex else 1
    complex_out = kind != "c2r"
    w = plan.dft_matrix(kind, n, n_out, sign, x.device)
    tw = plan.twiddles(twiddle, sign, x.device) if twiddle else w
    win = window if window is not None else w
    cfg = DFT.choose(config, kind, n, rows)
    bm, bn, bk, warps, stages = cfg["BM"], cfg["BN"], cfg["BK"], cfg["num_warps"], cfg["num_stages"]
    ncols = n if kind == "c2r" else n_out
    launch(_dft_kernel, (cdiv(rows, bm), cdiv(ncols, bn)), xf, w, tw, win, yf,
           rows, k_in * pin, ncols, w.shape[2], w.shape[1] * w.shape[2],
           *xa, *ya, *freq, max(twiddle, 1), float(scale),
           PIN=pin, COMPLEX_OUT=complex_out, TWIDDLE=bool(twiddle), WINDOW=window is not None,
           BM=bm, BN=bn, BK=bk, INT64=needs_int64(max(x.numel(), y.numel()) * 2, xf, yf),
           PREC=DOT_PRECISION, num_warps=warps, num_stages=stages)


def _rows(t: NBXTensor) -> tuple[int, int]:
    """(row stride, element stride) of a 2-D tensor in float32 elements."""
    f = 2 if t.dtype.is_complex else 1
    return t.stride(0) * f, t.stride(1) * f


def _direct(x: NBXTensor, y: NBXTensor, kind: str, n: int, n_out: int, sign: int, scale: float) -> None:
    (sx0, sxe), (sy0, sye) = _rows(x), _rows(y)
    k_in = n_out if kind == "c2r" else n
    dft(x, y, kind=kind, n=n, n_out=n_out, sign=sign, rows=x.shape[0], xa=(1, sx0, 0, sxe),
        ya=(1, sy0, 0, sye), k_in=k_in, freq=(0, 1, n if kind == "c2r" else n_out), scale=scale)


def _four_step(x: NBXTensor, y: NBXTensor, n: int, n_out: int, sign: int, scale: float) -> None:
    """x: rows of n samples (real or complex); y: complex rows of at least n_out bins."""
    n1, n2 = plan.split(n)
    b = x.shape[0]
    (sx0, sxe), (sy0, sye) = _rows(x), _rows(y)
    tmp = empty_tensor((b, n1, n2), D.complex64, x.device)
    # Columns: row (b, j2) holds x[b, j1 * n2 + j2] for j1 < n1; out tmp[b, k1, j2], twiddled.
    dft(x, tmp, kind="c2c" if x.dtype.is_complex else "r2c", n=n1, n_out=n1, sign=sign, rows=b * n2,
        xa=(n2, sx0, sxe, n2 * sxe), ya=(n2, 2 * n, 2, 2 * n2), k_in=n1, freq=(0, 0, 1), twiddle=n)
    # Rows: row (b, k1) holds tmp[b, k1, :]; bin k2 is X[k1 + n1 * k2], stored transposed.
    dft(tmp, y, kind="c2c", n=n2, n_out=n2, sign=sign, rows=b * n1, xa=(n1, 2 * n, 2 * n2, 2),
        ya=(n1, sy0, sye, n1 * sye), k_in=n2, freq=(1, n1, n_out), scale=scale)


def _chirp(x: NBXTensor, table: NBXTensor, y: NBXTensor, n_in: int, n_cols: int, scale: float,
           config: Mapping[str, int] | None) -> None:
    (sx0, sxe), (sy0, _) = _rows(x), _rows(y)
    block = CHIRP.choose(config, n_cols)["BLOCK"]
    launch(_chirp_kernel, (x.shape[0], cdiv(n_cols, block)), _floats(x), table, _floats(y),
           n_in, n_cols, sx0, sxe, sy0, float(scale), PIN=2 if x.dtype.is_complex else 1, BLOCK=block)


def bluestein(x: NBXTensor, y: NBXTensor, n: int, n_out: int, sign: int, scale: float,
              config: Mapping[str, int] | None = None) -> None:
    """:func:`fft_rows` by Bluestein's algorithm: a convolution of power-of-two length between three
    chirp multiplies; ``config`` replaces :data:`CHIRP`'s lookup for all three."""
    m, chirp, spec = plan.bluestein_tables(n, sign, x.device)
    a = empty_tensor((x.shape[0], m), D.complex64, x.device)
    _chirp(x, chirp, a, n, m, 1.0, config)
    fa = empty_tensor((x.shape[0], m), D.complex64, x.device)
    fft_rows(a, fa, n=m, n_out=m, sign=-1)
    _chirp(fa, spec, fa, m, m, 1.0, config)
    fft_rows(fa, a, n=m, n_out=m, sign=1)
    _chirp(a, chirp, y, n_out, n_out, scale / m, config)


def fft_rows(x: NBXTensor, y: NBXTensor, *, n: int, n_out: int, sign: int, scale: float = 1.0) -> None:
    """y[r, k] = scale * sum_j x[r, j] exp(sign*2*pi*i*j*k/n) for k < n_out (x real or complex 2-D)."""
    kind = plan.plan_kind(n)
    if kind == "row":
        row_fft.row_fft(x, y, n=n, n_lim=n_out, sign=sign, scale=scale)
    elif kind == "columns":
        c, r = plan.column_split(n)
        tmp = empty_tensor((x.shape[0], c, r), D.complex64, x.device)
        row_fft.column_pass(x, tmp, n=n, c=c, sign=sign)
        row_fft.row_fft(views.view(tmp, -1, r), y, n=r, n_lim=n_out, sign=sign, scale=scale, columns=c)
    elif kind == "direct":
        _direct(x, y, "c2c" if x.dtype.is_complex else "r2c", n, n_out, sign, scale)
    elif kind == "four-step":
        _four_step(x, y, n, n_out, sign, scale)
    else:
        bluestein(x, y, n, n_out, sign, scale)


def irfft_rows(x: NBXTensor, y: NBXTensor, *, n: int, scale: float = 1.0,
               config: Mapping[str, int] | None = None) -> None:
    """Real y[r, :n] from the half spectrum x[r, :n // 2 + 1] (imaginary parts of DC/Nyquist ignored).
    ``config`` replaces :data:`HERMITIAN`'s lookup (lengths that are not one direct DFT)."""
    n_half = n // 2 + 1
    if plan.plan_kind(n) == "direct":
        _direct(x, y, "c2r", n, n_half, 1, scale)
        return
    sx0, sxe = _rows(x)
    full = empty_tensor((x.shape[0], n), D.complex64, x.device)
    block = HERMITIAN.choose(config, n)["BLOCK"]
    launch(_hermitian_kernel, (x.shape[0], cdiv(n, block)), _floats(x), _floats(full),
           n_half, n, sx0, sxe, BLOCK=block)
    spec = empty_tensor((x.shape[0], n), D.complex64, x.device)
    fft_rows(full, spec, n=n, n_out=n, sign=1, scale=scale)
    copy_(y, views.real(spec))
