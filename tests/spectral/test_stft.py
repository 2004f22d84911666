"""Conformance of stft (both overloads) and istft against torch (CPU)."""

from __future__ import annotations

import pytest
import torch

from nbx_core.errors import NbxTypeError, NbxValueError, ShapeError
from nbx_core.testing import assert_close, check_raises, layouts, make, run_op


def _stft(x, n_fft, **kw):
    return torch.stft(x, n_fft, **kw)


@pytest.mark.parametrize("kw", [
    dict(), dict(hop_length=3), dict(win_length=10), dict(normalized=True), dict(onesided=False),
    dict(pad_mode="constant"), dict(pad_mode="replicate"), dict(pad_mode="circular"), dict(center=False),
    dict(center=False, win_length=10, align_to_window=True),
])
def test_stft_center(kw, fft_check):
    x = make((2, 64))
    win = torch.hann_window(kw.get("win_length", 16))
    fft_check("aten::stft.center", x, 16, window=win, return_complex=True, n=16, **kw)


def test_stft_default_overload_and_layouts(fft_check):
    for _, x in layouts(make((3, 50))):
        fft_check("aten::stft", x, 12, 4, None, torch.hann_window(12), False, None, True, n=12)
    fft_check("aten::stft", make((50,)), 12, 5, 8, torch.ones(8), True, False, True, n=12)


def test_stft_window_none_real_view_and_complex_input(fft_check):
    x = make((40,))
    fft_check("aten::stft.center", x, 8, 2, return_complex=True, n=8)
    fft_check("aten::stft.center", x, 8, 2, window=torch.hann_window(8), return_complex=False, n=8)
    fft_check("aten::stft.center", make((2, 40), "complex64"), 8, 3, window=torch.hann_window(8),
              return_complex=True, n=8)


def test_stft_speech_frame(fft_check):
    # 400-point frames, hop 160, Hann: the shape Whisper-style front ends use.
    fft_check("aten::stft.center", make((1, 1600)), 400, 160, window=torch.hann_window(400),
              return_complex=True, n=400)


def test_stft_errors():
    x = make((2, 64))
    check_raises("aten::stft.center", x, 16, window=torch.hann_window(16), match="return_complex")
    check_raises("aten::stft.center", x, 16, window=torch.hann_window(10), return_complex=True,
                 match="win_length")
    check_raises("aten::stft.center", x, 0, return_complex=True, match="n_fft")
    check_raises("aten::stft.center", x, 16, 0, return_complex=True, match="hop_length")
    check_raises("aten::stft.center", make((2, 8)), 32, return_complex=True, match="reflect")
    check_raises("aten::stft", make((2, 8)), 16, return_complex=True, match="n_fft")
    check_raises("aten::stft.center", make((2, 3, 8)), 4, return_complex=True, match="1D or 2D")
    check_raises("aten::stft.center", x, 16, win_length=8, center=True, align_to_window=True,
                 return_complex=True, match="align_to_window")
    with pytest.raises(NbxTypeError, match="complex64 only"):
        run_op("aten::stft.center", make((2, 64), "float64"), 16, return_complex=True)


def _spec(n_fft=16, hop=4, win=None, onesided=True, length=64, batch=(2,)):
    w = torch.hann_window(n_fft if win is None else win)
    return torch.stft(make((*batch, length)), n_fft, hop, win, w, return_complex=True, onesided=onesided), w


@pytest.mark.parametrize("kw", [
    dict(), dict(length=60), dict(length=70), dict(normalized=True),
])
def test_istft(kw, fft_check):
    s, w = _spec()
    fft_check("aten::istft", s, 16, 4, window=w, n=16, **kw)


def test_istft_round_trip_and_options(fft_check):
    x = make((2, 64))
    w = torch.hann_window(16)
    s = torch.stft(x, 16, 4, window=w, return_complex=True)
    got = run_op("aten::istft", s, 16, 4, window=w, length=64)
    assert_close(got, x, atol=1e-5, rtol=1e-5)
    s1, w1 = _spec(win=12, batch=())
    fft_check("aten::istft", s1, 16, 4, 12, w1, n=16)
    s2, w2 = _spec(onesided=False)
    fft_check("aten::istft", s2, 16, 4, window=w2, onesided=False, n=16)
    fft_check("aten::istft", s2, 16, 4, window=w2, onesided=False, return_complex=True, n=16)
    fft_check("aten::istft", s, 16, 4, window=w + 0.1, center=False, n=16)
    for _, v in layouts(s1):
        fft_check("aten::istft", v, 16, 4, 12, w1, n=16)


def test_istft_errors():
    s, w = _spec()
    # Hann's first sample is 0, so without centering the envelope vanishes at the edge (NOLA).
    check_raises("aten::istft", s, 16, 4, window=w, center=False, match="NOLA")
    check_raises("aten::istft", s, 16, 4, window=torch.hann_window(12), match="win_length")
    check_raises("aten::istft", s, 16, 4, window=torch.zeros(16), match="NOLA")
    check_raises("aten::istft", s, 16, 4, window=w, return_complex=True, match="onesided")
    check_raises("aten::istft", s, 12, 4, match="n_fft")
    check_raises("aten::istft", s.real.contiguous(), 16, 4, window=w, match="complex")
    with pytest.raises(ShapeError):
        run_op("aten::istft", make((16,), "complex64"), 16)
    with pytest.raises(NbxValueError, match="hop_length"):
        run_op("aten::istft", s, 16, 0, window=w)
