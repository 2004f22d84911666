"""The fusion patterns nbx-elementwise registers (data only: no Triton, no kernels).

``GELU_TANH``: the tanh approximation of GELU spelt out in elementwise ops, as GPT-2's
``NewGELUActivation`` (transformers' ``gelu_new``) writes it,
``0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x**3)))``, becomes one ``nbx::gelu_tanh``:
``aten::gelu(x, approximate="tanh")``, computed in float32 and rounded once where the chain rounds
each of its eight results to the input's dtype.
"""

from __future__ import annotations

import math

from nbx_core.registry.patterns import Pattern, arg, op

_x = arg("x")
_cubic = op("aten::add.Tensor", _x, op("aten::mul.Tensor", op("aten::pow.Tensor_Scalar", _x, 3.0), 0.044715))
_inner = op("aten::mul.Tensor", _cubic, math.sqrt(2.0 / math.pi))
GELU_TANH = Pattern(
    "nbx::gelu_tanh",
    op(
        "aten::mul.Tensor",
        op("aten::mul.Tensor", _x, 0.5),
        op("aten::add.Tensor", op("aten::tanh.default", _inner), 1.0),
    ),
    call=("x",),
)

PATTERNS = (GELU_TANH,)
