"""nbx-spectral's sweeps (``nbx tune --family spectral``, ``benchmarks/sweep.py``): the row kernel,
the column pass, the matmul DFT kernel, Bluestein's chirp multiply, the inverse real transform's
spectrum rebuild, stft's pad and istft's overlap-add.

row_fft: a shape ``ROWSxN`` (N a power of two the row kernel takes whole) is an FFT of complex rows
and an rfft of real rows, at 4 warps and 2 or 4 programs per SM. column_pass: a shape ``ROWSxN`` (N
above the row kernel's reach) is an rfft whose column pass is tried at 64, 128 and 256 columns a
program. dft: a shape ``CLIPSxSAMPLESxN_FFTxHOP`` is the DFT stage of an stft (Hann window, no
centering) at the tiles the benchmark compared. pad: a shape ``BATCHxLENGTHxPAD`` is a reflect pad of
PAD samples on both sides; overlap_add: a shape ``BATCHxFRAMESxN_FFTxHOP`` overlap-adds random
frames with a window and an envelope of ones (the kernel reads them all the same), which is torch's
``fold``; both try 128 to 4096 floats a program. chirp: a shape ``ROWSxN`` (N a length Bluestein
takes: above the direct limit with a prime factor too large to split) is an FFT of complex rows, its
three chirp multiplies tried at 128 to 4096 columns a program and keyed by the convolution's length.
hermitian: a shape ``ROWSxN`` (N not one direct DFT) is an irfft of N points, its spectrum rebuilt
at 128 to 4096 bins a program.
"""

from __future__ import annotations

import numpy as np

from nbx_core import dtypes as D
from nbx_core.errors import NbxValueError
from nbx_core.ops import views
from nbx_core.runtime.tuner import Case, Shape, Sweep, randn, sweep_shape
from nbx_core.tensor import NBXTensor, empty_tensor, tensor

from . import plan
from .fft import CHIRP, DFT, HERMITIAN, bluestein, dft, irfft_rows
from .row_fft import COLUMN_PASS, ROW_FFT, column_pass, row_fft
from .stft import OVERLAP_ADD, PAD, _pad, overlap_add

DFT_TILES = [
    {"BM": bm, "BN": bn, "BK": bk, "num_warps": w, "num_stages": s}
    for bm, bn, bk, w, s in [
        (128, 64, 32, 8, 3),
        (128, 32, 32, 4, 3),
        (128, 32, 32, 4, 4),
        (64, 32, 32, 4, 3),
        (256, 32, 32, 8, 3),
        (128, 32, 64, 4, 3),
        (128, 16, 32, 4, 3),
        (64, 64, 32, 4, 3),
        (64, 32, 32, 2, 3),
    ]
]
BLOCKS = [{"BLOCK": b} for b in (128, 256, 512, 1024, 2048, 4096)]


def _two(shape: Shape, what: str) -> tuple[int, int]:
    sweep_shape(shape, what, "ROWSxN", (2,))
    return shape[0], shape[1]


def _row_cases(shape: Shape, dtype: str) -> list[Case]:
    rows, n = _two(shape, "row_fft")
    if plan.plan_kind(n) != "row":
        raise NbxValueError(
            f"row_fft: N={n} is not a length the row kernel takes whole (a power of two up to {plan.MAX_ROW})"
        )
    rng = np.random.default_rng(0)
    candidates = [{"num_warps": 4, "PROGRAMS_PER_SM": p} for p in (2, 4)]
    cases = []
    for complex_in in (True, False):
        x = views.view_as_complex(randn((rows, n, 2), dtype, rng)) if complex_in else randn((rows, n), dtype, rng)
        n_out = n if complex_in else n // 2 + 1
        y = empty_tensor((rows, n_out), D.complex64, x.device)

        def run(cfg: dict[str, int] | None, x: NBXTensor = x, y: NBXTensor = y, n_out: int = n_out) -> NBXTensor:
            row_fft(x, y, n=n, n_lim=n_out, sign=-1, scale=1.0, config=cfg)
            return y

        cases.append(
            Case(
                f"{'fft' if complex_in else 'rfft'} {rows}x{n} {dtype}",
                (n, complex_in),
                run,
                candidates,
                ("fft.fft" if complex_in else "fft.rfft", (x,)),
            )
        )
    return cases


