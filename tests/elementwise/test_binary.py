"""Binary arithmetic against torch: promotion, broadcasting, layouts, overloads and keywords."""

from __future__ import annotations

import pytest
import torch

from nbx_core.errors import DeviceError
from nbx_core.registry import get_registry
from nbx_core.testing import check_op, check_raises, from_torch, layouts, make, on_other_device

FLOATS = ("float32", "float16", "bfloat16")
SPECIAL = torch.tensor(
    [float("nan"), float("inf"), float("-inf"), 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1e-7, 3.0, -3.0, 30.0, -30.0, 100.0]
)

# name -> (keyword variants, takes integers, takes bool, needs a nonzero divisor)
BINARY = {
    "aten::add": ([{}, {"alpha": 2}, {"alpha": -0.5}], True, True, False),
    "aten::sub": ([{}, {"alpha": 3}], True, False, False),
    "aten::rsub": ([{}, {"alpha": 2}], True, False, False),
    "aten::mul": ([{}], True, True, False),
    "aten::div": ([{}, {"rounding_mode": "trunc"}, {"rounding_mode": "floor"}], True, False, True),
    "aten::floor_divide": ([{}], True, False, True),
    "aten::remainder": ([{}], True, False, True),
    "aten::fmod": ([{}], True, False, True),
    "aten::pow": ([{}], True, False, False),
    "aten::atan2": ([{}], True, True, False),
}


def _kw(kws, integral):
    return [k for k in kws if not (integral and isinstance(k.get("alpha"), float))]


def _pair(name, shape_a, shape_b, dtype):
    a = make(shape_a, dtype)
    b = make(shape_b, dtype, nonzero=True)
    if name == "aten::pow":
        if dtype in FLOATS:
            a = a.abs() + 0.1
        else:
            a, b = a % 5, b.abs() % 4
    return a, b


@pytest.mark.parametrize("dtype", (*FLOATS, "int32", "int64", "uint8", "int8"))
@pytest.mark.parametrize("name", sorted(BINARY))
def test_dtypes_and_broadcast(name, dtype):
    kws, ints, _, _ = BINARY[name]
    if dtype not in FLOATS and not ints:
        return
    if dtype == "uint8" and name in ("aten::sub", "aten::rsub", "aten::pow"):
        return
    a, b = _pair(name, (3, 1, 4), (5, 1), dtype)
    for kw in _kw(kws, dtype not in FLOATS):
        check_op(name, a, b, **kw)


@pytest.mark.parametrize("name", sorted(BINARY))
def test_layouts_empty_and_0dim(name):
    kws = BINARY[name][0]
    a, b = _pair(name, (3, 4), (3, 4), "float32")
    for (_, x), (_, y) in zip(layouts(a), layouts(b), strict=True):
        for kw in kws:
            check_op(name, x, y, **kw)
    check_op(name, *_pair(name, (0, 4), (4,), "float32"))
    check_op(name, *_pair(name, (), (), "float32"))


@pytest.mark.parametrize("name", sorted(BINARY))
def test_promotion(name):
    kws, ints, bools, nz = BINARY[name]
    f16 = make((6,), "float16", nonzero=True).abs() + 0.5
    i32 = make((6,), "int32", nonzero=True).abs() % 4 + 1
    cases = [
        (f16, torch.tensor(2.5, dtype=torch.float64)),
        (i32, torch.tensor(1.5)),
        (i32, f16),
        (f16, make((6,), "bfloat16", nonzero=True)),
        (i32, make((6,), "int64", nonzero=True).abs() % 3 + 1),
    ]
    if bools:
        cases.append((make((6,), "bool"), make((6,), "bool")))
        cases.append((make((6,), "bool"), i32))
    for a, b in cases:
        for kw in _kw(kws, not (a.is_floating_point() or b.is_floating_point())):
            check_op(name, a, b, **kw)


@pytest.mark.parametrize("name", sorted(n for n in BINARY if n != "aten::atan2"))
def test_scalar_overloads(name):
    kws, ints, _, _ = BINARY[name]
    x = make((2, 5), "float32", nonzero=True).abs() + 0.5
    i = make((2, 5), "int64", nonzero=True).abs() % 5 + 1
    for s in (2, 2.5, -3):
        for kw in _kw(kws, False):
            check_op(name, x, s, **kw)
            check_op(name, x.to(torch.bfloat16), s, **kw)
        if ints and not (name == "aten::pow" and s < 0):
            for kw in _kw(kws, isinstance(s, int)):
                check_op(name, i, s, **kw)


def test_special_values():
    a, b = torch.meshgrid(SPECIAL, SPECIAL, indexing="ij")
    for name in (
        "aten::add",
        "aten::mul",
        "aten::div",
        "aten::remainder",
        "aten::fmod",
        "aten::pow",
        "aten::atan2",
        "aten::floor_divide",
    ):
        check_op(name, a, b)
    check_op("aten::div", a, b, rounding_mode="trunc")
    check_op("aten::div", a, b, rounding_mode="floor")


