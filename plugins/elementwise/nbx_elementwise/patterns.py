"""The fusion patterns nbx-elementwise registers (data only: no Triton, no kernels).

``GELU_TANH``: the tanh approximation of GELU spelt out in elementwise ops, as GPT-2's
``NewGELUActivation`` (transformers' ``gelu_new``) writes it,
``0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x**3)))``, becomes one ``nbx::gelu_tanh``:
``aten::gelu(x, approximate="tanh")``, computed in float32 and rounded once where the chain rounds
each of its eight results to the input's dtype.

``ROTARY``: rotary position embedding as transformers' ``apply_rotary_pos_emb`` writes it (Llama,
Qwen2, Mistral), ``x * cos + cat((-x[..., half:], x[..., :half]), -1) * sin``, becomes one
``nbx::rotary(x, cos, sin, dim, half)``: two elementwise launches where the chain took four, each
half computed in float32 and rounded once.
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

_halves = (
    op("aten::neg.default", op("aten::slice.Tensor", _x, arg("dim"), arg("half"), 9223372036854775807)),
    op("aten::slice.Tensor", _x, arg("dim"), 0, arg("half")),
)
ROTARY = Pattern(
    "nbx::rotary",
    op(
        "aten::add.Tensor",
        op("aten::mul.Tensor", _x, arg("cos")),
        op("aten::mul.Tensor", op("aten::cat.default", list(_halves), -1), arg("sin")),
    ),
    call=("x", "cos", "sin", "dim", "half"),
)

PATTERNS = (GELU_TANH, ROTARY)
