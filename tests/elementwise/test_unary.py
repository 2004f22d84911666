"""Unary math, rounding, sign, classification and nan_to_num against torch."""

from __future__ import annotations

import pytest
import torch

from nbx_core.testing import check_op, check_raises, layouts, make

FLOATS = ("float32", "float16", "bfloat16", "float64")
SPECIAL = torch.tensor(
    [float("nan"), float("inf"), float("-inf"), 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1e-7, 3.0, -3.0, 30.0, -30.0, 100.0]
)

# name -> (input transform keeping values in the op's domain, takes integer input, takes bool input)
UNARY = {
    "aten::abs": (None, True, False),
    "aten::neg": (None, True, False),
    "aten::exp": (None, True, True),
    "aten::exp2": (None, True, True),
    "aten::expm1": (lambda t: t * 1e-3, True, True),
    "aten::log": (lambda t: t.abs() + 0.1, True, True),
    "aten::log2": (lambda t: t.abs() + 0.1, True, True),
    "aten::log10": (lambda t: t.abs() + 0.1, True, True),
    "aten::log1p": (lambda t: t.abs() * 1e-4, True, True),
    "aten::sqrt": (lambda t: t.abs(), True, True),
    "aten::rsqrt": (lambda t: t.abs() + 0.1, True, True),
    "aten::reciprocal": (None, True, True),
    "aten::sin": (None, True, True),
    "aten::cos": (None, True, True),
    "aten::tan": (None, True, True),
    "aten::sinh": (None, True, True),
    "aten::cosh": (None, True, True),
    "aten::tanh": (None, True, True),
    "aten::asin": (lambda t: t.clamp(-1, 1), True, True),
    "aten::acos": (lambda t: t.clamp(-1, 1), True, True),
    "aten::atan": (lambda t: t * 4, True, True),
    "aten::asinh": (lambda t: t * 4, True, True),
    "aten::acosh": (lambda t: t.abs() + 1, True, True),
    "aten::atanh": (lambda t: t.clamp(-0.95, 0.95), True, True),
    "aten::erf": (None, True, True),
    "aten::sigmoid": (None, True, True),
    "aten::ceil": (lambda t: t * 4, True, False),
    "aten::floor": (lambda t: t * 4, True, False),
    "aten::trunc": (lambda t: t * 4, True, False),
    "aten::round": (lambda t: t * 4, True, False),
    "aten::sign": (None, True, True),
    "aten::isnan": (None, True, True),
    "aten::isinf": (None, True, True),
    "aten::isfinite": (None, True, True),
    "aten::nan_to_num": (None, True, True),
}


def _input(name: str, shape, dtype: str) -> torch.Tensor:
    fix = UNARY[name][0]
    t = make(shape, "float64" if dtype in FLOATS else dtype)
    if fix is not None and dtype in FLOATS:
        t = fix(t)
    return t.to(getattr(torch, dtype))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_float_dtypes(name, dtype):
    check_op(name, _input(name, (4, 6), dtype))


@pytest.mark.parametrize("name", sorted(UNARY))
def test_integer_and_bool_inputs(name):
    _, ints, bools = UNARY[name]
    for dtype in ("int32", "uint8", "int64"):
        if ints:
            check_op(name, _input(name, (9,), dtype).abs() if dtype == "uint8" else _input(name, (9,), dtype))
    if bools:
        check_op(name, make((7,), "bool"))
    else:
        check_raises(name, make((7,), "bool"), match=name)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_layouts_and_empty(name):
    for _, t in layouts(_input(name, (3, 4), "float32")):
        check_op(name, t)
    check_op(name, _input(name, (), "float32"))
    check_op(name, _input(name, (0, 3), "float32"))


@pytest.mark.parametrize("name", sorted(UNARY))
def test_special_values(name):
    check_op(name, SPECIAL)
    check_op(name, SPECIAL.to(torch.bfloat16))


def test_accuracy_near_zero_and_large():
    tiny = torch.tensor([1e-30, -1e-20, 1e-10, -1e-6, 3e-4, 1e-2])
    for name in (
        "aten::expm1",
        "aten::log1p",
        "aten::tanh",
        "aten::sinh",
        "aten::asinh",
        "aten::atanh",
        "aten::atan",
        "aten::asin",
        "aten::erf",
        "aten::tan",
        "aten::sin",
    ):
        check_op(name, tiny)
    big = torch.tensor([1e3, -1e5, 1e10, 1e20, -1e30, 3e38])
    for name in ("aten::atan", "aten::asinh", "aten::tanh"):
        check_op(name, big)
    check_op("aten::acosh", big.abs() + 1)
    check_op("aten::sinh", torch.tensor([50.0, -88.0, 89.0, 20.5]))
    check_op("aten::cosh", torch.tensor([50.0, -88.0, 89.0, 20.5]))
    edges = torch.tensor([1.0, -1.0, 0.999999, -0.999999, 0.5, -0.5])
    for name in ("aten::asin", "aten::acos", "aten::atanh"):
        check_op(name, edges)


def test_float64():
    x = make((11,), "float64")
    for name in ("aten::exp", "aten::atan", "aten::tanh", "aten::expm1", "aten::log1p", "aten::asinh", "aten::sin"):
        check_op(name, x)
    check_op("aten::acos", x.clamp(-1, 1))


def test_round_decimals():
    x = torch.tensor([1.2345, -2.5, 0.5, 1.5, 2.5, 123.456, -0.125, 1e-3])
    for decimals in (0, 1, 2, -1, -2):
        check_op("aten::round", x, decimals=decimals)
    check_op("aten::round", x.to(torch.float16), decimals=1)
    check_raises("aten::round", make((3,), "int32"), decimals=1, match="decimals")


def test_nan_to_num_arguments():
    for dtype in ("float32", "float16", "bfloat16", "float64"):
        x = SPECIAL.to(getattr(torch, dtype))
        check_op("aten::nan_to_num", x)
        check_op("aten::nan_to_num", x, nan=1.5, posinf=7.0, neginf=-9.0)
        check_op("aten::nan_to_num", x, 2.0)


def test_rejects_complex_and_non_tensors():
    z = torch.complex(make((3,)), make((3,)))
    from nbx_core.errors import NbxTypeError
    from nbx_core.testing import run_op

    with pytest.raises(NbxTypeError, match="aten::exp: self has dtype complex64"):
        run_op("aten::exp", z)
    with pytest.raises(NbxTypeError, match="self must be a tensor"):
        run_op("aten::sqrt", 2.0)
