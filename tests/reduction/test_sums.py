"""sum, mean, prod, trace, cumsum, cumprod and logcumsumexp against torch."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from nbx_reduction.engine import plan

from nbx_core.errors import NbxError
from nbx_core.testing import check_op, check_raises, from_torch, layouts, make, run_op

FLOATS = ["float32", "float16", "bfloat16", "float64"]
INTS = ["int32", "int64", "uint8", "int8", "bool"]
DIMS = [None, 0, -1, [0, 2], [1], [-1, 0], []]


@pytest.mark.parametrize("dtype", FLOATS + INTS)
def test_sum_dtypes(dtype: str) -> None:
    x = make((3, 4, 5), dtype)
    check_op("aten::sum", x)
    check_op("aten::sum.dim_IntList", x, [1], True)
    check_op("aten::sum.dim_IntList", x, [-1])


@pytest.mark.parametrize("dim", DIMS)
def test_sum_layouts(dim) -> None:
    for _, t in layouts(make((4, 3, 5))):
        check_op("aten::sum.dim_IntList", t, dim, False, rtol=1e-5, atol=1e-5)
        check_op("aten::sum.dim_IntList", t, dim, True, rtol=1e-5, atol=1e-5)


def test_sum_dtype_argument() -> None:
    x = make((3, 5), "float32", low=-3, high=3)
    for dt in (torch.float64, torch.float16, torch.int32, torch.bool, torch.int64):
        check_op("aten::sum", x, dtype=dt)
        check_op("aten::sum.dim_IntList", x, [0], dtype=dt)
    check_op("aten::sum.dim_IntList", make((3, 5), "int32"), [1], dtype=torch.float32)


def test_sum_edges() -> None:
    check_op("aten::sum", make((0, 3)))
    check_op("aten::sum.dim_IntList", make((0, 3)), [0])
    check_op("aten::sum.dim_IntList", make((0, 3)), [1], True)
    check_op("aten::sum", make((), "float32"))
    check_op("aten::sum.dim_IntList", make((), "int32"), [0], True)
    check_op("aten::sum.dim_IntList", torch.tensor([[1.0, float("nan")], [float("inf"), 2.0]]), [1])
    # Long rows and columns run the loop over blocks.
    check_op("aten::sum.dim_IntList", make((2, 2500)), [1], rtol=1e-5, atol=1e-4)
    check_op("aten::sum.dim_IntList", make((2500, 3)), [0], rtol=1e-5, atol=1e-4)
    assert run_op("aten::sum.int", [1, 2, 3]) == 6


@settings(max_examples=8, deadline=None)
@given(
    dims=st.lists(st.integers(-3, 2), max_size=3, unique_by=lambda d: d % 3),
    keepdim=st.booleans(),
    layout=st.integers(0, 3),
)
def test_sum_dims_hypothesis(dims, keepdim, layout) -> None:
    t = list(layouts(make((3, 4, 2))))[layout][1]
    check_op("aten::sum.dim_IntList", t, dims, keepdim, rtol=1e-5, atol=1e-5)
    check_op("aten::mean.dim", t, dims, keepdim)


@pytest.mark.parametrize("dtype", FLOATS)
def test_mean(dtype: str) -> None:
    x = make((4, 6), dtype)
    check_op("aten::mean", x)
    for dim in DIMS[:6]:
        check_op("aten::mean.dim", x if dim != [0, 2] else make((2, 3, 4), dtype), dim, True)
    check_op("aten::mean.dim", make((0, 3), dtype), [0])
    check_op("aten::mean.dim", make((4, 6), "int32"), [1], dtype=torch.float32)
    check_op("aten::mean", x, dtype=torch.float64)
    for _, t in layouts(x):
        check_op("aten::mean.dim", t, [0])


def test_mean_errors() -> None:
    check_raises("aten::mean", make((3,), "int32"), match="dtype")
    check_raises("aten::mean", make((3,), "bool"), match="dtype")
    check_raises("aten::mean", make((3,)), dtype=torch.int64, match="floating")
    check_raises("aten::mean.dim", make((3, 2)), [2], match="out of range")
    check_raises("aten::mean.dim", make((3, 2)), [0, -2], match="more than once")


@pytest.mark.parametrize("dtype", FLOATS + INTS)
def test_prod(dtype: str) -> None:
    x = make((3, 4), dtype, low=-2, high=3) if dtype != "bool" else make((3, 4), dtype)
    if dtype in ("float16", "bfloat16"):
        x = make((3, 4), dtype, low=0.5, high=1.5)
    check_op("aten::prod", x)
    check_op("aten::prod.dim_int", x, 1, True)
    check_op("aten::prod.dim_int", x, -2)
    for _, t in layouts(x):
        check_op("aten::prod.dim_int", t, 0)


def test_prod_edges() -> None:
    check_op("aten::prod", make((0,)))
    check_op("aten::prod.dim_int", make((2, 0)), 1)
    check_op("aten::prod", make((3, 4), "int32"), dtype=torch.float64)
    check_op("aten::prod.dim_int", make((3, 4)), 0, dtype=torch.float64)
    check_op("aten::prod", make(()))
    check_raises("aten::prod.dim_int", make((3, 4)), 2, match="dim=2")


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64", "int32", "uint8"])
def test_trace(dtype: str) -> None:
    # torch before 2.13 has no CPU trace for half types; the sum of the diagonal is the same value
    ref = (lambda t: t.diagonal().sum()) if dtype in ("float16", "bfloat16") else None
    for shape in ((4, 4), (3, 5), (5, 2), (0, 3)):
        x = make(shape, dtype)
        check_op("aten::trace", x, torch_fn=ref)
        check_op("aten::trace", x.t(), torch_fn=ref)


def test_trace_errors() -> None:
    check_raises("aten::trace", make((2, 2, 2)), match="matrix")
    check_raises("aten::trace", make((2, 2), "bool"), match="bool")


@pytest.mark.parametrize("dtype", FLOATS + ["int32", "int64", "bool", "uint8"])
def test_cumsum(dtype: str) -> None:
    x = make((3, 4, 5), dtype)
    for dim in (0, 1, 2, -1):
        check_op("aten::cumsum", x, dim)
    for _, t in layouts(make((4, 5), dtype)):
        check_op("aten::cumsum", t, 1)
        check_op("aten::cumsum", t, 0)


def test_cumsum_edges() -> None:
    check_op("aten::cumsum", make(()), 0)
    check_op("aten::cumsum", make((0, 3)), 1)
    check_op("aten::cumsum", make((2, 3000)), 1, rtol=1e-4, atol=1e-4)
    check_op("aten::cumsum", make((3, 4), "int32"), 1, dtype=torch.float32)
    check_op("aten::cumsum", make((3, 4)), 0, dtype=torch.float64)
    check_op("aten::cumsum", make((3, 4), "float16"), 1, dtype=torch.float32)
    check_op("aten::cumsum", torch.tensor([1.0, float("inf"), float("nan"), 2.0]), 0)
    check_raises("aten::cumsum", make((3, 4)), 2, match="out of range")


@pytest.mark.parametrize("dtype", FLOATS + ["int32", "int64", "bool"])
def test_cumprod(dtype: str) -> None:
    # Values near 1 (and small integers) so that products stay finite over the scanned lengths.
    x = make((3, 4, 5), dtype, low=-2, high=3) if dtype != "bool" else make((3, 4, 5), dtype)
    if x.is_floating_point():
        x = 1 + 0.3 * x
    for dim in (0, 1, 2, -1):
        check_op("aten::cumprod", x, dim)
    for _, t in layouts(x[0]):
        check_op("aten::cumprod", t, 1)
        check_op("aten::cumprod", t, 0)


def test_cumprod_edges() -> None:
    check_op("aten::cumprod", make(()), 0)
    check_op("aten::cumprod", make((0, 3)), 1)
    check_op("aten::cumprod", 1 + 0.001 * make((2, 3000)), 1, rtol=1e-4, atol=1e-4)  # the carry across blocks
    check_op("aten::cumprod", make((3, 4), "int32", low=-3, high=4), 1, dtype=torch.float32)
    check_op("aten::cumprod", torch.tensor([2.0, 0.0, float("inf"), float("nan"), -1.0]), 0)
    check_raises("aten::cumprod", make((3, 4)), 2, match="out of range")


@pytest.mark.parametrize("dtype", FLOATS)
def test_logcumsumexp(dtype: str) -> None:
    x = 20 * make((3, 4, 5), dtype)  # exp overflows float16 and bfloat16 here: the scan must not
    for dim in (0, 1, 2, -1):
        check_op("aten::logcumsumexp", x, dim)
    for _, t in layouts(x[0]):
        check_op("aten::logcumsumexp", t, 1)


def test_logcumsumexp_edges() -> None:
    inf, nan = float("inf"), float("nan")
    check_op("aten::logcumsumexp", torch.tensor([-inf, -inf, 0.0, inf, 1.0, inf]), 0)
    check_op("aten::logcumsumexp", torch.tensor([1.0, nan, 2.0]), 0)
    check_op("aten::logcumsumexp", make((2, 3000)), 1, rtol=1e-4, atol=1e-4)  # the carry across blocks
    check_op("aten::logcumsumexp", make(()), 0)
    check_op("aten::logcumsumexp", make((0, 3)), 0)
    check_raises("aten::logcumsumexp", make((3, 4), "int64"), 0, match="int64")


def test_bad_inputs() -> None:
    check_raises("aten::sum.dim_IntList", make((3, 4)), [3], match="dim=3")
    check_raises("aten::sum.dim_IntList", make((3, 4)), [1, 1], match="more than once")
    with pytest.raises(NbxError, match="complex"):
        run_op("aten::sum", make((3,), "complex64"))
    with pytest.raises(NbxError, match="NBXTensor"):
        run_op("aten::sum.dim_IntList", "x", [0])


@pytest.mark.parametrize("dim", [[2, 3], [1], [1, 2, 3], [0, 2]])
def test_channels_last_inputs_reduce_in_place(dim) -> None:
    # A channels-last (N, C, H, W) over H and W is (N, H*W, C) in place, with the values of torch.
    x = torch.randn(2, 6, 3, 5).contiguous(memory_format=torch.channels_last)
    # Reduced dims keep their logical order (a flat index of the arg ops counts in it), so C, H, W
    # of channels-last, stored H, W, C, is made contiguous first.
    in_place = plan(from_torch(x), tuple(sorted(d % 4 for d in dim))).order is None
    assert in_place == (dim != [1, 2, 3])
    check_op("aten::mean.dim", x, dim, False, rtol=1e-5, atol=1e-5)
    check_op("aten::sum.dim_IntList", x, dim, True, rtol=1e-5, atol=1e-5)