def test_division_signs():
    a = torch.tensor([7, -7, 7, -7, 0, 5, -6])
    b = torch.tensor([2, 2, -2, -2, 3, -5, 4])
    for name in ("aten::remainder", "aten::fmod", "aten::floor_divide"):
        check_op(name, a, b)
        check_op(name, a.float(), b.float())
        check_op(name, a.to(torch.int8), b.to(torch.int8))
    for mode in ("trunc", "floor"):
        check_op("aten::div", a, b, rounding_mode=mode)
        check_op("aten::div", a.float() / 3, b.float(), rounding_mode=mode)
    check_op("aten::div", a, b)
    check_op("aten::remainder", 5, b)
    check_op("aten::remainder", -5.5, b.float())


def test_pow_overloads_and_integers():
    base = torch.tensor([2, -3, 1, -1, 0, 5, 7], dtype=torch.int64)
    exp = torch.tensor([10, 3, -4, -3, 0, 3, 40])
    check_op("aten::pow", base, exp)
    check_op("aten::pow", base.to(torch.int8), exp.to(torch.int8))
    check_op("aten::pow", base, 3)
    check_op("aten::pow", 2, exp.abs())
    check_op("aten::pow", 2.5, exp.abs())
    check_op("aten::pow", 3, make((2, 3)))
    check_op("aten::pow", make((6,), "bool"), 2)
    check_op("aten::pow", make((6,), "bool"), True)  # itself, and all True to False: bool results
    check_op("aten::pow", make((6,), "bool"), False)
    neg = torch.tensor([-2.0, -2.0, -0.0, -0.0, -8.0, -1.0])
    check_op("aten::pow", neg, torch.tensor([3.0, 0.5, -1.0, 2.0, 1 / 3, float("inf")]))
    check_op("aten::pow", make((5,), "float64").abs(), make((5,), "float64"))
    check_raises("aten::pow", base, -1, match="negative integer powers")
    check_raises("aten::pow", make((3,), "bool"), make((3,), "bool"), match="bool")


def test_lerp():
    a, b = make((3, 4)), make((3, 4))
    for w in (0.0, 0.3, 0.5, 1.0, -1.5, 2):
        check_op("aten::lerp", a, b, w)
    check_op("aten::lerp", a, b, make((4,)))
    check_op("aten::lerp", a[:, ::2], b.t().contiguous().t()[:, 1::2], torch.rand(3, 2))
    for dt in ("float16", "bfloat16"):
        check_op("aten::lerp", a.to(getattr(torch, dt)), b.to(getattr(torch, dt)), make((3, 4), dt))
    check_op("aten::lerp", make((0, 4)), make((4,)), 0.5)
    check_raises("aten::lerp", a, b.double(), 0.5, match="expected dtype")
    check_raises("aten::lerp", make((3,), "int32"), make((3,), "int32"), 0.5, match="floating")


def test_addcmul_addcdiv():
    s, a, b = make((3, 1)), make((4,)), make((3, 4), nonzero=True)
    for value in (1, 0.5, -2):
        check_op("aten::addcmul", s, a, b, value=value)
        check_op("aten::addcdiv", s, a, b, value=value)
    i = make((3, 4), "int32")
    check_op("aten::addcmul", i, i, i, value=2)
    check_op("aten::addcmul", s.half(), a.half(), b.half())
    check_op("aten::addcdiv", s.to(torch.bfloat16), a.to(torch.bfloat16), b.to(torch.bfloat16), value=0.5)
    check_raises("aten::addcdiv", s, i, i.abs() + 1, match="integer division")
    check_op("aten::addcmul", s, a, b.t().contiguous().t())
    check_raises("aten::addcdiv", i, i, i, match="integer division")
    check_op("aten::addcmul", i, i, i, value=2.7)


def test_errors():
    x = make((2, 3))
    check_raises("aten::add", x, make((4,)), match="broadcast")
    check_raises("aten::add", make((3,), "int32"), make((3,), "int32"), alpha=0.5, match="alpha")
    check_raises("aten::sub", make((3,), "bool"), make((3,), "bool"), match="logical_xor")
    check_raises("aten::rsub", make((3,), "bool"), make((3,), "bool"), match="bool")
    check_raises("aten::div", x, x, rounding_mode="round", match="rounding_mode")
    check_raises("aten::remainder", make((3,), "bool"), make((3,), "bool"), match="bool")
    check_raises("aten::atan2", x, 2.0, match="other must be a tensor")


def test_mixed_devices_are_refused():
    a = from_torch(make((3,)))
    b = on_other_device(from_torch(make((3,))))
    with pytest.raises(DeviceError, match="aten::add"):
        get_registry().call("aten::add", a, b)
