"""The row engine behind every spectral op: FFTs of the rows of a strided 2-D batch.

``fft_rows(x, y, ...)`` (x real float32 or complex64) and ``irfft_rows`` plan a transform
(plan.py) and launch the kernels of kernels.py:

- direct (n <= DIRECT_MAX): one matmul of the rows against the DFT matrix; real input and the
  real output of an inverse use half-size matrices (only the bins a real signal needs).
- Stockham: one matmul stage per radix r. Stage p (L = product of the radices before it,
  m = n / (L r)) reads the n / r rows of length r at stride n / r, multiplies output k1 of row
  (j2, q) by exp(+-2*pi*i*j2*k1 / (n / L)) and writes it to j2 * L r + q + k1 * L, so that after
  the last stage the spectrum is in natural order (no bit reversal, no transpose pass).
- real input of even length n > DIRECT_MAX: the row read in place as n / 2 complex points
  (even, odd samples), transformed, and unpacked into the spectrum: half the arithmetic and memory
  traffic of a complex transform of length n. The unpack needs Z[k] and Z[n/2 - k]; it is fused
  into the last Stockham stage (``r2c_last_kernel``, which reads that stage's rows in mirrored
  pairs) when that stage's radix is a power of two <= 64 (``FUSE_UNPACK``), else it is a pass of
  its own (``r2c_unpack_kernel``). The inverse of an even-length real transform packs the half
  spectrum first (``c2r_pack_kernel``) and writes the real output as complex pairs.
- Bluestein: chirp multiply, two power-of-two transforms, chirp multiply.

Precision (``PRECISION``): float32 products on tensor cores need three tf32 passes. ``"split"``
rounds the input tile to tf32 (hi) in the kernel, keeps the remainder (lo), and reads the DFT
matrix's tf32 split from the table (plan.dft_matrix), so per tile only the data is split:
a*w ~ hi*w_lo + lo*w_hi + hi*w_hi. ``"tf32x3"`` is Triton's own three-pass dot, which splits both
operands in every program. On the interpreter the "split" products are made exactly as tensor cores
make them (tf32 operands), so the CPU tests check the GPU's rounding; two passes (dropping lo*w_hi
or hi*w_lo) lose about 2**-11 relative and fail the bound below.

Accuracy (float32 in, float32 out, against float64 numpy.fft): the max-abs error relative to the
output's RMS stays below ``5e-7 * log2(n) + 2e-6`` for every plan (tests/spectral/test_accuracy.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from nbx_core import dtypes as D
from nbx_core.kernels.indexing import needs_int64
from nbx_core.launch import BACKEND, cdiv, launch, next_pow2
from nbx_core.ops import views
from nbx_core.ops.copy import copy_
from nbx_core.tensor import NBXTensor, empty_tensor

from . import kernels, plan

PRECISION = "split"
"""How a float32 tl.dot reaches float32 accuracy: "split" or Triton's "tf32x3" (module docstring)."""

FUSE_UNPACK = True
"""Real input: fuse the unpack to the spectrum into the last Stockham stage (one pass less, the
last stage's rows read in pairs) where its radix allows (``_fusable``)."""

PROGRAMS = 1 if BACKEND == "cpu" else 2 * 132
"""Programs of a Stockham stage (a matmul of one K step and one column tile) and of the fused
real unpack: each keeps the DFT table in shared memory and walks row tiles, prefetching the next
while computing this one; two per SM of an H200 (132 SMs). 0 launches one program per row tile.
On the interpreter, one program walks every tile (the loop is what the GPU runs; programs cost
Python time there)."""


def _config(k: int, n: int, rows: int) -> tuple[int, int, int, int, int]:
    """(BM, BN, BK, num_warps, num_stages) of a matmul stage of ``rows`` rows, ``k`` real input
    columns and ``n`` real output columns."""
    if BACKEND == "cpu":
        # Few, large programs: each costs Python time on the interpreter.
        return min(max(next_pow2(rows), 16), 1024), min(max(next_pow2(n), 16), 256), \
            min(max(next_pow2(k), 16), 256), 1, 1
    # A stage of radix <= 32 is one K step and one column tile: a persistent program (PROGRAMS)
    # keeps the table in shared memory and prefetches its next 128-row tile (two stages; 4 warps
    # of ~255 registers and 80 KB of shared memory: two programs per SM). Longer rows (radix 64, direct transforms)
    # pipeline BK = 32 steps two deep in 128-row tiles of 8 warps: each program reads the whole
    # table from L2, so fewer, taller tiles read it less often. Tiles of at least 32 keep the
    # compiled variants few (a radix-8 stage pads K from 16 to 32).
    bn = min(max(next_pow2(n), 32), 128)
    if k <= 64:
        return 128, bn, max(next_pow2(k), 32), 4, 2
    return 128, bn, 32, 8, 2


