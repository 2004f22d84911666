"""Logical and bitwise ops (including shifts) against torch."""

from __future__ import annotations

import pytest
import torch

from nbx_core.testing import check_op, check_raises, layouts, make

SPECIAL = torch.tensor(
    [float("nan"), float("inf"), float("-inf"), 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1e-7, 3.0, -3.0, 30.0, -30.0, 100.0]
)

LOGICAL = ("aten::logical_and", "aten::logical_or", "aten::logical_xor")
BITWISE = ("aten::bitwise_and", "aten::bitwise_or", "aten::bitwise_xor")
SHIFTS = ("aten::bitwise_left_shift", "aten::bitwise_right_shift")
ALL_DTYPES = ("float32", "float16", "bfloat16", "int32", "int8", "uint8", "int64", "bool")


@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("name", LOGICAL)
def test_logical(name, dtype):
    a = make((3, 1, 4), dtype, low=-1, high=2)
    b = make((5, 1), dtype, low=-1, high=2)
    check_op(name, a, b)
    check_op(name, a, make((4,), "float32", low=-1, high=1).round())


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_logical_not(dtype):
    check_op("aten::logical_not", make((3, 4), dtype, low=-1, high=2))


def test_logical_layouts_special():
    for _, t in layouts(make((3, 4), low=-1, high=1).round()):
        check_op("aten::logical_not", t)
        for name in LOGICAL:
            check_op(name, t, SPECIAL[:4])
    check_op("aten::logical_not", SPECIAL)
    check_op("aten::logical_and", make((0, 3)), make((3,)))
    check_op("aten::logical_or", make(()), make(()))


@pytest.mark.parametrize("dtype", ("int32", "int8", "uint8", "int64", "int16", "bool"))
@pytest.mark.parametrize("name", BITWISE)
def test_bitwise(name, dtype):
    a = make((3, 1, 4), dtype, low=0 if dtype == "uint8" else -100, high=100)
    b = make((5, 1), dtype, low=0 if dtype == "uint8" else -100, high=100)
    check_op(name, a, b)
    check_op(name, a, True if dtype == "bool" else 6)
    if dtype != "bool":
        check_op(name, 12, b)
    for _, t in layouts(make((3, 4), dtype)):
        check_op(name, t, t)


@pytest.mark.parametrize("dtype", ("int32", "int8", "uint8", "int64", "int16", "bool"))
def test_bitwise_not(dtype):
    for _, t in layouts(make((3, 4), dtype)):
        check_op("aten::bitwise_not", t)
    check_op("aten::bitwise_not", make((0,), dtype))


@pytest.mark.parametrize("dtype", ("int8", "uint8", "int16", "int32", "int64"))
@pytest.mark.parametrize("name", SHIFTS)
def test_shifts(name, dtype):
    lo = 0 if dtype == "uint8" else -100
    a = make((4, 8), dtype, low=lo, high=100)
    amounts = torch.tensor([0, 1, 3, 7, 8, 15, 31, 63], dtype=torch.int64).to(getattr(torch, dtype))
    check_op(name, a, amounts)
    check_op(name, a, 2)
    check_op(name, 5, amounts)
    if dtype != "uint8":
        check_op(name, a, -amounts)
    check_op(name, a.t(), make((4,), dtype, low=0, high=5))
    # A bool operand promotes with the integer one (torch shifts by 0 or 1, or shifts 0 or 1).
    check_op(name, a, make((8,), "bool"))
    check_op(name, make((4, 8), "bool"), amounts)
    check_op(name, a, True)


def test_bitwise_errors():
    for name in (*BITWISE, *SHIFTS, "aten::bitwise_not"):
        args = (make((3,)),) if name == "aten::bitwise_not" else (make((3,)), make((3,)))
        check_raises(name, *args, match="integer")
    check_raises("aten::bitwise_and", make((3,), "int32"), 1.5, match="integer")
    check_raises("aten::bitwise_left_shift", make((3,), "bool"), make((3,), "bool"), match="integer")
    check_raises("aten::logical_and", make((3,)), make((2,)), match="broadcast")


INTEGRAL = ("bool", "uint8", "int8", "int16", "int32", "int64")


@pytest.mark.parametrize("name", (*BITWISE, *SHIFTS))
def test_bitwise_dtype_pairs(name):
    # Every pair of integer and bool dtypes: torch's result dtype and values where torch takes the
    # pair, an NbxError where it refuses it (two bools for the shifts).
    fn = getattr(torch.ops.aten, name.split("::")[1]).Tensor
    for da, db in [(a, b) for a in INTEGRAL for b in INTEGRAL]:
        x, y = make((2, 3), da, low=0, high=7), make((3,), db, low=0, high=7, seed=1)
        try:
            fn(x, y)
        except RuntimeError:
            check_raises(name, x, y, match="integer")
            continue
        check_op(name, x, y)
