"""bincount against torch."""

from __future__ import annotations

import pytest
import torch

from nbx_core.testing import check_op, check_raises, layouts, make, numeric, run_op


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "int8", "int16"])
def test_bincount(dtype: str) -> None:
    x = make((40,), dtype, low=0, high=9)
    check_op("aten::bincount", x)
    check_op("aten::bincount", x, None, 15)
    check_op("aten::bincount", x, None, 3)
    for _, t in layouts(x):
        check_op("aten::bincount", t)


@pytest.mark.parametrize("wdtype", ["float32", "float64", "float16", "bfloat16", "int32"])
def test_bincount_weights(wdtype: str) -> None:
    x = make((30,), "int64", low=0, high=7)
    w = make((30,), wdtype)
    check_op("aten::bincount", x, w)
    check_op("aten::bincount", x, w, 10)
    for _, t in layouts(w):
        check_op("aten::bincount", x, t)


def test_bincount_edges() -> None:
    check_op("aten::bincount", torch.empty(0, dtype=torch.long))
    check_op("aten::bincount", torch.empty(0, dtype=torch.long), None, 4)
    check_op("aten::bincount", torch.tensor([3, 3, 3, 3]))
    check_op("aten::bincount", torch.tensor([0, 2]), torch.tensor([float("nan"), 1.0]))


def test_bincount_errors() -> None:
    if numeric():
        check_raises("aten::bincount", torch.tensor([0, -1, 2]), match="non-negative")
    check_raises("aten::bincount", torch.tensor([[0, 1]]), match="1-D")
    check_raises("aten::bincount", torch.tensor([0.0, 1.0]), match="integer")
    check_raises("aten::bincount", torch.tensor([True]), match="integer")
    check_raises("aten::bincount", torch.tensor([0, 1]), None, -1, match="minlength")
    check_raises("aten::bincount", torch.tensor([0, 1]), torch.tensor([1.0]), match="weights")


def test_bincount_aot_size_is_bounded() -> None:
    out = run_op("aten::bincount", torch.tensor([0, 5, 2]))
    assert out.shape[0] == (6 if numeric() else 1)