@dataclass(frozen=True)
class Rows:
    """A 2-D batch as the kernels address it: element j of row b is ``parts`` floats (2: complex
    re, im; 1: real) at float offset (b * s0 + j * se) * parts of ``data``."""

    data: NBXTensor
    s0: int
    se: int
    parts: int

    @staticmethod
    def of(t: NBXTensor) -> Rows:
        """The rows of a 2-D real or complex tensor."""
        if t.dtype.is_complex:
            return Rows(views.view_as_real(t), t.stride(0), t.stride(1), 2)
        return Rows(t, t.stride(0), t.stride(1), 1)

    @staticmethod
    def pairs(t: NBXTensor) -> Rows | None:
        """A real 2-D tensor's rows as complex rows of (even, odd) sample pairs, when its layout
        allows (unit element stride, even row stride and offset), else None."""
        if t.stride(1) != 1 or t.stride(0) % 2 or t.storage_offset() % 2:
            return None
        return Rows(t, t.stride(0) // 2, 1, 2)


def floats(t: NBXTensor) -> NBXTensor:
    """The float32 data of ``t`` (a complex tensor's re, im pairs)."""
    return views.view_as_real(t) if t.dtype.is_complex else t


def dft(x: NBXTensor, y: NBXTensor, *, kind: str, n: int, n_out: int, sign: int, rows: int,
        xa: tuple[int, int, int, int], ya: tuple[int, int, int, int], k_in: int, freq: tuple[int, int, int],
        scale: float = 1.0, twiddle: tuple[int, int, int] | None = None,
        window: NBXTensor | None = None) -> None:
    """One matmul stage: ``rows`` rows of ``x`` against the ``kind`` DFT matrix of length ``n``.

    ``x``/``y`` are float32 data (``floats(t)`` of a complex tensor); ``kind`` says which is
    complex: "c2c", "r2c" (real in) or "c2r" (real out, from ``k_in`` half-spectrum bins).
    ``xa``/``ya`` = (R1, s0, s1, sk) in elements: row m at (m // R1) * s0 + (m % R1) * s1,
    input sample (output bin) i at i * sk. ``k_in`` is the number of input elements per row;
    ``freq`` = (fr, fc, limit) masks stores whose bin (m % R1) * fr + col * fc reaches ``limit``.
    ``twiddle`` = (p, div, mod) multiplies output k of row m by exp(sign*2*pi*i*j*k/p),
    j = (m // div) % mod (a Stockham stage's twiddles, plan.stage_twiddles).
    """
    pin, pout = (1, 2) if kind == "r2c" else (2, 1) if kind == "c2r" else (2, 2)
    k_cols, n_cols = k_in * pin, (n if kind == "c2r" else n_out) * pout
    bm, bn, bk, warps, stages = _config(k_cols, n_cols, rows)
    w = plan.dft_matrix(kind, n, n_out, sign, bk, bn, x.device)
    if twiddle is not None:
        p, div, mod = twiddle
        tw = plan.stage_twiddles(p, mod, n_out, bn // 2, sign, x.device)
    else:
        tw, div, mod = w, 1, 1
    win = window if window is not None else w
    # Rows are contiguous in memory (strided columns) when their stride is below the element stride.
    x_mmajor = abs(xa[2] if xa[0] > 1 else xa[1]) < abs(xa[3])
    y_mmajor = abs(ya[2] if ya[0] > 1 else ya[1]) < abs(ya[3])
    tiles = cdiv(rows, bm) * cdiv(n_cols, bn)
    one_tile = k_cols <= bk and n_cols <= bn
    launch(kernels.dft_kernel, (_programs(tiles) if one_tile else tiles,), x, w, tw, win, y,
           rows, k_cols, n_cols, w.shape[2], w.shape[1] * w.shape[2],
           *xa, *ya, *freq, div, mod, tw.shape[1] if twiddle is not None else 0, float(scale),
           PIN=pin, POUT=pout, X_MMAJOR=x_mmajor, Y_MMAJOR=y_mmajor, TWIDDLE=twiddle is not None,
           WINDOW=window is not None, BM=bm, BN=bn, BK=bk,
           INT64=needs_int64(x.numel() + y.numel(), x, y),
           PREC=PRECISION, ONE_TILE=one_tile, num_warps=warps, num_stages=stages)


def _programs(tiles: int) -> int:
    """Programs of a persistent launch over ``tiles`` tiles (PROGRAMS)."""
    return min(tiles, PROGRAMS) if PROGRAMS > 0 else tiles


def _direct(x: Rows, y: Rows, batch: int, kind: str, n: int, n_out: int, sign: int, scale: float) -> None:
    k_in = n_out if kind == "c2r" else n
    dft(x.data, y.data, kind=kind, n=n, n_out=n_out, sign=sign, rows=batch, xa=(1, x.s0, 0, x.se),
        ya=(1, y.s0, 0, y.se), k_in=k_in, freq=(0, 1, n if kind == "c2r" else n_out), scale=scale)


def _stages(x: Rows, batch: int, n: int, sign: int, radices: tuple[int, ...]) -> Rows:
    """All Stockham stages but the last: x (complex or real rows of n samples) -> the last stage's
    input, rows of n complex in Stockham order (x itself when there is one stage)."""
    bufs = [empty_tensor((batch, n), D.complex64, x.data.device) for _ in range(min(len(radices) - 1, 2))]
    src = x
    span = 1  # L: the product of the radices already applied
    for p, r in enumerate(radices[:-1]):
        # Row (b, i) for i < n / r reads element j1 at i + j1 * n / r; output k1 of row
        # (b, j2 * L + q) goes to j2 * L r + q + k1 * L, twiddled by exp(sign*2*pi*i*j2*k1 / (n / L)).
        dst = Rows.of(bufs[p % 2])
        m2 = n // (span * r)
        dft(src.data, dst.data, kind="r2c" if src.parts == 1 else "c2c", n=r, n_out=r, sign=sign,
            rows=batch * (n // r), xa=(n // r, src.s0, src.se, (n // r) * src.se), ya=(span, span * r, 1, span),
            k_in=r, freq=(0, 0, 1), twiddle=(n // span, span, m2) if m2 > 1 else None)
        src = dst
        span *= r
    return src


def _stockham(x: Rows, y: Rows, batch: int, n: int, n_out: int, sign: int, scale: float,
              radices: tuple[int, ...]) -> None:
    """Complex (or real) rows x of n samples -> complex rows y, bins < n_out, one stage per radix."""
    src = _stages(x, batch, n, sign, radices)
    r = radices[-1]
    span = n // r
    dft(src.data, y.data, kind="r2c" if src.parts == 1 else "c2c", n=r, n_out=r, sign=sign, rows=batch * span,
        xa=(span, src.s0, src.se, span * src.se), ya=(span, y.s0, y.se, span * y.se), k_in=r,
        freq=(1, span, n_out), scale=scale)


def _block(n: int) -> int:
    """A pointwise kernel's block along a row of ``n``: one size on a GPU (one compiled variant),
    few programs on the interpreter."""
    return min(next_pow2(max(n, 16)), 4096) if BACKEND == "cpu" else 1024


def _chirp(x: Rows, table: NBXTensor, y: Rows, batch: int, n_in: int, n_cols: int, scale: float) -> None:
    block = _block(n_cols)
    launch(kernels.chirp_kernel, (batch, cdiv(n_cols, block)), x.data, table, y.data,
           n_in, n_cols, x.s0, x.se, y.s0, y.se, float(scale), PIN=x.parts, BLOCK=block)


def _bluestein(x: Rows, y: Rows, batch: int, n: int, n_out: int, sign: int, scale: float) -> None:
    m, chirp, spec = plan.bluestein_tables(n, sign, x.data.device)
    a = Rows.of(empty_tensor((batch, m), D.complex64, x.data.device))
    _chirp(x, chirp, a, batch, n, m, 1.0)
    fa = Rows.of(empty_tensor((batch, m), D.complex64, x.data.device))
    _transform(a, fa, batch, m, m, -1, 1.0)
    _chirp(fa, spec, fa, batch, m, m, 1.0)
    _transform(fa, a, batch, m, m, 1, 1.0)
    _chirp(a, chirp, y, batch, n_out, n_out, scale / m)


def _fusable(r: int) -> bool:
    """Whether r2c_last_kernel can take a last stage of radix r: all of its 2r columns in one tile."""
    return r >= 8 and r & (r - 1) == 0 and 2 * r <= 128


def _stockham_unpack(x: Rows, y: Rows, batch: int, n: int, n_out: int, sign: int, scale: float,
                     radices: tuple[int, ...]) -> None:
    """Real rows of even length n read as n/2 complex pairs x: Stockham stages, the last one fused
    with the unpack to the spectrum (kernels.r2c_last_kernel)."""
    half, r = n // 2, radices[-1]
    src = _stages(x, batch, half, sign, radices)
    span = half // r
    bm, _, _, warps, stages = _config(2 * r, 2 * r, batch * span)
    # Tiles of bm / 2 rows (bm / 4 pairs): the pairing's shuffles need shared memory, and 64-row
    # tiles keep two programs per SM (80 KB, ~220 registers at radix 32).
    h = max(bm // 4, 16)
    dev = x.data.device
    w = plan.dft_matrix("c2c", r, r, sign, 2 * r, 2 * r, dev)
    rot = views.select(plan.stage_twiddles(r, 2, r, r, sign, dev), 0, 1)
    blocks = batch * cdiv(span // 2 + 1, h)
    launch(kernels.r2c_last_kernel, (_programs(blocks),), src.data, w, rot, plan.half_twiddles(n, sign, dev), y.data,
           span, half, n_out, w.shape[2], w.shape[1] * w.shape[2], blocks, y.s0, y.se, float(scale),
           R=r, H=h, PREC=PRECISION, num_warps=warps, num_stages=stages)


def _real_pairs(x: Rows, batch: int, n: int, n_out: int, sign: int, scale: float, y: Rows) -> None:
    """Real rows of even length n: an n/2-point complex transform of (even, odd) pairs, unpacked."""
    half = n // 2
    packed = Rows.pairs(x.data)
    if packed is None:
        dense = empty_tensor((batch, n), D.float32, x.data.device)
        copy_(dense, x.data)
        packed = Rows.pairs(dense)
    radices = plan.radices(half) if half > plan.DIRECT_MAX else None
    if FUSE_UNPACK and radices is not None and _fusable(radices[-1]):
        _stockham_unpack(packed, y, batch, n, n_out, sign, scale, radices)
        return
    z = empty_tensor((batch, half), D.complex64, x.data.device)
    _transform(packed, Rows.of(z), batch, half, half, sign, 1.0)
    block = _block(half + 1)
    launch(kernels.r2c_unpack_kernel, (batch, cdiv(half + 1, block)), floats(z),
           plan.half_twiddles(n, sign, x.data.device), y.data, half, n_out, half, y.s0, y.se, float(scale),
           BLOCK=block)


def _transform(x: Rows, y: Rows, batch: int, n: int, n_out: int, sign: int, scale: float) -> None:
    if n <= plan.DIRECT_MAX:
        _direct(x, y, batch, "r2c" if x.parts == 1 else "c2c", n, n_out, sign, scale)
    elif x.parts == 1 and n % 2 == 0:
        _real_pairs(x, batch, n, n_out, sign, scale, y)
    elif (radices := plan.radices(n)) is not None:
        _stockham(x, y, batch, n, n_out, sign, scale, radices)
    else:
        _bluestein(x, y, batch, n, n_out, sign, scale)


def fft_rows(x: NBXTensor, y: NBXTensor, *, n: int, n_out: int, sign: int, scale: float = 1.0) -> None:
    """y[r, k] = scale * sum_j x[r, j] exp(sign*2*pi*i*j*k/n) for k < n_out (x real or complex 2-D,
    y complex 2-D)."""
    _transform(Rows.of(x), Rows.of(y), x.shape[0], n, n_out, sign, scale)


def irfft_rows(x: NBXTensor, y: NBXTensor, *, n: int, scale: float = 1.0) -> None:
    """Real y[r, :n] from the half spectrum x[r, :n // 2 + 1] (imaginary parts of DC/Nyquist ignored)."""
    batch, n_half = x.shape[0], n // 2 + 1
    src = Rows.of(x)
    if n <= plan.DIRECT_MAX:
        _direct(src, Rows.of(y), batch, "c2r", n, n_half, 1, scale)
        return
    if n % 2 == 0:
        half = n // 2
        z = empty_tensor((batch, half), D.complex64, x.device)
        block = _block(half)
        launch(kernels.c2r_pack_kernel, (batch, cdiv(half, block)), src.data,
               plan.half_twiddles(n, 1, x.device), floats(z), half, src.s0, src.se, half, BLOCK=block)
        out = Rows.pairs(y)
        if out is not None:
            _transform(Rows.of(z), out, batch, half, half, 1, scale)
            return
        tmp = empty_tensor((batch, n), D.float32, x.device)
        _transform(Rows.of(z), Rows.pairs(tmp), batch, half, half, 1, scale)
        copy_(y, tmp)
        return
    full = empty_tensor((batch, n), D.complex64, x.device)
    block = _block(n)
    launch(kernels.hermitian_kernel, (batch, cdiv(n, block)), src.data, floats(full), n_half, n, src.s0, src.se,
           BLOCK=block)
    spec = empty_tensor((batch, n), D.complex64, x.device)
    _transform(Rows.of(full), Rows.of(spec), batch, n, n, 1, scale)
    copy_(y, views.real(spec))
