"""Conformance of sort, topk, nonzero, bucketize and isin."""

import pytest
import torch

from nbx_core.errors import NbxError
from nbx_core.testing import assert_close, check_op, check_raises, layouts, make, numeric, run_op, to_torch

SORT_DTYPES = ["float32", "float16", "bfloat16", "float64", "int32", "int64", "uint8", "bool"]


def _special(n: int) -> torch.Tensor:
    x = make((3, n))
    x[0, 5], x[0, 7], x[2, 4], x[2, 9] = float("nan"), float("nan"), float("inf"), -float("inf")
    x[1, ::3] = 0.0
    x[1, 1::3] = -0.0
    return x


@pytest.mark.parametrize("dtype", SORT_DTYPES)
def test_sort_stable(dtype):
    # 150 columns: several in-register chunks on the interpreter, so the merge passes run too.
    x = make((2, 40), dtype, low=-5, high=5) if dtype != "bool" else make((2, 40), dtype)
    for _, t in layouts(x):
        check_op("aten::sort.stable", t, stable=True)
    check_op("aten::sort.stable", x.t(), stable=True, dim=0, descending=True)
    _check_consistent(
        x, run_op("aten::sort.stable", x, stable=False, dim=-1, descending=True), torch.sort(x, -1, descending=True)
    )


def _check_consistent(x, got, ref, dim=-1):
    """Where torch's tie order is unspecified: values equal, and indices point at those values."""
    assert_close(got[0], ref[0])
    if numeric():
        assert_close(got[0], torch.gather(x, dim, to_torch(got[1])))


def test_sort_default_overload():
    x = make((4, 70))
    check_op("aten::sort", x)
    check_op("aten::sort", x, 0, True)
    check_op("aten::sort", make(()))
    check_op("aten::sort", make((0, 3)))
    check_op("aten::sort", make((2, 0)), 1)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float64"])
def test_sort_nan_and_signed_zero(dtype):
    x = _special(80).to(getattr(torch, dtype))
    for desc in (False, True):
        check_op("aten::sort.stable", x, stable=True, descending=desc)


def test_sort_errors():
    check_raises("aten::sort", make((3, 4)), 2, match="dim")


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int32", "int64"])
def test_topk(dtype):
    x = make((2, 60), dtype, low=-1000, high=1000)
    for _, t in layouts(x):
        _check_consistent(t, run_op("aten::topk", t, 5), torch.topk(t, 5))
    _check_consistent(x, run_op("aten::topk", x, 40, largest=False), torch.topk(x, 40, largest=False))
    _check_consistent(x.t(), run_op("aten::topk", x.t(), 3, 0), torch.topk(x.t(), 3, 0), 0)
    _check_consistent(x, run_op("aten::topk", x, 60), torch.topk(x, 60))
    check_op("aten::topk", x, 0)
    check_op("aten::topk", make((), dtype), 1)


def test_topk_ties_and_nan():
    x = torch.tensor([[1.0, 3.0, 3.0, float("nan"), 2.0, 3.0]])
    got = run_op("aten::topk", x, 3)
    ref = torch.topk(x, 3)
    assert_close(got[0], ref.values)
    if numeric():
        # Among equal values the earlier position comes first.
        assert to_torch(got[1]).tolist() == [[3, 1, 2]]
        vals = to_torch(got[0])
        assert_close(got[0], torch.gather(x, 1, to_torch(got[1])).to(vals.dtype))
    y = make((2, 50), "int32", low=0, high=3)
    ref = torch.sort(y, stable=True, dim=-1, descending=True)
    check_op("aten::topk", y, 7, sorted=False, torch_fn=lambda *a, **k: (ref[0][:, :7], ref[1][:, :7]))


def test_topk_errors():
    check_raises("aten::topk", make((3, 4)), 5, match="k=5")
    check_raises("aten::topk", make((3, 4)), 1, 2, match="dim")


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int32", "int64", "bool"])
def test_nonzero(dtype):
    x = make((3, 4, 5), dtype, low=-1, high=2)
    for _, t in layouts(x):
        check_op("aten::nonzero", t)
    check_op("aten::nonzero", make((), dtype, nonzero=True))
    check_op("aten::nonzero", make((5, 0), dtype))
    check_op("aten::nonzero", torch.zeros((4, 5), dtype=getattr(torch, dtype)))


