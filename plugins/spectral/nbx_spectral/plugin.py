"""Registration of nbx-spectral's ATen names (no Triton, no kernel imports)."""

from __future__ import annotations

from typing import Any

from nbx_core import hookimpl

_MODULES: dict[str, list[str]] = {
    "nbx_spectral.transforms": [
        "aten::_fft_r2c",
        "aten::_fft_c2r",
        "aten::_fft_c2c",
        "aten::fft_rfft",
        "aten::fft_irfft",
        "aten::fft_fft",
        "aten::fft_ifft",
    ],
    "nbx_spectral.stft": ["aten::stft", "aten::istft"],
}

NAMES: tuple[str, ...] = (*(n for names in _MODULES.values() for n in names), "aten::stft.center")


@hookimpl
def nbx_register_kernels(registry: Any) -> None:
    """Register every spectral op to its lazily imported wrapper."""
    registry.register_modules(_MODULES)
    # stft.center puts `center, pad_mode` where the default overload has `normalized`.
    registry.register("aten::stft.center", "nbx_spectral.stft:stft_center")
