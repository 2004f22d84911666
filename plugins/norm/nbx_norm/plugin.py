"""Registration of nbx-norm's ATen names (no Triton, no kernel imports)."""

from __future__ import annotations

from typing import Any

from nbx_core import hookimpl

from .patterns import PATTERNS

_MODULES: dict[str, list[str]] = {
    "nbx_norm.layer_norm": ["aten::native_layer_norm", "aten::layer_norm"],
    "nbx_norm.rms_norm": ["aten::rms_norm", "nbx::rms_norm_cast"],
    "nbx_norm.group_norm": ["aten::native_group_norm", "aten::group_norm"],
    "nbx_norm.batch_norm": [
        "aten::batch_norm",
        "aten::native_batch_norm",
        "aten::_native_batch_norm_legit",
        "aten::_native_batch_norm_legit_no_training",
        "aten::cudnn_batch_norm",
    ],
    "nbx_norm.weight_norm": ["aten::_weight_norm", "aten::_weight_norm_interface"],
}

NAMES: tuple[str, ...] = tuple(n for names in _MODULES.values() for n in names)


@hookimpl
def nbx_register_kernels(registry: Any) -> None:
    """Register every normalisation op to its lazily imported wrapper."""
    registry.register_modules(_MODULES)
    for pattern in PATTERNS:
        registry.register_pattern(pattern)
