"""``aten::stft`` (both overloads) and ``aten::istft``.

stft: frame extraction, windowing and the n_fft-point DFT are one kernel launch (``fft.dft``):
row (b, t) of the matmul reads signal samples t * hop + j straight from the (padded) signal and
multiplies them by the window as it loads. ``center`` pads n_fft // 2 on both sides first
(``_pad_kernel``: reflect, constant, replicate or circular, as torch's ``pad_mode``). The output
is (batch, freq, frames) over (batch, frames, freq) memory, as torch lays it out.

istft: inverse DFT of every frame (the same matmul kernel), then ``_ola_kernel`` overlap-adds
the windowed frames and divides by the window envelope sum(w^2). The envelope depends only on the
window, so it is computed on the host (float64) and checked there: torch's NOLA condition, an
envelope below 1e-11 anywhere in the output, is an error before any kernel runs.
"""

from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path

import numpy as np
import triton
import triton.language as tl

from nbx_core import dtypes as D
from nbx_core.errors import NbxTypeError, NbxValueError, ShapeError
from nbx_core.ops import views
from nbx_core.ops.copy import contiguous, copy_
from nbx_core.runtime.launch import cdiv, launch
from nbx_core.runtime.tuning import Key, Tunable, bucket
from nbx_core.tensor import NBXTensor, check_device, empty_tensor
from nbx_core.tensor.args import COMPLEX, check_dtype, tensor_arg

from . import fft
from .transforms import fft_operand, scale_for

_PAD_MODES = {"constant": 0, "reflect": 1, "replicate": 2, "circular": 3}


@triton.jit
def _pad_kernel(x_ptr, y_ptr, L, LP, pad, sx_row, sx_el, MODE: tl.constexpr, P: tl.constexpr,
                BLOCK: tl.constexpr):
    # y[b, p] = x[b, src(p - pad)] for p < LP, P floats per sample (2 for complex).
    row = tl.program_id(0).to(tl.int64)
    e = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    p = e // P
    i = p - pad
    if MODE == 1:
        i = tl.abs(i)
        i = tl.where(i >= L, 2 * (L - 1) - i, i)
    elif MODE == 2:
        i = tl.minimum(tl.maximum(i, 0), L - 1)
    elif MODE == 3:
        i = (i % L + L) % L
    ok = (p < LP) & (i >= 0) & (i < L)
    v = tl.load(x_ptr + row * sx_row + i * sx_el + e % P, mask=ok, other=0.0)
    tl.store(y_ptr + row * LP * P + e, v, mask=e < LP * P)


@triton.jit
def _ola_kernel(f_ptr, w_ptr, env_ptr, y_ptr, T, n_fft, hop, start, expected, out_len, n_overlap,
                P: tl.constexpr, BLOCK: tl.constexpr):
    # y[b, i] = sum_t frame[b, t, g - t*hop] * w[g - t*hop] / env[g], g = start + i.
    row = tl.program_id(0).to(tl.int64)
    e = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    g = start + e // P
    live = (e < out_len * P) & (g < expected)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for r in range(n_overlap):
        t = g // hop - r
        j = g - t * hop
        ok = live & (t >= 0) & (t < T) & (j < n_fft)
        f = tl.load(f_ptr + (row * T + t) * n_fft * P + j * P + e % P, mask=ok, other=0.0)
        acc += f * tl.load(w_ptr + j, mask=ok, other=0.0)
    env = tl.load(env_ptr + g, mask=live, other=1.0)
    tl.store(y_ptr + row * out_len * P + e, tl.where(live, acc / env, 0.0), mask=e < out_len * P)


PAD = Tunable("spectral", "pad", {"BLOCK": "pow2"}, key=lambda n: Key({"N": bucket(n)}), rule=fft.block_rule(1024),
              interpreter=fft.block_rule(1 << 16), tables=Path(__file__).with_name("configs"))
"""Floats per program of ``_pad_kernel`` (stft's centering pad); the interpreter takes rows up to
65536 floats in one program. Argument: the floats of a padded row."""
OVERLAP_ADD = Tunable("spectral", "overlap_add", {"BLOCK": "pow2"},
                      key=lambda n, overlap: Key({"N": bucket(n), "overlap": bucket(overlap)}),
                      rule=fft.block_rule(1024), interpreter=fft.block_rule(1 << 16),
                      tables=Path(__file__).with_name("configs"))
