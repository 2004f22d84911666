"""Conformance of gather, index_select, scatter*, index_add, masked_scatter, masked_select and embedding(_bag)."""

import warnings

import pytest
import torch

from nbx_core.errors import IndexOutOfRangeError, NbxError
from nbx_core.testing import check_op, check_raises, layouts, make, numeric, run_op

DTYPES = ["float32", "float16", "bfloat16", "int32", "bool"]
needs_values = pytest.mark.skipif(not numeric(), reason="index range checks read device results")

warnings.filterwarnings("ignore", message="The reduce argument of torch.scatter")


@pytest.mark.parametrize("dtype", DTYPES)
def test_index_select(dtype):
    x = make((4, 5), dtype)
    for _, t in layouts(x):
        check_op("aten::index_select", t, 1, torch.tensor([4, 0, 2, 2]))
        check_op("aten::index_select", t, -2, torch.tensor([3, 1], dtype=torch.int32))
    check_op("aten::index_select", x, 0, torch.tensor(2))
    check_op("aten::index_select", x, 0, torch.tensor([], dtype=torch.int64))
    check_op("aten::index_select", make((), dtype), 0, torch.tensor([0]))


@needs_values
def test_index_select_errors():
    x = make((4, 5))
    e = check_raises("aten::index_select", x, 1, torch.tensor([5]), match="index")
    assert isinstance(e, IndexOutOfRangeError) and "5" in str(e)
    check_raises("aten::index_select", x, 1, torch.tensor([-1]), match="out of bounds")
    check_raises("aten::index_select", x, 1, torch.tensor([1.0]), match="int64")
    check_raises("aten::index_select", x, 2, torch.tensor([1]), match="dim")


@pytest.mark.parametrize("dtype", DTYPES)
def test_gather(dtype):
    x = make((4, 5), dtype)
    for _, t in layouts(x):
        check_op("aten::gather", t, 1, make((3, 4), "int64", low=0, high=5))
        check_op("aten::gather", t, -2, make((4, 5), "int64", low=0, high=4).t().contiguous().t())
    check_op("aten::gather", make((), dtype), 0, torch.tensor(0))
    check_op("aten::gather", x, 1, torch.tensor([[1, 0]], dtype=torch.int32))
    check_op("aten::gather", x, 0, torch.zeros((0, 5), dtype=torch.int64))


def test_empty_index_of_any_dtype():
    # torch checks the index dtype of gather and scatter only when the index has elements.
    x = make((3, 4))
    for dtype in ("uint8", "int16", "bool"):
        empty = torch.empty(0, 4, dtype=getattr(torch, dtype))
        check_op("aten::gather", x, 0, empty)
        check_op("aten::scatter.src", x, 0, empty, make((3, 4), seed=1))
        check_op("aten::scatter.value", x, 1, empty, 2.0)
        check_op("aten::scatter_reduce.two", x, 0, empty, make((3, 4), seed=1), "sum")
    check_raises("aten::gather", x, 0, torch.zeros(1, 4, dtype=torch.uint8), match="int")


@needs_values
def test_gather_errors():
    x = make((4, 5))
    check_raises("aten::gather", x, 1, torch.tensor([[7]]), match="out of bounds")
    check_raises("aten::gather", x, 1, torch.tensor([[1.0]]), match="int64")


@pytest.mark.parametrize("dtype", DTYPES)
def test_scatter_overloads(dtype):
    x = make((5, 4), dtype)
    idx = make((3, 4), "int64", low=0, high=5, seed=3)
    src = make((4, 4), dtype, seed=1)
    for _, t in layouts(x):
        check_op("aten::scatter", t, 0, idx, src)
        check_op("aten::scatter.value", t, -2, idx, True if dtype == "bool" else 2)
        check_op("aten::scatter_add", t, 0, idx, src)
    if dtype != "bool":
        for red in ("add", "multiply"):
            check_op("aten::scatter.reduce", x, 0, idx, src, reduce=red)
            check_op("aten::scatter.value_reduce", x, 0, idx, 3, reduce=red)
    check_op("aten::scatter", make((), dtype), 0, torch.tensor(0), make((), dtype, seed=2))
    check_op("aten::scatter", x, 1, torch.zeros((0, 4), dtype=torch.int64), src)


def test_scatter_duplicates_last_write_wins():
    x = torch.zeros(3)
    out = check_op("aten::scatter", x, 0, torch.tensor([1, 1, 1]), torch.tensor([1.0, 2.0, 3.0]))
    if numeric():
        assert out.tolist() == [0.0, 3.0, 0.0]


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int32"])
def test_scatter_reduce(reduce, include_self, dtype):
    x = make((5, 4), dtype)
    idx = make((5, 3), "int64", low=0, high=4, seed=3)
    src = make((5, 4), dtype, seed=1)
    check_op("aten::scatter_reduce", x, 1, idx, src, reduce, include_self=include_self)
    check_op("aten::scatter_reduce", x.t(), -2, idx.t(), src.t(), reduce, include_self=include_self)


def test_scatter_reduce_nan():
    x = torch.tensor([1.0, 2.0, 3.0])
    src = torch.tensor([float("nan"), 5.0, -1.0])
    for red in ("amax", "amin"):
        check_op("aten::scatter_reduce", x, 0, torch.tensor([0, 0, 2]), src, red)


