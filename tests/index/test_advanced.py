"""Conformance of aten::index / index_put / index_put_ and of Python indexing on NBXTensors."""

import pytest
import torch

from nbx_core.errors import IndexOutOfRangeError, NbxTypeError
from nbx_core.runtime import checks
from nbx_core.testing import assert_close, check_op, check_raises, from_torch, layouts, make, numeric, run_op, to_torch

DTYPES = ["float32", "float16", "bfloat16", "int32", "bool"]
I = torch.tensor


@pytest.mark.parametrize("dtype", DTYPES)
def test_index(dtype):
    x = make((4, 5, 6), dtype)
    cases = [
        [I([0, 2, -1])],
        [None, I([4, 0])],
        [I([0, 2, 1]), None, I([1, 1, 5])],  # non-adjacent: the index dims move to the front
        [None, I([[1], [3]]), I([0, 2, -1])],  # broadcasting index shapes
        [I([[1, 0]]), I([[2], [3]], dtype=torch.int32)],
        [make((4, 5), "bool", seed=1)],
        [None, make((5, 6), "bool", seed=2)],
        [I([], dtype=torch.int64)],
    ]
    if numeric():  # on aot a mask has no true values, so it cannot broadcast with a 3-element index
        cases.append([I([True, False, True, True]), None, I([0, 5, 1])])
    for idx in cases:
        check_op("aten::index", x, idx)
    for _, t in layouts(x):
        check_op("aten::index", t, [None, I([1, 3]), I([0, 0])])


@pytest.mark.skipif(not numeric(), reason="index range checks read device results")
def test_index_errors():
    x = make((4, 5))
    e = check_raises("aten::index", x, [I([4])], match="out of bounds")
    assert isinstance(e, IndexOutOfRangeError) and "4" in str(e)
    check_raises("aten::index", x, [None, I([-6])], match="indices\\[1\\]")
    check_raises("aten::index", x, [I([0.5])], match="long, int, byte or bool")
    check_raises("aten::index", x, [I([True, False])], match="mask")
    check_raises("aten::index", x, [I([0]), I([0]), I([0])], match="too many")
    check_raises("aten::index", x, [I([0, 1]), I([0, 1, 2])], match="broadcast|shape")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put(dtype, accumulate):
    x = make((4, 5, 6), dtype)
    cases = [
        ([I([0, 2, -1])], make((3, 5, 6), dtype, seed=1)),
        ([None, I([4, 0, 4])], make((6,), dtype, seed=2)),  # broadcast values, duplicate index
        ([I([1, 1, 2]), None, I([0, 0, 4])], make((3, 5), dtype, seed=3)),
        ([None, I([[1], [3]]), I([0, 2, -1])], make((4, 2, 3), dtype, seed=4)),
        ([make((4, 5, 6), "bool", seed=5)], make((), dtype, seed=6)),
    ]
    for idx, v in cases:
        check_op("aten::index_put", x, idx, v, accumulate)
    check_op("aten::index_put", x.transpose(0, 2), [I([1, 1])], make((2, 5, 4), dtype, seed=7), accumulate)


def test_index_put_duplicates_last_wins():
    out = check_op("aten::index_put", torch.zeros(3), [I([1, 1, 1])], I([1.0, 2.0, 3.0]))
    if numeric():
        assert out.tolist() == [0.0, 3.0, 0.0]


def test_index_put_inplace():
    x = make((4, 5))
    ref = x.clone().index_put_([I([0, 3])], make((5,), seed=1), True)
    nx = from_torch(x)
    got = run_op("aten::index_put_", nx, [I([0, 3])], make((5,), seed=1), True)
    assert got is nx
    assert_close(nx, ref)


@pytest.mark.skipif(not numeric(), reason="index range checks read device results")
def test_index_put_errors():
    x = make((4, 5))
    check_raises("aten::index_put", x, [I([4])], make((5,)), match="out of bounds")
    check_raises("aten::index_put", x, [I([0])], make((5,), "float16"), match="dtype")
    check_raises("aten::index_put", x, [I([0, 1])], make((3, 5)), match="broadcast")
    nx = from_torch(x)
    with pytest.raises(IndexOutOfRangeError):
        run_op("aten::index_put_", nx, [I([0, 9])], make((2, 5)))
    assert_close(nx, x)  # nothing was written before the check


def test_python_indexing():
    x = make((4, 5, 6))
    nx = from_torch(x)
    idx = I([2, 0, -1])
    mask = x[:, :, 0] > 0
    assert_close(nx[from_torch(idx)], x[idx])
    assert_close(nx[from_torch(mask)], x[mask])
    assert_close(nx[[0, 2], :, [1, 1]], x[[0, 2], :, [1, 1]])
    assert_close(nx[1:, from_torch(I([0, 4]))], x[1:, I([0, 4])])
    v = make((3, 5, 6), seed=2)
    nx[from_torch(idx)] = from_torch(v)
    x[idx] = v
    assert_close(nx, x)
    nx[from_torch(mask)] = 0.5
    x[mask] = 0.5
    assert_close(nx, x)


def test_python_indexing_bad_index():
    nx = from_torch(make((4, 5)))
    with pytest.raises(NbxTypeError):
        nx[from_torch(I([0.5]))]
    if numeric():
        with pytest.raises(IndexOutOfRangeError):
            nx[from_torch(I([7]))]
            checks.verify()  # on a GPU the check is read at the next host wait
        assert to_torch(nx).shape == (4, 5)
