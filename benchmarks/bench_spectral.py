"""nbx-spectral benchmarks: rfft, complex fft and stft against torch (cuFFT) on one GPU.

``bytes`` is one read of the input and one write of the output; ``flops`` is the usual
5 n log2 n per complex transform (half that for a real one). Shapes: the issue's targets —
rfft float32 1024 x 65536, fft complex64 4096 x 4096, and the speech front end: stft of 32 clips
of 30 s at 16 kHz, n_fft 400, hop 160, Hann window — plus the 400-point rows on their own.
"""

from __future__ import annotations

import math

import torch


def _flops(rows: int, n: int, real: bool) -> float:
    return rows * 5 * n * math.log2(n) * (0.5 if real else 1.0)


def run(h) -> None:
    from nbx_core.registry import get_registry

    reg = get_registry()
    rfft, fft, stft = reg.lookup("aten::fft_rfft"), reg.lookup("aten::fft_fft"), reg.lookup("aten::stft.center")

    for rows, n in [(1024, 65536), (65536, 400), (16384, 4096)]:
        x = h.randn((rows, n), "float32")
        X = h.nbx(x)
        h.compare("fft_rfft", nbx=lambda X=X: rfft(X), torch=lambda x=x: torch.fft.rfft(x), shape=(rows, n),
                  dtype="float32", bytes=rows * n * 4 + rows * (n // 2 + 1) * 8, flops=_flops(rows, n, True))

    for rows, n in [(4096, 4096), (256, 65536)]:
        z = torch.complex(h.randn((rows, n), "float32"), h.randn((rows, n), "float32"))
        Z = h.nbx(z)
        h.compare("fft_fft", nbx=lambda Z=Z: fft(Z), torch=lambda z=z: torch.fft.fft(z), shape=(rows, n),
                  dtype="complex64", bytes=2 * rows * n * 8, flops=_flops(rows, n, False))

    clips, samples, n_fft, hop = 32, 30 * 16000, 400, 160
    sig = h.randn((clips, samples), "float32")
    win = torch.hann_window(n_fft, device=sig.device)
    S, W = h.nbx(sig), h.nbx(win)
    frames = 1 + samples // hop
    h.compare("stft", nbx=lambda: stft(S, n_fft, hop, window=W, return_complex=True),
              torch=lambda: torch.stft(sig, n_fft, hop, window=win, return_complex=True),
              shape=(clips, samples, n_fft, hop), dtype="float32",
              bytes=clips * samples * 4 + clips * frames * (n_fft // 2 + 1) * 8,
              flops=_flops(clips * frames, n_fft, True), note="Hann window, center reflect padding")


def sweep(h) -> None:
    """nbx-spectral's knobs on the benchmark shapes, each candidate against torch (about a minute
    on an H200, most of it compiling): the Stockham radix limit (plan.RADIX_MAX: 16 gives four
    stages of 32768 points, 64 three, 256 two), the Stockham stages' rows per tile and warps
    (fft._config; radix-64 stages also as one K step), the persistent programs of a stage
    (fft.PROGRAMS), the STFT matmul's (BM, BN, BK, warps, stages), Triton's own tf32x3 against the
    host-split table (fft.PRECISION) and the real unpack as its own pass (fft.FUSE_UNPACK).
    The defaults are timed first as "default" and restored at the end."""
    from nbx_spectral import fft as F
    from nbx_spectral import plan as P

    from nbx_core.registry import get_registry

    reg = get_registry()
    rfft, fft, stft = reg.lookup("aten::fft_rfft"), reg.lookup("aten::fft_fft"), reg.lookup("aten::stft.center")
    cases = {}
    for rows, n in [(1024, 65536), (16384, 4096)]:
        x = h.randn((rows, n), "float32")
        X = h.nbx(x)
        cases[f"fft_rfft {rows}x{n}"] = (lambda X=X: rfft(X), lambda x=x: torch.fft.rfft(x), (rows, n),
                                         "float32", rows * n * 4 + rows * (n // 2 + 1) * 8, _flops(rows, n, True))
    for rows, n in [(4096, 4096), (256, 65536)]:
        z = torch.complex(h.randn((rows, n), "float32"), h.randn((rows, n), "float32"))
        Z = h.nbx(z)
        cases[f"fft_fft {rows}x{n}"] = (lambda Z=Z: fft(Z), lambda z=z: torch.fft.fft(z), (rows, n),
                                        "complex64", 2 * rows * n * 8, _flops(rows, n, False))
    clips, samples, n_fft, hop = 32, 30 * 16000, 400, 160
    sig = h.randn((clips, samples), "float32")
    win = torch.hann_window(n_fft, device=sig.device)
    S, W = h.nbx(sig), h.nbx(win)
    frames = 1 + samples // hop
    cases["stft"] = (lambda: stft(S, n_fft, hop, window=W, return_complex=True),
                     lambda: torch.stft(sig, n_fft, hop, window=win, return_complex=True),
                     (clips, samples, n_fft, hop), "float32",
                     clips * samples * 4 + clips * frames * (n_fft // 2 + 1) * 8, _flops(clips * frames, n_fft, True))
    ffts = [name for name in cases if name != "stft"]

    def run(tag: str, names: list[str]) -> None:
        for name in names:
            nbx, ref, shape, dtype, nbytes, flops = cases[name]
            h.compare(f"{name} {tag}", nbx=nbx, torch=ref, shape=shape, dtype=dtype, bytes=nbytes, flops=flops)

    base_config, base_precision, base_fuse, base_radix = F._config, F.PRECISION, F.FUSE_UNPACK, P.RADIX_MAX
    base_programs = F.PROGRAMS

    def stage_tiles(bm: int, warps: int):
        def config(k: int, n: int, rows: int) -> tuple[int, int, int, int, int]:
            d = base_config(k, n, rows)
            return d if k > 128 else (bm, d[1], d[2], warps, d[4])
        return config

    try:
        run("default", [*ffts, "stft"])
        for radix in (16, 256):
            P.RADIX_MAX = radix
            run(f"radix_max={radix}", ffts)
        P.RADIX_MAX = base_radix
        for bm, warps in [(64, 4), (128, 4), (128, 8), (256, 8)]:
            F._config = stage_tiles(bm, warps)
            run(f"stage bm={bm} warps={warps}", ["fft_rfft 1024x65536", "fft_fft 4096x4096"])
        # Radix-64 stages as one K step: persistent programs keeping the 128 KB table in shared memory.
        F._config = lambda k, n, rows: (64, 128, 128, 4, 2) if k == 128 else base_config(k, n, rows)
        run("radix-64 stage one tile (64, 128, 128, 4, 2)", ["fft_fft 4096x4096", "fft_fft 256x65536"])
        F._config = base_config
        for programs in (0, 132, 528):
            F.PROGRAMS = programs
            run(f"programs={programs}", ["fft_rfft 1024x65536", "fft_fft 256x65536"])
        F.PROGRAMS = base_programs
        for tiles in [(64, 128, 32, 4, 2), (128, 64, 32, 4, 3), (64, 128, 16, 4, 3), (256, 128, 32, 8, 2)]:
            F._config = lambda k, n, rows, t=tiles: t if k > 128 else base_config(k, n, rows)
            run(f"stft bm,bn,bk,warps,stages={tiles}", ["stft"])
        F._config = base_config
        F.PRECISION = "tf32x3"
        run("precision=tf32x3", ["fft_fft 4096x4096", "stft"])
        F.PRECISION = base_precision
        F.FUSE_UNPACK = False
        run("fuse_unpack=False", ["fft_rfft 1024x65536", "fft_rfft 16384x4096"])
    finally:
        F._config, F.PRECISION, F.FUSE_UNPACK, P.RADIX_MAX = base_config, base_precision, base_fuse, base_radix
        F.PROGRAMS = base_programs
        P.clear_caches()
