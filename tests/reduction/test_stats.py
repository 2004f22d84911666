"""var, std, norm, linalg_vector_norm and logsumexp against torch."""

from __future__ import annotations

import pytest
import torch

from nbx_core.testing import check_op, check_raises, layouts, make

FLOATS = ["float32", "float16", "bfloat16", "float64"]
NAN = float("nan")
INF = float("inf")
ORDS = [0, 1, 2, 3, 0.5, -1, -2.5, INF, -INF]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", ["aten::var", "aten::std"])
def test_var_std(name: str, dtype: str) -> None:
    x = make((3, 4, 5), dtype)
    check_op(name, x)
    check_op(name, x, False)
    check_op(f"{name}.dim", x, [1], True, True)
    check_op(f"{name}.dim", x, [0, 2], False)
    check_op(f"{name}.dim", x, None)
    check_op(f"{name}.correction", x, [-1], correction=0)
    check_op(f"{name}.correction", x, [0], correction=2, keepdim=True)
    check_op(f"{name}.correction", x, correction=0.5)
    check_op(f"{name}.correction", x, [])
    for _, t in layouts(make((4, 5), dtype)):
        check_op(f"{name}.dim", t, [0])
        check_op(f"{name}.correction", t, [1], correction=0)


@pytest.mark.parametrize("name", ["aten::var", "aten::std"])
def test_var_std_edges(name: str) -> None:
    check_op(name, make(()))
    check_op(f"{name}.dim", make((1, 3)), [0])
    check_op(f"{name}.correction", make((3, 2)), [0], correction=3)
    check_op(f"{name}.dim", make((0, 3)), [0])
    check_op(f"{name}.dim", make((2, 2500)) + 100.0, [1], rtol=1e-5, atol=1e-5)
    check_op(f"{name}.dim", make((2500, 2)), [0], rtol=1e-5, atol=1e-5)
    check_op(f"{name}.dim", torch.tensor([[1.0, NAN], [INF, 1.0], [2.0, 3.0]]), [1])
    check_raises(name, make((3,), "int32"), match="floating")
    check_raises(f"{name}.dim", make((3, 2)), [2], match="out of range")


@pytest.mark.parametrize("dtype", FLOATS)
def test_linalg_vector_norm(dtype: str) -> None:
    x = make((3, 4, 5), dtype)
    for ord in ORDS:
        check_op("aten::linalg_vector_norm", x, ord)
        check_op("aten::linalg_vector_norm", x, ord, [1], True)
        check_op("aten::linalg_vector_norm", x, ord, [0, -1])
    for _, t in layouts(make((4, 5), dtype)):
        check_op("aten::linalg_vector_norm", t, 2, [0])
        check_op("aten::linalg_vector_norm", t, 1, 1)


def test_linalg_vector_norm_edges() -> None:
    x = torch.tensor([[0.0, 3.0, -4.0], [0.0, 0.0, 0.0], [NAN, 1.0, 2.0], [INF, -1.0, 0.0]])
    for ord in ORDS:
        check_op("aten::linalg_vector_norm", x, ord, [1])
    check_op("aten::linalg_vector_norm", make((3, 4), "float16"), 2, [1], dtype=torch.float32)
    check_op("aten::linalg_vector_norm", make((3, 4)), 3, None, dtype=torch.float64)
    check_op("aten::linalg_vector_norm", make((0, 3)), 2)
    check_op("aten::linalg_vector_norm", make((0,)), 0)
    check_op("aten::linalg_vector_norm", make(()), 2)
    check_op("aten::linalg_vector_norm", make((2, 2500)), 2, [1], rtol=1e-5, atol=1e-5)
    check_raises("aten::linalg_vector_norm", make((0,)), INF, match="empty")
    check_raises("aten::linalg_vector_norm", make((0,)), -1, match="empty")
    check_raises("aten::linalg_vector_norm", make((3,), "int32"), match="floating")
    check_raises("aten::linalg_vector_norm", make((3,)), dtype=torch.float16, match="narrowing")
    check_raises("aten::linalg_vector_norm", make((3,)), 2, [1], match="out of range")


@pytest.mark.parametrize("dtype", FLOATS)
def test_norm(dtype: str) -> None:
    x = make((3, 4), dtype)
    check_op("aten::norm", x)
    check_op("aten::norm.Scalar", x, 3)
    check_op("aten::norm.Scalar", x, INF)
    check_op("aten::norm.ScalarOpt_dim", x, None, [1])
    check_op("aten::norm.ScalarOpt_dim", x, 1, [0], True)
    check_op("aten::norm.ScalarOpt_dim", x, -INF, [-1])
    check_op("aten::norm.ScalarOpt_dim", x, 0, [0, 1])
    check_op("aten::norm.ScalarOpt_dim_dtype", x, 2, [1], False, dtype=torch.float64)
    check_op("aten::norm.ScalarOpt_dtype", x, 1.5, dtype=torch.float64)
    for _, t in layouts(x):
        check_op("aten::norm.ScalarOpt_dim", t, 2, [0])


def test_norm_errors() -> None:
    check_raises("aten::norm.Scalar", make((3,), "int32"), match="floating")
    check_raises("aten::norm.ScalarOpt_dtype", make((3,)), 2, dtype=torch.float16, match="narrowing")
    check_raises("aten::norm.Scalar", make((0,)), INF, match="empty")


@pytest.mark.parametrize("dtype", FLOATS + ["int32", "int64", "bool"])
def test_logsumexp(dtype: str) -> None:
    x = make((3, 4, 5), dtype)
    check_op("aten::logsumexp", x, [1])
    check_op("aten::logsumexp", x, -1, True)
    check_op("aten::logsumexp", x, [0, 2])
    for _, t in layouts(make((4, 5), dtype)):
        check_op("aten::logsumexp", t, [0])
        check_op("aten::logsumexp", t, [1])


def test_logsumexp_stable_and_edges() -> None:
    x = torch.tensor(
        [[1000.0, 1000.0, 999.0], [-INF, -INF, -INF], [INF, 1.0, 2.0], [NAN, 1.0, 2.0], [-1000.0, -1001.0, -INF]]
    )
    check_op("aten::logsumexp", x, [1])
    check_op("aten::logsumexp", x.t(), [0])
    check_op("aten::logsumexp", make((0, 3)), [0])
    check_op("aten::logsumexp", make(()), [0])
    check_op("aten::logsumexp", make((2, 2500)) * 50, [1], rtol=1e-5, atol=1e-5)
    check_op("aten::logsumexp", make((2500, 3)) * 50, [0], rtol=1e-5, atol=1e-5)
    check_raises("aten::logsumexp", make((3, 2)), [], match="at least one")
    check_raises("aten::logsumexp", make((3, 2)), [2], match="out of range")
