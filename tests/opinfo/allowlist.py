"""OpInfo samples NBX answers differently from torch on purpose, each with the reason.

A key is (OpInfo entry, ATen call); ``dtypes`` (None: every dtype) and ``match`` (a regex the
failure must match) narrow it. A listed call that does not fail is reported too, so an entry
cannot outlive the divergence it describes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Divergence:
    """Why NBX's answer to these calls differs from torch's."""

    reason: str
    match: str
    dtypes: tuple[str, ...] | None = None

    def covers(self, failure: str) -> bool:
        """Whether ``failure`` is the divergence described, not some other error of the same call."""
        return re.search(self.match, failure) is not None


_SDPA_DROPOUT = Divergence(
    "NBX runs inference: scaled_dot_product_attention refuses dropout_p > 0 with an NbxValueError "
    "(nbx_attention/sdpa.py) rather than drawing torch's random stream",
    match=r"dropout_p=",
)
_INT_CONV = Divergence(
    "nbx-conv takes the dtypes torch's CUDA kernels take: convolution and average pooling of integers exist in "
    "torch's CPU kernels only, so NBX refuses them before any launch (cast to a floating type)",
    match=r"dtype int64",
    dtypes=("int64",),
)
_UINT8_LINEAR = Divergence(
    "nbx-conv takes the dtypes torch's CUDA kernels take: bilinear/linear upsampling and antialiased resizing of "
    "uint8 images are torch CPU-only paths with their own fixed-point rounding; NBX refuses uint8 there (nearest "
    "modes take it)",
    match=r"dtype uint8",
    dtypes=("uint8",),
)

ALLOWED: dict[tuple[str, str], Divergence] = {
    ("nn.functional.scaled_dot_product_attention", "aten::scaled_dot_product_attention"): _SDPA_DROPOUT,
    ("nn.functional.conv1d", "aten::conv1d"): _INT_CONV,
    ("nn.functional.conv1d", "aten::conv1d.padding"): _INT_CONV,
    ("nn.functional.conv2d", "aten::conv2d"): _INT_CONV,
    ("nn.functional.conv3d", "aten::conv3d"): _INT_CONV,
    ("nn.functional.conv3d", "aten::conv3d.padding"): _INT_CONV,
    ("nn.functional.conv_transpose1d", "aten::conv_transpose1d"): _INT_CONV,
    ("nn.functional.conv_transpose2d", "aten::conv_transpose2d.input"): _INT_CONV,
    ("nn.functional.conv_transpose3d", "aten::conv_transpose3d.input"): _INT_CONV,
    ("nn.functional.avg_pool1d", "aten::avg_pool1d"): _INT_CONV,
    ("nn.functional.avg_pool2d", "aten::avg_pool2d"): _INT_CONV,
    ("nn.functional.avg_pool3d", "aten::avg_pool3d"): _INT_CONV,
    ("nn.functional.interpolate.bilinear", "aten::upsample_bilinear2d.vec"): _UINT8_LINEAR,
    ("_upsample_bilinear2d_aa", "aten::_upsample_bilinear2d_aa.vec"): _UINT8_LINEAR,
}


def divergence(entry: str, call: str, dtype: str) -> Divergence | None:
    """The allow-list entry for one call of one OpInfo entry in one dtype, if any."""
    found = ALLOWED.get((entry, call))
    return found if found is not None and (found.dtypes is None or dtype in found.dtypes) else None
