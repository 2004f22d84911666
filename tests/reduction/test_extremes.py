"""amax, amin, max, min, argmax, argmin, all and any against torch."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from nbx_core.testing import check_op, check_raises, layouts, make, numeric, run_op, to_torch

FLOATS = ["float32", "float16", "bfloat16", "float64"]
INTS = ["int32", "int64", "uint8", "int8"]
NAN = float("nan")
INF = float("inf")


def _special() -> torch.Tensor:
    return torch.tensor([[1.0, NAN, 3.0, 3.0], [-INF, -INF, -INF, -INF], [2.0, 5.0, 5.0, -1.0], [INF, 0.0, NAN, INF]])


@pytest.mark.parametrize("dtype", FLOATS + INTS + ["bool"])
def test_amax_amin(dtype: str) -> None:
    x = make((3, 4, 5), dtype)
    for dim in ([], 0, [-1], [0, 2], [1, 0, 2]):
        check_op("aten::amax", x, dim)
        check_op("aten::amin", x, dim, True)
    for _, t in layouts(make((4, 5), dtype)):
        check_op("aten::amax", t, [0])
        check_op("aten::amin", t, [1])


def test_amax_nan_and_edges() -> None:
    check_op("aten::amax", _special(), [1])
    check_op("aten::amin", _special(), [0])
    check_op("aten::amax", _special())
    check_op("aten::amax", make((0, 3)), [1])
    check_op("aten::amax", make(()), [])
    check_op("aten::amin", make((2, 2500)), [1])
    check_op("aten::amin", make((2500, 3)), [0])
    check_raises("aten::amax", make((0, 3)), [0], match="non-zero size")
    check_raises("aten::amin", make((0,)), match="non-zero size")
    check_raises("aten::amax", make((2, 3)), [2], match="out of range")


@pytest.mark.parametrize("dtype", FLOATS + INTS)
def test_argmax_argmin(dtype: str) -> None:
    x = make((3, 4, 5), dtype)
    for dim in (None, 0, 1, -1):
        check_op("aten::argmax", x, dim)
        check_op("aten::argmin", x, dim, True)
    for _, t in layouts(make((4, 5), dtype)):
        check_op("aten::argmax", t, 0)
        check_op("aten::argmin", t, 1)
        check_op("aten::argmax", t)


def test_argmax_ties_nan_edges() -> None:
    ties = torch.tensor([[2, 7, 7, 1, 7], [3, 3, 3, 3, 3]], dtype=torch.int32)
    check_op("aten::argmax", ties, 1)
    check_op("aten::argmin", ties, 1)
    check_op("aten::argmax", ties.t().contiguous(), 0)
    check_op("aten::argmax", _special(), 1)
    check_op("aten::argmin", _special(), 1)
    check_op("aten::argmax", _special(), 0)
    check_op("aten::argmin", _special())
    check_op("aten::argmax", make((2, 2500)), 1)
    check_op("aten::argmin", make((2500, 3)), 0)
    check_op("aten::argmax", make(()), 0, True)
    check_op("aten::argmax", make((0, 3)), 1)
    check_op("aten::argmax", make((2, 3)), None, True)
    check_raises("aten::argmax", make((0, 3)), match="dim")
    check_raises("aten::argmin", make((0, 3)), 0, match="non-zero size")
    check_raises("aten::argmax", make((3,), "bool"), 0, match="bool")
    check_raises("aten::argmax", make((3,)), 1, match="out of range")


@pytest.mark.parametrize("dtype", FLOATS + INTS + ["bool"])
def test_max_min(dtype: str) -> None:
    x = make((3, 4, 5), dtype)
    check_op("aten::max", x)
    check_op("aten::min", x)
    for dim in (0, 1, -1):
        check_op("aten::max.dim", x, dim)
        check_op("aten::min.dim", x, dim, True)
    for _, t in layouts(make((4, 5), dtype)):
        check_op("aten::max.dim", t, 0)
        check_op("aten::min.dim", t, 1)
    check_op("aten::max.other", x, make((3, 4, 5), dtype, seed=1))
    check_op("aten::min.other", x, make((4, 5), dtype, seed=2))


def test_max_min_nan_edges_and_out() -> None:
    check_op("aten::max", _special())
    check_op("aten::min.dim", _special(), 1)
    check_op("aten::max.dim", _special(), 0)
    check_op("aten::max.other", _special(), _special().flip(0))
    check_op("aten::min.other", _special(), torch.tensor(2.0, dtype=torch.float64))
    check_op("aten::max.dim", make(()), 0, True)
    check_op("aten::min.dim", make((0, 3)), 1)
    check_raises("aten::max", make((0,)), match="dim")
    check_raises("aten::min.dim", make((0, 3)), 0, match="non-zero size")
    check_raises("aten::max.dim", make((2, 3)), 2, match="out of range")
    x = make((3, 4))
    values, indices = torch.empty(3), torch.empty(3, dtype=torch.long)
    got = run_op("aten::max.dim_max", x, 1, max=values, max_values=indices)
    if numeric():
        ref = torch.max(x, 1)
        assert torch.equal(to_torch(got[0]), ref.values) and torch.equal(to_torch(got[1]), ref.indices)


@pytest.mark.parametrize("dtype", FLOATS + ["int32", "uint8", "bool"])
def test_all_any(dtype: str) -> None:
    x = make((3, 4, 5), dtype)
    if dtype not in ("bool",):
        x = x * (make((3, 4, 5), "bool", seed=3)).to(x.dtype)
    for name in ("aten::all", "aten::any"):
        check_op(name, x)
        check_op(f"{name}.dim", x, 1, True)
        check_op(f"{name}.dims", x, [0, 2])
        check_op(f"{name}.dims", x, [])
        check_op(f"{name}.dims", x, None, True)
        for _, t in layouts(make((4, 5), dtype)):
            check_op(f"{name}.dim", t, 0)
            check_op(f"{name}.dims", t, [1])


def test_all_any_edges() -> None:
    for name in ("aten::all", "aten::any"):
        check_op(name, make((0, 3)))
        check_op(f"{name}.dim", make((0, 3)), 0)
        check_op(name, torch.tensor([NAN, 1.0]))
        check_op(name, make(()))
        check_op(f"{name}.dim", torch.zeros(2, 2500), 1)
        check_raises(f"{name}.dim", make((2, 3)), 2, match="out of range")
    assert run_op("aten::all.bool", [True, False]) is False
    assert run_op("aten::any.int", [0, 3]) is True


@settings(max_examples=8, deadline=None)
@given(dim=st.integers(-3, 2), keepdim=st.booleans(), layout=st.integers(0, 3))
def test_argmax_hypothesis(dim, keepdim, layout) -> None:
    t = list(layouts(make((3, 4, 2), "float16")))[layout][1]
    check_op("aten::argmax", t, dim, keepdim)
    check_op("aten::max.dim", t, dim, keepdim)
    check_op("aten::amin", t, [dim], keepdim)
