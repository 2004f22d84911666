"""Registration of nbx-conv's ATen names (no Triton, no kernel imports)."""

from __future__ import annotations

from typing import Any

from nbx_core import hookimpl

_MODULES: dict[str, list[str]] = {
    "nbx_conv.convolution": [
        "aten::convolution",
        "aten::conv1d",
        "aten::conv2d",
        "aten::conv3d",
        "aten::conv_transpose1d",
        "aten::conv_transpose2d",
        "aten::conv_transpose3d",
        "aten::_conv_depthwise2d",
    ],
    "nbx_conv.im2col": ["aten::im2col", "aten::col2im", "aten::unfold_backward"],
    "nbx_conv.pooling": [
        "aten::avg_pool1d",
        "aten::avg_pool2d",
        "aten::avg_pool3d",
        "aten::max_pool2d",
        "aten::max_pool2d_with_indices",
        "aten::max_pool3d",
        "aten::max_pool3d_with_indices",
        "aten::adaptive_avg_pool1d",
        "aten::adaptive_avg_pool2d",
        "aten::_adaptive_avg_pool2d",
        "aten::_adaptive_avg_pool3d",
        "aten::adaptive_max_pool1d",
        "aten::adaptive_max_pool2d",
        "aten::adaptive_max_pool3d",
    ],
    "nbx_conv.upsample": [
        "aten::upsample_nearest1d",
        "aten::upsample_nearest2d",
        "aten::upsample_nearest3d",
        "aten::_upsample_nearest_exact1d",
        "aten::_upsample_nearest_exact2d",
        "aten::upsample_bilinear2d",
        "aten::upsample_linear1d",
        "aten::_upsample_bilinear2d_aa",
        "aten::_upsample_bicubic2d_aa",
    ],
    "nbx_conv.grid_sample": ["aten::grid_sampler_2d", "aten::grid_sampler_3d"],
}

NAMES: tuple[str, ...] = tuple(n for names in _MODULES.values() for n in names)


@hookimpl
def nbx_register_kernels(registry: Any) -> None:
    """Register every nbx-conv op to its lazily imported wrapper."""
    registry.register_modules(_MODULES)
