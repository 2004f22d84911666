"""The fusion patterns nbx-norm registers (data only: no Triton, no kernels).

``RMS_NORM``: RMS normalisation as Llama, Qwen2 and Mistral write it in transformers
(``LlamaRMSNorm``): the input cast to float32, ``x * rsqrt(mean(x**2, -1, keepdim) + eps)`` cast back
to the input's dtype, times the weight. Eight nodes (one row reduction among them) become one
``nbx::rms_norm_cast(x, weight, eps, dtype)``, one pass over each row.
"""

from __future__ import annotations

from nbx_core.registry.patterns import Pattern, arg, dtype, op

_wide = op("aten::to.dtype", arg("x"), dtype("float32"))
_variance = op("aten::mean.dim", op("aten::pow.Tensor_Scalar", _wide, 2), [-1], True)
_normed = op("aten::mul.Tensor", _wide, op("aten::rsqrt.default", op("aten::add.Tensor", _variance, arg("eps"))))
RMS_NORM = Pattern(
    "nbx::rms_norm_cast",
    op("aten::mul.Tensor", arg("weight"), op("aten::to.dtype", _normed, arg("dtype"))),
    call=("x", "weight", "eps", "dtype"),
)

PATTERNS = (RMS_NORM,)