"""Floats per program of ``_ola_kernel`` (istft's overlap-add), each summing ``overlap`` frames.
Arguments: the floats of an output row and the frames that overlap at a sample."""


def _checked_window(op: str, window: NBXTensor, win_length: int) -> NBXTensor:
    if window.dtype.is_complex:
        raise NbxTypeError(f"{op}: complex windows are not supported by NBX: pass a real float32 window")
    window = fft_operand(op, window, arg="window")
    if window.ndim != 1 or window.shape[0] != win_length:
        raise ShapeError(f"{op}: expected a 1D window tensor of size equal to win_length={win_length}, "
                         f"but got window with size {list(window.shape)}")
    return window


def _window(op: str, window: NBXTensor | None, n_fft: int, win_length: int, device) -> NBXTensor:
    """The length-n_fft float32 window: ``window`` (or ones) centred with zeros when win_length < n_fft.
    A given window stays on its device (no copy to the host, which would stall the queue each call)."""
    if window is None:
        return _ones_window(n_fft, win_length, device)
    window = _checked_window(op, window, win_length)
    if win_length == n_fft:
        return contiguous(window)
    full = empty_tensor((n_fft,), D.float32, device, zero=True)
    copy_(views.narrow(full, 0, (n_fft - win_length) // 2, win_length), window)
    return full


@lru_cache(maxsize=32)
def _ones_window(n_fft: int, win_length: int, device) -> NBXTensor:
    # Cached: an upload per call would wait for the queue as the host copy did.
    return _upload(_host_window(None, n_fft, win_length), device)


def _host_window(window: NBXTensor | None, n_fft: int, win_length: int) -> np.ndarray:
    """``_window`` on the host, for istft's envelope (read once per call, as its NOLA check must)."""
    left = (n_fft - win_length) // 2
    full = np.zeros(n_fft, dtype=np.float32)
    full[left:left + win_length] = 1.0 if window is None else np.asarray(window.numpy(), dtype=np.float32)
    return full


def _upload(arr: np.ndarray, device) -> NBXTensor:
    import nbx_core

    return nbx_core.tensor(arr, device=device)


def _lengths(op: str, n_fft: int, hop_length: int | None, win_length: int | None) -> tuple[int, int]:
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    if n_fft <= 0:
        raise NbxValueError(f"{op}: expected 0 < n_fft, but got n_fft={n_fft}")
    if hop <= 0:
        raise NbxValueError(f"{op}: expected hop_length > 0, but got hop_length={hop}")
    if not 0 < win <= n_fft:
        raise NbxValueError(f"{op}: expected 0 < win_length <= n_fft, but got win_length={win}")
    return hop, win


def _pad(x: NBXTensor, left: int, right: int, mode: str, config: Mapping[str, int] | None = None) -> NBXTensor:
    """``x`` (batch, length) padded by ``left`` and ``right`` samples as ``mode`` says; ``config``
    replaces :data:`PAD`'s lookup."""
    b, length = x.shape
    lp = length + left + right
    if mode not in _PAD_MODES:
        raise NbxValueError(f"stft: pad_mode must be one of {sorted(_PAD_MODES)}, got {mode!r}")
    if mode == "reflect" and max(left, right) >= length:
        raise NbxValueError(f"stft: reflect padding of {max(left, right)} needs a longer signal, got "
                            f"{length} samples: use a shorter n_fft, a longer signal or pad_mode='constant'")
    p = 2 if x.dtype.is_complex else 1
    y = empty_tensor((b, lp), x.dtype, x.device)
    block = PAD.choose(config, lp * p)["BLOCK"]
    launch(_pad_kernel, (b, cdiv(lp * p, block)), fft._floats(x), fft._floats(y),
           length, lp, left, x.stride(0) * p, x.stride(1) * p,
           MODE=_PAD_MODES[mode], P=p, BLOCK=block)
    return y


def _stft(self: NBXTensor, n_fft: int, hop_length: int | None, win_length: int | None,
          window: NBXTensor | None, center: bool, pad_mode: str, normalized: bool, onesided: bool | None,
          return_complex: bool | None, align_to_window: bool | None) -> NBXTensor:
    x = fft_operand("stft", self)
    check_device("stft", x, window)
    if x.ndim not in (1, 2):
        raise ShapeError(f"stft: expected a 1D or 2D tensor, got shape {list(x.shape)}")
    hop, win = _lengths("stft", n_fft, hop_length, win_length)
    is_complex = x.dtype.is_complex or (window is not None and window.dtype.is_complex)
    if return_complex is None:
        if not is_complex:
            raise NbxValueError("stft: stft requires the return_complex parameter be given for real inputs "
                                "(pass return_complex=True)")
        return_complex = True
    if align_to_window and center:
        raise NbxValueError("stft: align_to_window should only be set when center = false")
    onesided = not is_complex if onesided is None else onesided
    if onesided and is_complex:
        raise NbxValueError("stft: Cannot have onesided output if window or input is complex")
    w = _window("stft", window, n_fft, win, x.device)
    batched = x.ndim == 2
    sig = x if batched else views.unsqueeze(x, 0)
    if center:
        sig = _pad(sig, n_fft // 2, n_fft // 2, pad_mode)
    elif align_to_window:
        # Frames start where the window's non-zero part starts: t * hop - (n_fft - win) // 2.
        left = (n_fft - win) // 2
        sig = _pad(sig, left, n_fft - win - left, "constant")
    if sig.shape[1] < n_fft:
        raise NbxValueError(f"stft: expected 0 < n_fft <= {sig.shape[1]} (the padded signal length), "
                            f"but got n_fft={n_fft}")
    frames = 1 + (sig.shape[1] - n_fft) // hop
    b = sig.shape[0]
    n_freq = n_fft // 2 + 1 if onesided else n_fft
    out = empty_tensor((b, frames, n_freq), D.complex64, x.device)
    f = 2 if sig.dtype.is_complex else 1
    fft.dft(sig, out, kind="c2c" if sig.dtype.is_complex else "r2c", n=n_fft, n_out=n_freq, sign=-1,
            rows=b * frames, xa=(frames, sig.stride(0) * f, hop * sig.stride(1) * f, sig.stride(1) * f),
            ya=(1, 2 * n_freq, 0, 2), k_in=n_fft, freq=(0, 1, n_freq),
            scale=scale_for(1, n_fft) if normalized else 1.0, window=w)
    res = views.transpose(out, 1, 2)
    if not batched:
        res = views.squeeze(res, 0)
    return res if return_complex else views.view_as_real(res)


def stft(self: NBXTensor, n_fft: int, hop_length: int | None = None, win_length: int | None = None,
         window: NBXTensor | None = None, normalized: bool = False, onesided: bool | None = None,
         return_complex: bool | None = None, align_to_window: bool | None = None) -> NBXTensor:
    """``aten::stft`` (no centering): (batch?, freq, frames) complex64 (or its real view)."""
    return _stft(self, n_fft, hop_length, win_length, window, False, "reflect", normalized, onesided,
                 return_complex, align_to_window)


def stft_center(self: NBXTensor, n_fft: int, hop_length: int | None = None, win_length: int | None = None,
                window: NBXTensor | None = None, center: bool = True, pad_mode: str = "reflect",
                normalized: bool = False, onesided: bool | None = None, return_complex: bool | None = None,
                align_to_window: bool | None = None) -> NBXTensor:
    """``aten::stft.center``: as ``stft``, padding n_fft // 2 on both sides with ``pad_mode`` when ``center``."""
    return _stft(self, n_fft, hop_length, win_length, window, center, pad_mode, normalized, onesided,
                 return_complex, align_to_window)


def _envelope(w: np.ndarray, hop: int, frames: int, expected: int) -> np.ndarray:
    env = np.zeros(expected, dtype=np.float64)
    sq = w.astype(np.float64) ** 2
    for t in range(frames):
        env[t * hop:t * hop + len(w)] += sq
    return env


def istft(self: NBXTensor, n_fft: int, hop_length: int | None = None, win_length: int | None = None,
          window: NBXTensor | None = None, center: bool = True, normalized: bool = False,
          onesided: bool | None = None, length: int | None = None, return_complex: bool = False) -> NBXTensor:
    """``aten::istft``: least-squares inverse of ``stft`` (windowed overlap-add over the envelope)."""
    check_dtype("istft", tensor_arg("istft", self), "self", COMPLEX, fix="pass stft's complex output")
    check_device("istft", self, window)
    if self.ndim not in (2, 3):
        raise ShapeError(f"istft: expected a tensor with 2 or 3 dimensions of complex, got shape {list(self.shape)}")
    hop, win = _lengths("istft", n_fft, hop_length, win_length)
    batched = self.ndim == 3
    spec = self if batched else views.unsqueeze(self, 0)
    b, n_freq, frames = spec.shape
    onesided = n_freq != n_fft if onesided is None else onesided
    if onesided and n_freq != n_fft // 2 + 1:
        raise ShapeError(f"istft: expected the frequency dimension (3rd to the last) of the input tensor to "
                         f"match n_fft / 2 + 1 when onesided=True, but got {n_freq}")
    if not onesided and n_freq != n_fft:
        raise ShapeError(f"istft: expected the frequency dimension of the input tensor to match n_fft when "
                         f"onesided=False, but got {n_freq}")
    if return_complex and onesided:
        raise NbxValueError("istft: cannot have onesided output if window or input is complex "
                            "(pass onesided=False with return_complex=True)")
    if frames < 1:
        raise ShapeError("istft: the input has no frames")
    host_w = _host_window(None if window is None else _checked_window("istft", window, win), n_fft, win)
    w = _upload(host_w, spec.device)
    expected = n_fft + hop * (frames - 1)
    start = n_fft // 2 if center else 0
    end = start + length if length is not None else (expected - n_fft // 2 if center else expected)
    env = _envelope(host_w, hop, frames, expected)[start:min(end, expected)]
    if env.size and np.abs(env).min() < 1e-11:
        raise NbxValueError(f"istft: window overlap add min: {np.abs(env).min():.3g} (the window fails the "
                            "NOLA condition): use a window and hop_length whose squared overlap never vanishes")
    frame_rows = empty_tensor((b, frames, n_fft), D.complex64 if return_complex else D.float32,
                              spec.device)
    sx = (spec.stride(0) * 2, spec.stride(2) * 2, spec.stride(1) * 2)
    scale = scale_for(1 if normalized else 2, n_fft)
    if return_complex:
        fft.dft(spec, frame_rows, kind="c2c", n=n_fft, n_out=n_fft, sign=1, rows=b * frames,
                xa=(frames, *sx), ya=(1, 2 * n_fft, 0, 2), k_in=n_fft, freq=(0, 1, n_fft), scale=scale)
    else:
        _irfft_frames(spec, frame_rows, n_fft, frames, sx, scale)
    out_len = max(end - start, 0)
    y = empty_tensor((b, out_len), frame_rows.dtype, spec.device)
    env_full = np.ones(expected, dtype=np.float32)
    env_full[start:start + env.size] = env
    overlap_add(frame_rows, w, _upload(env_full, spec.device), y, hop, start)
    return y if batched else views.squeeze(y, 0)


def overlap_add(frame_rows: NBXTensor, w: NBXTensor, env: NBXTensor, y: NBXTensor, hop: int, start: int,
                config: Mapping[str, int] | None = None) -> None:
    """``y[b, i]``: the frames ``frame_rows`` (batch, frames, n_fft; contiguous) windowed by ``w``,
    overlap-added ``hop`` apart and divided by ``env`` (the whole signal's envelope), from sample
    ``start`` on; ``config`` replaces :data:`OVERLAP_ADD`'s lookup."""
    b, frames, n_fft = frame_rows.shape
    p = 2 if frame_rows.dtype.is_complex else 1
    out_len = y.shape[1]
    overlap = cdiv(n_fft, hop)
    block = OVERLAP_ADD.choose(config, out_len * p, overlap)["BLOCK"]
    launch(_ola_kernel, (b, cdiv(out_len * p, block)), fft._floats(frame_rows), w, env, fft._floats(y), frames,
           n_fft, hop, start, n_fft + hop * (frames - 1), out_len, overlap, P=p, BLOCK=block)


def _irfft_frames(spec: NBXTensor, out: NBXTensor, n_fft: int, frames: int, sx: tuple[int, int, int],
                  scale: float) -> None:
    """Real frames from the first n_fft // 2 + 1 bins of each (freq, frame) column of ``spec``."""
    n_half = n_fft // 2 + 1
    if fft.plan.plan_kind(n_fft) == "direct":
        fft.dft(spec, out, kind="c2r", n=n_fft, n_out=n_half, sign=1, rows=out.shape[0] * frames,
                xa=(frames, *sx), ya=(1, n_fft, 0, 1), k_in=n_half, freq=(0, 1, n_fft), scale=scale)
        return
    rows = views.reshape(views.transpose(views.narrow(spec, 1, 0, n_half), 1, 2), -1, n_half)
    fft.irfft_rows(rows, views.view(out, -1, n_fft), n=n_fft, scale=scale)