def _column_cases(shape: Shape, dtype: str) -> list[Case]:
    rows, n = _two(shape, "column_pass")
    if plan.plan_kind(n) != "columns":
        raise NbxValueError(
            f"column_pass: N={n} is not a length that takes a column pass (a power of two above {plan.MAX_ROW})"
        )
    c, r = plan.column_split(n)
    x = randn((rows, n), dtype, np.random.default_rng(0))
    tmp = empty_tensor((rows, c, r), D.complex64, x.device)
    y = empty_tensor((rows, n // 2 + 1), D.complex64, x.device)

    def run(cfg: dict[str, int] | None) -> NBXTensor:
        column_pass(x, tmp, n=n, c=c, sign=-1, config=cfg)
        row_fft(views.view(tmp, -1, r), y, n=r, n_lim=n // 2 + 1, sign=-1, scale=1.0, columns=c)
        return y

    return [Case(f"rfft {rows}x{n} {dtype}", (n, c), run, [{"BLOCK_J": b} for b in (64, 128, 256)], ("fft.rfft", (x,)))]


def _stft_cases(shape: Shape, dtype: str) -> list[Case]:
    sweep_shape(shape, "dft", "CLIPSxSAMPLESxN_FFTxHOP", (4,))
    clips, samples, n_fft, hop = shape
    sig = randn((clips, samples), dtype, np.random.default_rng(0))
    window = tensor(np.hanning(n_fft + 1)[:-1], dtype=sig.dtype, device=sig.device)  # torch's periodic Hann
    frames, n_freq = 1 + (samples - n_fft) // hop, n_fft // 2 + 1
    out = empty_tensor((clips, frames, n_freq), D.complex64, sig.device)
    rows = clips * frames

    def run(cfg: dict[str, int] | None) -> NBXTensor:
        dft(
            sig,
            out,
            kind="r2c",
            n=n_fft,
            n_out=n_freq,
            sign=-1,
            rows=rows,
            xa=(frames, sig.stride(0), hop * sig.stride(1), sig.stride(1)),
            ya=(1, 2 * n_freq, 0, 2),
            k_in=n_fft,
            freq=(0, 1, n_freq),
            window=window,
            config=cfg,
        )
        return views.transpose(out, 1, 2)

    return [
        Case(
            f"stft {'x'.join(map(str, shape))} {dtype}",
            ("r2c", n_fft, rows),
            run,
            DFT_TILES,
            ("stft", (sig, n_fft, hop, None, window, False, "reflect", False, True, True)),
        )
    ]


def _pad_cases(shape: Shape, dtype: str) -> list[Case]:
    sweep_shape(shape, "pad", "BATCHxLENGTHxPAD", (3,))
    batch, length, pad = shape
    x = randn((batch, length), dtype, np.random.default_rng(0))

    def run(cfg: dict[str, int] | None) -> NBXTensor:
        return _pad(x, pad, pad, "reflect", config=cfg)

    return [
        Case(
            f"reflect pad {'x'.join(map(str, shape))} {dtype}",
            (length + 2 * pad,),
            run,
            BLOCKS,
            ("nn.functional.pad", (x, (pad, pad), "reflect")),
        )
    ]


def _overlap_add_cases(shape: Shape, dtype: str) -> list[Case]:
    sweep_shape(shape, "overlap_add", "BATCHxFRAMESxN_FFTxHOP", (4,))
    batch, frames, n_fft, hop = shape
    expected = n_fft + hop * (frames - 1)
    frame_rows = randn((batch, frames, n_fft), dtype, np.random.default_rng(0))
    ones = [tensor(np.ones(n, dtype=np.float32), device=frame_rows.device) for n in (n_fft, expected)]
    y = empty_tensor((batch, expected), frame_rows.dtype, frame_rows.device)

    def run(cfg: dict[str, int] | None) -> NBXTensor:
        overlap_add(frame_rows, *ones, y, hop, 0, config=cfg)
        return views.view(y, batch, 1, 1, expected)

    return [
        Case(
            f"overlap_add {'x'.join(map(str, shape))} {dtype}",
            (expected, -(-n_fft // hop)),
            run,
            BLOCKS,
            ("nn.functional.fold", (views.transpose(frame_rows, 1, 2), (1, expected), (1, n_fft), 1, 0, (1, hop))),
        )
    ]


def _chirp_cases(shape: Shape, dtype: str) -> list[Case]:
    rows, n = _two(shape, "chirp")
    if plan.plan_kind(n) != "bluestein":
        raise NbxValueError(f"chirp: N={n} is not a length Bluestein takes (try a prime above {plan.DIRECT_MAX})")
    x = views.view_as_complex(randn((rows, n, 2), dtype, np.random.default_rng(0)))
    y = empty_tensor((rows, n), D.complex64, x.device)

    def run(cfg: dict[str, int] | None) -> NBXTensor:
        bluestein(x, y, n, n, -1, 1.0, config=cfg)
        return y

    return [Case(f"fft {rows}x{n} {dtype}", (plan.bluestein_length(n),), run, BLOCKS, ("fft.fft", (x,)))]


def _hermitian_cases(shape: Shape, dtype: str) -> list[Case]:
    rows, n = _two(shape, "hermitian")
    if plan.plan_kind(n) == "direct":
        raise NbxValueError(f"hermitian: N={n} is done as one direct DFT (take N above {plan.DIRECT_MAX})")
    x = views.view_as_complex(randn((rows, n // 2 + 1, 2), dtype, np.random.default_rng(0)))
    y = empty_tensor((rows, n), D.float32, x.device)

    def run(cfg: dict[str, int] | None) -> NBXTensor:
        irfft_rows(x, y, n=n, scale=1.0 / n, config=cfg)
        return y

    return [Case(f"irfft {rows}x{n} {dtype}", (n,), run, BLOCKS, ("fft.irfft", (x, n)))]


SWEEPS = [
    Sweep(ROW_FFT, [(4096, 4096), (16384, 4096)], _row_cases, "ROWSxN", ("float32",)),
    Sweep(COLUMN_PASS, [(1024, 65536)], _column_cases, "ROWSxN", ("float32",)),
    Sweep(DFT, [(32, 30 * 16000, 400, 160)], _stft_cases, "CLIPSxSAMPLESxN_FFTxHOP", ("float32",)),
    Sweep(PAD, [(32, 30 * 16000, 200)], _pad_cases, "BATCHxLENGTHxPAD", ("float32",)),
    Sweep(OVERLAP_ADD, [(32, 3000, 400, 160)], _overlap_add_cases, "BATCHxFRAMESxN_FFTxHOP", ("float32",)),
    Sweep(CHIRP, [(1024, 4099)], _chirp_cases, "ROWSxN", ("float32",)),
    Sweep(HERMITIAN, [(1024, 65536)], _hermitian_cases, "ROWSxN", ("float32",)),
]
