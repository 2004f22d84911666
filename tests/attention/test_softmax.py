"""Conformance of softmax, _softmax, _safe_softmax, log_softmax and _log_softmax against torch (CPU)."""

from __future__ import annotations

import pytest
import torch

from nbx_core.errors import IndexOutOfRangeError, NbxTypeError, NbxValueError
from nbx_core.testing import check_op, check_raises, layouts, make, run_op

OPS = [
    ("aten::softmax", (None,)),
    ("aten::log_softmax", (None,)),
    ("aten::_softmax", (False,)),
    ("aten::_log_softmax", (False,)),
    ("aten::_safe_softmax", (None,)),
]
DTYPES = ["float16", "bfloat16", "float32", "float64"]
NEG_INF = float("-inf")


@pytest.mark.parametrize("name,extra", OPS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_dtypes(name, extra, dtype):
    check_op(name, make((4, 33), dtype, high=8.0, low=-8.0), -1, *extra)


@pytest.mark.parametrize("name,extra", OPS)
@pytest.mark.parametrize("dim", [0, 1, 2, -1, -3])
def test_dims_and_layouts(name, extra, dim):
    x = make((3, 5, 6), "float32")
    for _, t in layouts(x):
        check_op(name, t, dim, *extra)


@pytest.mark.parametrize("name,extra", OPS)
def test_zero_dim_and_empty(name, extra):
    check_op(name, torch.tensor(1.5), 0, *extra)
    check_op(name, torch.tensor(-2.0), -1, *extra)
    check_op(name, torch.empty(0, 3), 1, *extra)
    check_op(name, torch.empty(3, 0), 1, *extra)
    check_op(name, torch.empty(3, 0), 0, *extra)


@pytest.mark.parametrize("name,extra", OPS)
def test_inf_and_nan_rows(name, extra):
    x = torch.tensor(
        [[NEG_INF, NEG_INF, NEG_INF], [1.0, NEG_INF, 2.0], [float("nan"), 1.0, 0.0], [float("inf"), 1.0, 0.0]]
    )
    check_op(name, x, 1, *extra)


def test_safe_softmax_masked_rows_are_zero():
    x = make((4, 9), "float32")
    x[1] = NEG_INF
    x[3, ::2] = NEG_INF
    for dtype in ("float32", "float16"):
        check_op("aten::_safe_softmax", x.to(getattr(torch, dtype)), -1)
    check_op("aten::_safe_softmax", x.t(), 0, torch.float64)


@pytest.mark.parametrize("name", ["aten::softmax", "aten::log_softmax", "aten::_safe_softmax"])
def test_dtype_argument(name):
    x = make((3, 17), "float32", high=20.0, low=-20.0)
    check_op(name, x, 1, torch.float64)
    check_op(name, x, 1, torch.float16)
    check_op(name, x.half(), 1, torch.float32)
    check_op(name, x.bfloat16(), 0, torch.float32)
    check_op(name, torch.arange(12).view(3, 4), 1, torch.float32)


@pytest.mark.parametrize("name", ["aten::softmax", "aten::log_softmax"])
@pytest.mark.parametrize("dtype", ["bool", "uint8", "int64"])
def test_integer_inputs_with_rows_shorter_than_the_block(name, dtype):
    # The lanes past a 5-element row must count as -inf, whatever the input type can hold.
    x = make((4, 5), dtype, low=0, high=20)
    check_op(name, x, 1, torch.float64)
    check_op(name, x, 0, torch.float32)


@pytest.mark.parametrize("name,ref", [("aten::_softmax", torch.softmax), ("aten::_log_softmax", torch.log_softmax)])
def test_half_to_float(name, ref):
    # torch's CPU kernel refuses half_to_float; the CUDA semantics are softmax in float32 of the float16 input.
    x = make((5, 40), "float16")
    check_op(name, x, 1, True, torch_fn=lambda t, d, _: ref(t.float(), d))
    check_op(name, x.t(), 0, True, torch_fn=lambda t, d, _: ref(t.float(), d))
    with pytest.raises(NbxTypeError, match="half_to_float=True needs a float16 input"):
        run_op(name, make((2, 3), "bfloat16"), 1, True)


@pytest.mark.parametrize("name,extra", OPS)
def test_long_rows_take_the_chunked_kernel(name, extra, monkeypatch):
    import nbx_attention.softmax as sm

    monkeypatch.setattr(sm, "FUSED_MAX", 8)
    monkeypatch.setattr(sm, "CHUNK", 8)
    x = make((3, 29), "float32", high=30.0, low=-30.0)
    x[1] = NEG_INF
    x[2, 3:20] = NEG_INF
    check_op(name, x, 1, *extra)
    check_op(name, x.t().contiguous().t(), 0, *extra)
    check_op(name, make((29, 2), "bfloat16"), 0, *extra)


def test_out_overloads():
    x = make((3, 7), "float32")
    check_op("aten::softmax.int_out", x, 1, out=torch.empty(3, 7))
    check_op("aten::log_softmax.int_out", x, 0, out=torch.empty(3, 7))
    check_op("aten::_softmax.out", x, 1, False, out=torch.empty(3, 7))
    check_op("aten::_log_softmax.out", x, 1, False, out=torch.empty(3, 7))
    with pytest.raises(
        NbxValueError,
        match=r"out is a float32 tensor of shape \[3, 6\], but the result is float32 "
        r"of shape \[3, 7\]",
    ):
        run_op("aten::softmax.int_out", x, 1, out=torch.empty(3, 6))


@pytest.mark.parametrize("name,extra", OPS)
def test_bad_input(name, extra):
    x = make((3, 4), "float32")
    check_raises(name, x, 2, *extra, match="out of range")
    check_raises(name, x, -3, *extra, match="out of range")
    check_raises(
        name,
        torch.arange(6).view(2, 3),
        1,
        *extra,
        match="self has dtype int64, expected floating .*: pass dtype=float32",
    )
    check_raises(name, torch.ones(2, 3, dtype=torch.bool), 1, *extra)
    check_raises(name, x.to(torch.complex64), 1, *extra, match="complex")
    with pytest.raises(IndexOutOfRangeError):
        run_op(name, x, 5, *extra)


@pytest.mark.parametrize("name", ["aten::softmax", "aten::log_softmax", "aten::_safe_softmax"])
def test_bad_dtype_argument(name):
    check_raises(name, make((2, 3), "float32"), 1, torch.int64, match="dtype=int64 is not supported, expected floating")
    check_raises(name, make((2, 3), "float32"), 1, torch.bool, match="dtype=bool is not supported, expected floating")