@pytest.mark.parametrize("right", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int32", "int64"])
def test_bucketize(right, dtype):
    b = torch.tensor([-1, 0, 0, 2, 4]).to(getattr(torch, dtype))
    x = make((3, 5), dtype, low=-2, high=5)
    for _, t in layouts(x):
        check_op("aten::bucketize", t, b, right=right)
    check_op("aten::bucketize", x, b, right=right, out_int32=True)
    check_op("aten::bucketize", torch.arange(-2, 6).to(getattr(torch, dtype)), b, right=right)
    check_op("aten::bucketize", x, b.float(), right=right)
    check_op("aten::bucketize.Scalar", 0, b, right=right)
    check_op("aten::bucketize.Scalar", 2.5, b, right=right, out_int32=True)
    check_op("aten::bucketize", make((0,), dtype), b, right=right)
    check_op("aten::bucketize", x, b[:0], right=right)


def test_bucketize_nan_and_errors():
    b = torch.tensor([-1.0, 0.0, 2.0])
    for right in (False, True):
        check_op("aten::bucketize", torch.tensor([float("nan"), 1.0]), b, right=right)
    check_raises("aten::bucketize", make((3,)), make((2, 2)), match="1-D")


@pytest.mark.parametrize("right", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_searchsorted(right, dtype):
    seq = torch.tensor([-1, 0, 0, 2, 4]).to(getattr(torch, dtype))
    x = make((3, 5), dtype, low=-2, high=5)
    for _, t in layouts(x):
        check_op("aten::searchsorted", seq, t, right=right)  # one sorted sequence for every value
    check_op("aten::searchsorted", seq, x, side="right" if right else "left", out_int32=True)
    check_op("aten::searchsorted.Scalar", seq, 0, right=right)
    rows = torch.sort(make((3, 7), dtype, low=-3, high=3, seed=1), -1).values  # one sorted row per row of values
    check_op("aten::searchsorted", rows, x, right=right)
    check_op("aten::searchsorted", rows.t().contiguous().t(), x, right=right)  # a strided sorted_sequence
    batched = torch.sort(make((2, 3, 6), dtype, low=-3, high=3, seed=2), -1).values
    check_op("aten::searchsorted", batched, make((2, 3, 4), dtype, low=-4, high=4, seed=3), right=right)
    unsorted = make((3, 7), dtype, low=-3, high=3, seed=4)
    check_op("aten::searchsorted", unsorted, x, right=right, sorter=torch.argsort(unsorted, -1))
    check_op("aten::searchsorted", seq, make((0,), dtype), right=right)


def test_searchsorted_special_values_and_errors():
    seq = torch.tensor([-float("inf"), -1.0, 0.0, 0.0, 2.0, float("inf")])
    for right in (False, True):
        check_op("aten::searchsorted", seq, torch.tensor([float("nan"), -float("inf"), 0.0, -0.0, 9.0]), right=right)
    check_raises("aten::searchsorted", make((3, 4)), make((2, 4)), match="must agree in every dim but the last")
    check_raises("aten::searchsorted", make((4,)), make((3,)), side="middle", match="side must be 'left' or 'right'")
    check_raises("aten::searchsorted", make((4,)), make((3,)), right=True, side="left", match="disagree")


@pytest.mark.parametrize("invert", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float16", "int32", "int64"])
def test_isin(invert, dtype):
    e = make((4, 5), dtype, low=0, high=10)
    t = torch.tensor([3, 1, 7, 7, 100]).to(getattr(torch, dtype))
    for _, v in layouts(e):
        check_op("aten::isin", v, t, invert=invert)
    check_op("aten::isin", e, t.t(), invert=invert, assume_unique=True)
    check_op("aten::isin", e, t.double(), invert=invert)
    check_op("aten::isin.Tensor_Scalar", e, 3, invert=invert)
    check_op("aten::isin.Scalar_Tensor", 3, t, invert=invert)
    check_op("aten::isin", e, t[:0], invert=invert)
    check_op("aten::isin", make((0,), dtype), t, invert=invert)


def test_isin_nan():
    check_op("aten::isin", torch.tensor([1.0, float("nan"), 2.0]), torch.tensor([float("nan"), 2.0, float("nan")]))


def test_bad_dtypes():
    with pytest.raises(NbxError, match="bool"):
        run_op("aten::topk", make((3,), "bool"), 1)


@pytest.mark.parametrize("dtype", SORT_DTYPES)
def test_unique(dtype):
    # torch.unique is aten::_unique2: values ascending, each element's index among them, counts.
    x = make((3, 50), dtype, low=-6, high=6) if dtype != "bool" else make((3, 50), dtype)
    for _, t in layouts(x) if dtype == "float32" else [("contiguous", x)]:  # the layouts cost the same everywhere
        check_op("aten::_unique2", t, True, True, True)
    check_op("aten::_unique2", x, True, False, False)  # results not asked for are empty
    check_op("aten::_unique2", x, False, True, False)  # torch's CPU kernel sorts then too
    check_op("aten::_unique2", x[:1, :1], True, True, True)
    check_op("aten::_unique2", make((0, 3), dtype), True, True, True)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int64", "bool"])
def test_unique_consecutive(dtype):
    x = make((4, 30), dtype, low=0, high=3) if dtype != "bool" else make((4, 30), dtype)
    for _, t in layouts(x):
        check_op("aten::unique_consecutive", t, True, True)
    check_op("aten::unique_consecutive", x)
    check_op("aten::unique_consecutive", make((0,), dtype), True, True)
    check_op("aten::unique_consecutive", _special(20).to(getattr(torch, dtype)) if dtype != "bool" else x, True, True)
    # Runs of equal slices along a dim: rows repeated so that runs exist.
    rows = x[torch.tensor([0, 0, 1, 2, 2, 2, 3, 1])]
    for dim in (0, -2):
        check_op("aten::unique_consecutive", rows, True, True, dim)
    check_op("aten::unique_consecutive", rows.t(), True, True, 1)
    check_op("aten::unique_consecutive", rows.reshape(2, 4, 30), False, True, 1)
    check_op("aten::unique_consecutive", make((2, 0, 3), dtype), True, True, 1)


def test_unique_nan_is_never_equal_to_nan():
    for dtype in (torch.float32, torch.bfloat16, torch.float16):  # every NaN its own value; -0.0 equals 0.0
        check_op("aten::_unique2", _special(40).to(dtype), True, True, True)
    check_raises("aten::_unique2", make((4,), "complex64"), match="complex input has no order")
