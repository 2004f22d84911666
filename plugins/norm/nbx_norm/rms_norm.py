"""``aten::rms_norm``: x * rsqrt(mean(x²) + eps) * weight over the trailing ``normalized_shape``.

Shares the row kernel of :mod:`nbx_norm.layer_norm`. With ``eps=None`` torch uses the machine
epsilon of the type it computes in (float32 for float16/bfloat16 and float32 input, float64 for
float64), not of the input's own dtype: NBX does the same. The output keeps the input's dtype
whatever the weight's (as torch does).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from nbx_core import dtypes as D
from nbx_core.tensor import NBXTensor

from .checks import check_input
from .layer_norm import row_norm


def rms_norm(input: NBXTensor, normalized_shape: Sequence[int], weight: NBXTensor | None = None,
             eps: float | None = None) -> NBXTensor:
    """``aten::rms_norm``; ``weight`` may be of another floating dtype (the output is the input's)."""
    x = check_input("rms_norm", input)
    if eps is None:
        eps = float(np.finfo(D.compute_dtype(x.dtype).np).eps)
    return row_norm("rms_norm", x, normalized_shape, weight, None, eps, rms=True, stats=False)[0]