@needs_values
def test_scatter_errors():
    x = make((5, 4))
    idx = torch.tensor([[5]])
    check_raises("aten::scatter", x, 0, idx, make((1, 1)), match="out of bounds")
    check_raises("aten::scatter_add", x, 0, torch.tensor([[-1]]), make((1, 1)), match="out of bounds")
    check_raises("aten::scatter", x, 0, torch.tensor([[1.0]]), make((1, 1)), match="int64")
    check_raises("aten::scatter", x, 0, torch.tensor([[1]]), make((1, 1), "float16"), match="dtype")
    check_raises("aten::scatter_reduce", x, 0, torch.tensor([[1]]), make((1, 1)), "median", match="reduce")


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int32"])
def test_index_add(dtype):
    x = make((4, 5), dtype)
    for _, t in layouts(x):
        check_op("aten::index_add", t, 1, torch.tensor([1, 1, 4]), make((4, 3), dtype, seed=2))
        check_op("aten::index_add", t, 0, torch.tensor([3, 0], dtype=torch.int32), make((2, 5), dtype, seed=3), alpha=2)
    if dtype == "float32":
        check_op("aten::index_add", x, -1, torch.tensor([0, 0]), make((4, 2), seed=4), alpha=-0.5)
    check_op("aten::index_add", make((), dtype), 0, torch.tensor([0]), make((), dtype, seed=5))


@needs_values
def test_index_add_errors():
    x = make((4, 5))
    check_raises("aten::index_add", x, 1, torch.tensor([5]), make((4, 1)), match="out of bounds")
    check_raises("aten::index_add", x, 1, torch.tensor([0]), make((4, 2)), match="shape")


@pytest.mark.parametrize("dtype", DTYPES)
def test_masked_select(dtype):
    x = make((3, 4), dtype)
    m = make((3, 4), "bool", seed=1)
    for _, t in layouts(x):
        check_op("aten::masked_select", t, m)
    check_op("aten::masked_select", x, m[0])  # the mask broadcast over self's rows
    check_op("aten::masked_select", x[0], m)  # self broadcast over the mask's rows
    check_op("aten::masked_select", make((), dtype), torch.tensor(True))
    check_op("aten::masked_select", x, torch.zeros((3, 4), dtype=torch.bool))  # nothing selected
    check_op("aten::masked_select", make((0, 4), dtype), torch.zeros((0, 4), dtype=torch.bool))
    check_raises("aten::masked_select", x, make((3, 4), "uint8"), match="mask must be bool, got uint8")
    check_raises("aten::masked_select", x, make((2, 4), "bool"), match="broadcast")


@pytest.mark.parametrize("dtype", DTYPES)
def test_masked_scatter(dtype):
    x = make((3, 4), dtype)
    m = make((3, 4), "bool", seed=1)
    s = make((13,), dtype, seed=2)
    for _, t in layouts(x):
        check_op("aten::masked_scatter", t, m, s)
    check_op("aten::masked_scatter", x, m[0], make((2, 8), dtype, seed=3))
    check_op("aten::masked_scatter", make((), dtype), torch.tensor(True), make((2,), dtype))
    check_op("aten::masked_scatter", make((0, 4), dtype), torch.zeros((0, 4), dtype=torch.bool), s)


@needs_values
def test_masked_scatter_errors():
    x = make((3, 4))
    check_raises("aten::masked_scatter", x, torch.ones(3, 4, dtype=torch.bool), make((5,)), match="source")
    check_raises("aten::masked_scatter", x, torch.ones(3, 4, dtype=torch.int64), make((12,)), match="bool")


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_embedding(dtype):
    w = make((10, 6), dtype)
    idx = torch.tensor([[1, 2, 2], [9, 0, 2]])
    for _, t in layouts(w):
        check_op("aten::embedding", t, idx)
    check_op("aten::embedding", w, idx.t(), 2)
    check_op("aten::embedding", w, torch.tensor(3, dtype=torch.int32))
    check_op("aten::embedding", w, torch.zeros((0, 2), dtype=torch.int64))


@needs_values
def test_embedding_errors():
    w = make((10, 6))
    e = check_raises("aten::embedding", w, torch.tensor([10]), match="indices")
    assert "aten::embedding" in str(e) and "10" in str(e)
    check_raises("aten::embedding", w, torch.tensor([1.0]), match="int64")
    check_raises("aten::embedding", w, torch.tensor([-1]), match="out of bounds")


@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("padding_idx", [-1, 2])
def test_embedding_bag(mode, padding_idx):
    w = make((10, 6))
    idx = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9])
    check_op("aten::_embedding_bag", w, idx, torch.tensor([0, 4, 4]), False, mode, False, None, False, padding_idx)
    check_op("aten::_embedding_bag", w, idx, torch.tensor([0, 3, 8]), False, mode, False, None, True, padding_idx)
    check_op(
        "aten::_embedding_bag",
        w.t().contiguous().t(),
        idx.int(),
        torch.tensor([0, 1], dtype=torch.int32),
        False,
        mode,
        False,
        None,
        False,
        padding_idx,
    )


def test_embedding_bag_weights_and_dtypes():
    idx = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9])
    off = torch.tensor([0, 4])
    check_op("aten::_embedding_bag", make((10, 6)), idx, off, False, 0, False, make((8,), seed=4), False, -1)
    for dt in ("float16", "bfloat16"):
        check_op(
            "aten::_embedding_bag", make((10, 6), dt), idx, off, False, 1, False, None, False, -1, atol=2e-2, rtol=2e-2
        )


@needs_values
def test_embedding_bag_errors():
    w = make((10, 6))
    with pytest.raises(IndexOutOfRangeError, match="aten::_embedding_bag"):
        run_op("aten::_embedding_bag", w, torch.tensor([11]), torch.tensor([0]), False, 0, False, None, False, -1)
    with pytest.raises(NbxError, match="per_sample_weights"):
        run_op("aten::_embedding_bag", w, torch.tensor([1]), torch.tensor([0]), False, 1, False, make((1,)), False, -1)
