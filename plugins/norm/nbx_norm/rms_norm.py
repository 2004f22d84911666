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
from nbx_core.registry import get_registry
from nbx_core.tensor import NBXTensor
from nbx_core.tensor.args import FLOATING, tensor_arg

from .layer_norm import row_norm


def rms_norm_cast(x: NBXTensor, weight: NBXTensor, eps: float, dtype: D.DType) -> NBXTensor:
    """``nbx::rms_norm_cast``: ``weight * (x32 * rsqrt(mean(x32**2, -1) + eps)).to(dtype)`` with
    ``x32 = x.to(float32)``, transformers' RMSNorm (:mod:`nbx_norm.patterns`), in one pass over each
    row: float32 throughout, rounded once. Where the result would not be ``x``'s dtype (a weight
    or ``dtype`` of another type), the ops run one by one, as the graph spelt them."""
    x = tensor_arg("rms_norm_cast", x, "input", dtypes=FLOATING)
    dtype = D.as_dtype(dtype)
    if dtype is x.dtype and weight.dtype is x.dtype and weight.shape == x.shape[-1:] and x.dtype.is_floating_point:
        return row_norm("rms_norm_cast", x, [x.shape[-1]], weight, None, float(eps), rms=True, stats=False)[0]
    wide = x.to(D.float32)
    variance = call("aten::mean.dim", call("aten::pow.Tensor_Scalar", wide, 2), [-1], True)
    normed = call("aten::mul.Tensor", wide, call("aten::rsqrt.default", call("aten::add.Tensor", variance, eps)))
    return call("aten::mul.Tensor", weight, normed.to(dtype))


def rms_norm(
    input: NBXTensor, normalized_shape: Sequence[int], weight: NBXTensor | None = None, eps: float | None = None
) -> NBXTensor:
    """``aten::rms_norm``; ``weight`` may be of another floating dtype (the output is the input's)."""
    x = tensor_arg("rms_norm", input, "input", dtypes=FLOATING)
    if eps is None:
        eps = float(np.finfo(D.compute_dtype(x.dtype).np).eps)
    return row_norm("rms_norm", x, normalized_shape, weight, None, eps, rms=True, stats=False)[0]


def call(name: str, *args: object) -> NBXTensor:
    return get_registry().call(name, *args)
