"""Activations against torch: dtypes, layouts, keywords, special values, glu's dim."""

from __future__ import annotations

import math

import pytest
import torch

from nbx_core.testing import check_op, check_raises, layouts, make, numeric, run_op, to_torch

FLOATS = ("float32", "float16", "bfloat16")
SPECIAL = torch.tensor(
    [float("nan"), float("inf"), float("-inf"), 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1e-7, 3.0, -3.0, 30.0, -30.0, 100.0]
)

# name -> keyword variants (each changes the result)
ACTIVATIONS = {
    "aten::relu": [{}],
    "aten::gelu": [{}, {"approximate": "tanh"}],
    "aten::silu": [{}],
    "aten::mish": [{}],
    "aten::hardsigmoid": [{}],
    "aten::hardswish": [{}],
    "aten::hardtanh": [{}, {"min_val": -0.3, "max_val": 0.7}],
    "aten::leaky_relu": [{}, {"negative_slope": 0.2}],
    "aten::elu": [{}, {"alpha": 0.5, "scale": 2.0, "input_scale": 1.5}],
    "aten::celu": [{}, {"alpha": 2.0}],
    "aten::selu": [{}],
    "aten::softplus": [{}, {"beta": 2.0, "threshold": 1.0}],
    "aten::log_sigmoid": [{}],
}
INTEGER_OK = ("aten::relu", "aten::hardtanh")


@pytest.mark.parametrize("dtype", (*FLOATS, "float64"))
@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_dtypes_and_keywords(name, dtype):
    x = make((4, 6), dtype, low=-4, high=4)
    for kw in ACTIVATIONS[name]:
        check_op(name, x, **kw)


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_layouts_special_empty(name):
    for _, t in layouts(make((3, 4), low=-4, high=4)):
        check_op(name, t)
    if name == "aten::gelu":
        # torch's CPU kernel gives NaN for gelu(+inf); the limit (and torch's CUDA kernel) is inf.
        check_op(name, SPECIAL[SPECIAL != float("inf")])
        check_op(name, SPECIAL[SPECIAL != float("inf")], approximate="tanh")
        check_op(name, torch.tensor([float("inf")]), torch_fn=lambda t: t.clone())
    else:
        check_op(name, SPECIAL)
    check_op(name, make(()))
    check_op(name, make((0, 5)))


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_integer_inputs(name):
    i = make((8,), "int32")
    if name in INTEGER_OK:
        check_op(name, i)
    else:
        check_raises(name, i, match="floating")
    check_raises(name, make((3,), "bool"), match="bool" if name in INTEGER_OK else "floating")


def test_threshold():
    x = make((4, 5))
    for th, v in ((0.0, 0.0), (0.3, -2.0), (-1, 5)):
        check_op("aten::threshold", x, th, v)
    check_op("aten::threshold", SPECIAL, 1.0, 20.0)
    check_op("aten::threshold", make((6,), "int64"), 2, -7)
    check_op("aten::threshold", x.to(torch.bfloat16).t(), 0.1, 0.0)
    check_op("aten::threshold", make((0,)), 0.1, 0.0)
    check_raises("aten::threshold", make((3,), "bool"), 0, 1, match="bool")


def test_gelu_and_hardtanh_errors():
    check_raises("aten::gelu", make((3,)), approximate="fast", match="approximate")
    check_raises("aten::hardtanh", make((3,), "uint8"), match="unsigned")


def test_glu():
    x = make((4, 6, 2))
    for dim in (0, 1, 2, -1, -2, -3):
        check_op("aten::glu", x, dim)
    check_op("aten::glu", x.transpose(0, 1), 1)
    for dt in ("float16", "bfloat16"):
        check_op("aten::glu", make((2, 8), dt))
    check_op("aten::glu", make((0, 4)))
    check_raises("aten::glu", make((3, 5)), match="even")
    check_raises("aten::glu", x, 3, match="out of range")
    check_raises("aten::glu", x, -4, match="out of range")
    check_raises("aten::glu", make(()), match="0-dim")
    check_raises("aten::glu", make((2, 4), "int32"), match="floating")


@pytest.mark.skipif(not numeric(), reason="compares computed values")
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_gelu_half_is_correctly_rounded(dtype):
    # The half types' erfc form against float64: torch's own 1 + erf(z) loses the negative tail.
    x = torch.linspace(-12, 12, 20001, dtype=torch.float64).to(dtype)
    exact = x.double() * 0.5 * torch.special.erfc(-x.double() / math.sqrt(2))
    got = to_torch(run_op("aten::gelu", x)).double()
    want = exact.to(dtype).double()
    off = got != want
    assert off.sum().item() <= 2, x[off]
    # Where rounding differs, the exact value lies within a hair of the midpoint: one ulp at most.
    assert ((got - exact).abs()[off] <= (want - exact).abs()[off] * 1.01 + 1e-30).all()
