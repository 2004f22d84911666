"""Registration of nbx-attention's ATen names (no Triton, no kernel imports)."""

from __future__ import annotations

from typing import Any

from nbx_core import hookimpl

_MODULES: dict[str, list[str]] = {
    "nbx_attention.softmax": [
        "aten::softmax", "aten::_softmax", "aten::_safe_softmax", "aten::log_softmax", "aten::_log_softmax",
    ],
    "nbx_attention.sdpa": [
        "aten::scaled_dot_product_attention",
        "aten::_scaled_dot_product_flash_attention",
        "aten::_scaled_dot_product_efficient_attention",
        "aten::_scaled_dot_product_cudnn_attention",
        "aten::_scaled_dot_product_flash_attention_for_cpu",
    ],
}

NAMES: tuple[str, ...] = tuple(n for names in _MODULES.values() for n in names)


@hookimpl
def nbx_register_kernels(registry: Any) -> None:
    """Register every softmax and attention op to its lazily imported wrapper."""
    registry.register_modules(_MODULES)
