"""Comparisons, maximum/minimum, clamp family, where and masked_fill against torch."""

from __future__ import annotations

import pytest
import torch

from nbx_core.testing import assert_close, check_op, check_raises, from_torch, layouts, make, numeric, run_op

FLOATS = ("float32", "float16", "bfloat16")
SPECIAL = torch.tensor(
    [float("nan"), float("inf"), float("-inf"), 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1e-7, 3.0, -3.0, 30.0, -30.0, 100.0]
)

COMPARE = ("aten::eq", "aten::ne", "aten::lt", "aten::le", "aten::gt", "aten::ge")
EXTREMA = ("aten::maximum", "aten::minimum")


@pytest.mark.parametrize("dtype", (*FLOATS, "int32", "uint8", "bool"))
@pytest.mark.parametrize("name", COMPARE + EXTREMA)
def test_dtypes_broadcast(name, dtype):
    a = make((3, 1, 4), dtype, low=-2, high=2)
    b = make((5, 1), dtype, low=-2, high=2)
    check_op(name, a, b)
    check_op(name, a, a)


@pytest.mark.parametrize("name", COMPARE + EXTREMA)
def test_layouts_promotion_special(name):
    a, b = make((3, 4)), make((3, 4))
    for (_, x), (_, y) in zip(layouts(a), layouts(b), strict=True):
        check_op(name, x, y)
    check_op(name, make((0, 4)), make((4,)))
    check_op(name, make(()), make(()))
    check_op(name, make((6,), "int32"), make((6,), "float16"))
    check_op(name, make((6,), "float16"), torch.tensor(0.25, dtype=torch.float64))
    x, y = torch.meshgrid(SPECIAL, SPECIAL, indexing="ij")
    check_op(name, x, y)


@pytest.mark.parametrize("name", COMPARE)
def test_scalar_overload(name):
    i = make((8,), "int32", low=-3, high=3)
    check_op(name, i, 2)
    check_op(name, i, 1.5)
    check_op(name, make((8,), "bfloat16"), 0.1)
    check_op(name, make((8,), "bool"), True)


def test_extrema_reject_scalars():
    check_raises("aten::maximum", make((3,)), 2.0, match="other must be a tensor")
    check_raises("aten::minimum", make((3,)), make((4,)), match="broadcast")


@pytest.mark.parametrize("name", ("aten::clamp", "aten::clip"))
def test_clamp(name):
    x = make((4, 5))
    for lo, hi in ((-0.5, 0.5), (None, 0.2), (-0.1, None), (0.5, -0.5), (float("nan"), 1.0)):
        check_op(name, x, lo, hi)
    check_op(name, SPECIAL, -1.0, 2.0)
    for dt in ("float16", "bfloat16"):
        check_op(name, x.to(getattr(torch, dt)), -0.5, 0.5)
    i = make((4, 5), "int32")
    check_op(name, i, -3, 4)
    check_op(name, i, 0.5)
    check_op(name, x, make((5,)), make((4, 1)).abs())
    check_op(name, x, None, make((5,)))
    check_op(name, x.t(), make((4,)), None)
    check_op(name, make((0, 3)), 0.0, 1.0)
    check_op(name, make(()), -0.1, 0.1)
    check_raises(name, x, None, None, match="at least one")


def test_clamp_min():
    x = make((3, 4))
    check_op("aten::clamp_min", x, 0.1)
    check_op("aten::clamp_min", x, make((4,)))
    check_op("aten::clamp_min", make((3, 4), "int64"), 2)
    check_op("aten::clamp_min", x.to(torch.bfloat16), -0.2)
    check_op("aten::clamp_min", SPECIAL, 0.0)
    for _, t in layouts(x):
        check_op("aten::clamp_min", t, 0.0)


def test_where():
    c = make((3, 4), "bool")
    a, b = make((3, 4)), make((4,))
    check_op("aten::where", c, a, b)
    check_op("aten::where", c, a, 1.5)
    check_op("aten::where", c, 2, b)
    check_op("aten::where", c, 1.0, 2)
    check_op("aten::where", c, 1, 2)
    check_op("aten::where", c, a.half(), 1.0)
    check_op("aten::where", c, make((3, 4), "int32"), a.to(torch.bfloat16))
    check_op("aten::where", c[:, :1], a, b)
    check_op("aten::where", c.t().contiguous().t(), a.t().contiguous().t(), b)
    check_op("aten::where", make((0, 4), "bool"), make((0, 4)), b)
    check_op("aten::where", make((), "bool"), make(()), make(()))
    check_op("aten::where", c, make((3, 4), "bool"), make((3, 4), "bool"))
    check_raises("aten::where", make((3, 4), "float32"), a, b, match="condition has dtype float32, expected bool")
    check_raises("aten::where", c, a, make((5,)), match="broadcast")


@pytest.mark.skipif(not numeric(), reason="the indices' count is read back from the device")
def test_where_with_the_condition_alone_gives_its_indices():
    # torch.where(c) is where.default: nonzero(c).unbind(1), one index tensor per dim.
    for c in (make((3, 4), "bool"), make((2, 3, 5), "float32").gt(0.5), make((6,), "int32"), make((0, 3), "bool")):
        got, want = run_op("aten::where", from_torch(c)), torch.where(c)
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            assert_close(g, w)
    check_raises("aten::where", make((3, 4), "bool"), make((3, 4)), match="give both self and other, or neither")


def test_masked_fill():
    x = make((3, 4))
    m = make((3, 4), "bool")
    check_op("aten::masked_fill", x, m, 2.5)
    check_op("aten::masked_fill", x, m[0], -1)
    check_op("aten::masked_fill", x, m, torch.tensor(7.0))
    check_op("aten::masked_fill", x.to(torch.bfloat16), m, float("-inf"))
    check_op("aten::masked_fill", make((3, 4), "int32"), m, 2.5)
    check_op("aten::masked_fill", make((3, 4), "bool"), m, True)
    check_op("aten::masked_fill", x.t(), m.t(), 0.0)
    check_op("aten::masked_fill", make((0, 4)), make((4,), "bool"), 1.0)
    check_raises("aten::masked_fill", x, make((3, 4), "int32"), 1.0, match="mask has dtype int32, expected bool")
    check_raises("aten::masked_fill", x, m, torch.ones(2), match="0-dimensional")
    check_op("aten::masked_fill", x, make((2, 3, 4), "bool"), 1.0)
    check_raises("aten::masked_fill", x, make((2, 4), "bool"), 1.0, match="broadcast")


def test_clip_is_clamp():
    from nbx_elementwise import comparison

    assert comparison.clip is comparison.clamp
