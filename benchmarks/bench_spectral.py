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
