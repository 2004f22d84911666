"""Conformance of average, max and adaptive average pooling against torch CPU."""

from __future__ import annotations

import pytest
import torch

from nbx_core.errors import NbxTypeError
from nbx_core.testing import check_op, check_raises, layouts, make, numeric, run_op, to_torch

DTYPES = ["float32", "float16", "bfloat16", "float64"]


def _inputs2d(dtype="float32"):
    x = make((2, 3, 7, 6), dtype)
    return [
        ("contiguous", x),
        ("channels_last", x.to(memory_format=torch.channels_last)),
        ("unbatched", x[0]),
        *list(layouts(x))[1:],
    ]


@pytest.mark.parametrize("dtype", DTYPES)
def test_max_pool2d(dtype):
    for _, x in _inputs2d(dtype):
        check_op("aten::max_pool2d_with_indices", x, [3, 2], [2, 1], [1, 1], [1, 2], True)
        check_op("aten::max_pool2d", x, [2, 2])
    check_op("aten::max_pool2d", make((0, 3, 7, 6), dtype), [3, 3], [2, 2], [1, 1])


def test_max_pool2d_nan_inf_ties():
    x = make((1, 2, 5, 5))
    x[0, 0, 1, 1] = float("nan")
    x[0, 0, 3, 3] = float("nan")
    x[0, 1] = float("-inf")
    x[0, 1, 4, 4] = 2.0
    check_op("aten::max_pool2d_with_indices", x, [3, 3], [1, 1], [1, 1])
    check_op("aten::max_pool2d_with_indices", torch.ones(1, 1, 4, 4), [2, 2], [1, 1], [0, 0], [2, 1], True)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_max_pool3d(dtype):
    x = make((1, 2, 5, 6, 4), dtype)
    for xx in (x, x.to(memory_format=torch.channels_last_3d), x[0], x.transpose(2, 4)):
        check_op("aten::max_pool3d_with_indices", xx, [2, 3, 2], [2, 2, 1], [1, 1, 0], [1, 1, 2], True)
        check_op("aten::max_pool3d", xx, [2, 2, 2])


def _ref_float(op):
    return lambda x, *a: op(x.float(), *a).to(x.dtype) if x.dtype in (torch.float16, torch.bfloat16) else op(x, *a)


@pytest.mark.parametrize("dtype", DTYPES)
def test_avg_pool2d(dtype):
    ref = _ref_float(torch.ops.aten.avg_pool2d.default)
    for _, x in _inputs2d(dtype):
        check_op("aten::avg_pool2d", x, [3, 2], [2, 1], [1, 1], True, False, torch_fn=ref)
        check_op("aten::avg_pool2d", x, [3, 3], [2, 2], [1, 1], False, True, torch_fn=ref)
        check_op("aten::avg_pool2d", x, [3, 3], [2, 2], [1, 1], True, True, 5, torch_fn=ref)
    check_op("aten::avg_pool2d", make((0, 3, 7, 6), dtype), [2, 2], torch_fn=ref)


def test_avg_pool1d_3d():
    x1 = make((2, 3, 9))
    check_op("aten::avg_pool1d", x1, [3], [2], [1], True, False)
    check_op("aten::avg_pool1d", x1.transpose(1, 2).contiguous().transpose(1, 2), [4], [], [2], False, True)
    check_op("aten::avg_pool1d", x1[0], [2])
    x3 = make((1, 2, 5, 6, 4))
    for xx in (x3, x3.to(memory_format=torch.channels_last_3d), x3[0]):
        check_op("aten::avg_pool3d", xx, [2, 3, 2], [2, 2, 1], [1, 1, 0], True, False)
        check_op("aten::avg_pool3d", xx, [2, 2, 2], [1, 2, 1], [1, 0, 1], False, True, 3)
    xb = x3.bfloat16()
    check_op("aten::avg_pool3d", xb, [2, 2, 2], torch_fn=_ref_float(torch.ops.aten.avg_pool3d.default))


@pytest.mark.parametrize("dtype", DTYPES)
def test_adaptive_avg_pool2d(dtype):
    ref = _ref_float(torch.ops.aten.adaptive_avg_pool2d.default)
    ref_ = _ref_float(torch.ops.aten._adaptive_avg_pool2d.default)
    for _, x in _inputs2d(dtype):
        check_op("aten::adaptive_avg_pool2d", x, [4, 5], torch_fn=ref)
        check_op("aten::_adaptive_avg_pool2d", x, [3, 1], torch_fn=ref_)
    check_op("aten::adaptive_avg_pool2d", make((0, 3, 7, 6), dtype), [2, 2], torch_fn=ref)


def test_adaptive_avg_pool1d_3d():
    x1 = make((2, 3, 9))
    check_op("aten::adaptive_avg_pool1d", x1, [4])
    check_op("aten::adaptive_avg_pool1d", x1[0], [9])
    check_op("aten::adaptive_avg_pool1d", x1.transpose(1, 2).contiguous().transpose(1, 2), [1])
    x3 = make((1, 2, 5, 6, 4))
    for xx in (x3, x3.to(memory_format=torch.channels_last_3d), x3[0]):
        check_op("aten::_adaptive_avg_pool3d", xx, [3, 4, 3])
    check_op(
        "aten::_adaptive_avg_pool3d",
        x3.half(),
        [2, 1, 3],
        torch_fn=_ref_float(torch.ops.aten._adaptive_avg_pool3d.default),
    )


def test_pool_bad_inputs():
    x = make((1, 3, 7, 6))
    check_raises("aten::max_pool2d", x, [3, 3], [1, 1], [2, 2], match="half")
    check_raises("aten::max_pool2d", make((7, 6)), [3, 3], match="3-D or 4-D")
    check_raises("aten::max_pool2d", make((1, 3, 2, 2)), [3, 3], [1, 1], match="too small")
    check_raises("aten::max_pool2d", x, [3, 0], match="kernel_size")
    check_raises("aten::avg_pool2d", x, [3, 3], [1, 1], [0, 0], False, True, 0, match="divisor")
    check_raises("aten::max_pool3d", make((7, 6, 5)), [2, 2, 2], match="4-D or 5-D")
    check_raises("aten::avg_pool1d", make((1, 3, 0)), [2], match="non-zero")
    check_raises("aten::adaptive_avg_pool2d", make((1, 3, 0, 4)), [2, 2], match="non-zero")
    check_raises("aten::_adaptive_avg_pool2d", make((3, 4)), [2, 2], match="3-D or 4-D")
    check_raises("aten::_adaptive_avg_pool3d", make((7, 6, 5)), [2, 2, 2], match="4-D or 5-D")
    check_raises("aten::max_pool3d_with_indices", make((1, 2, 2, 2, 2)), [3, 3, 3], match="too small")
    check_raises("aten::avg_pool3d", make((1, 2, 0, 2, 2)), [1, 1, 1], match="non-zero")
    check_raises("aten::adaptive_avg_pool1d", make((1, 3, 0)), [2], match="non-zero")


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "int8"])
def test_max_pool_integer_inputs(dtype):
    x = make((2, 3, 6, 7), dtype, low=0 if dtype == "uint8" else -100, high=100)
    check_op("aten::max_pool2d_with_indices", x, [2, 2], [2, 1], [1, 0], [1, 2], True)
    check_op("aten::max_pool2d", x.transpose(2, 3), [3, 2])
    check_op("aten::max_pool3d_with_indices", x[None], [2, 2, 2])
    if dtype == "int64":  # compared as integers: float32 would merge these
        check_op("aten::max_pool2d_with_indices", torch.tensor([[[[2**40 + 1, 2**40, -5, 7]]]]), [1, 2])


def test_avg_pool_integer_input_is_refused():
    # torch's CPU kernel averages integers; its CUDA kernel, like NBX's, takes floating inputs only.
    with pytest.raises(NbxTypeError, match="dtype"):
        run_op("aten::avg_pool2d", make((1, 2, 4, 4), "int64"), [2, 2])


@pytest.mark.parametrize("tiles", ["default", "small"])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float64"])
def test_adaptive_avg_pool_global_channels_last(dtype, tiles, monkeypatch):
    # One output pixel over unit-stride channels: the (N, HW, C) column kernel. Small tiles make 3
    # channel blocks (the last partial) and 11 row blocks of 4 over 42 positions.
    if tiles == "small":
        from nbx_conv import pooling

        if not numeric():
            pytest.skip("forced tiles are checked for their numbers; aot compiles the shipped tiles")
        monkeypatch.setattr(pooling.GLOBAL_AVG, "lookup", lambda *a, **kw: {"BLOCK_R": 4, "BLOCK_C": 8, "num_warps": 4})
    ref = _ref_float(torch.ops.aten.adaptive_avg_pool2d.default)
    x = make((2, 20, 7, 6), dtype).to(memory_format=torch.channels_last)
    check_op("aten::adaptive_avg_pool2d", x, [1, 1], torch_fn=ref, check_stride=True)
    check_op(
        "aten::_adaptive_avg_pool2d", x[1], [1, 1], torch_fn=_ref_float(torch.ops.aten._adaptive_avg_pool2d.default)
    )
    # Positions stepped evenly along W still merge into one stride; a slice of W does not (window kernel).
    check_op("aten::adaptive_avg_pool2d", x[:, :, :, ::2], [1, 1], torch_fn=ref)
    check_op("aten::adaptive_avg_pool2d", x[:, :, :, :4], [1, 1], torch_fn=ref)
    x3 = make((2, 20, 3, 5, 4), dtype).to(memory_format=torch.channels_last_3d)
    check_op(
        "aten::_adaptive_avg_pool3d", x3, [1, 1, 1], torch_fn=_ref_float(torch.ops.aten._adaptive_avg_pool3d.default)
    )
    x1 = make((2, 9, 20), dtype).transpose(1, 2)  # (N, C, L) with unit channel stride
    check_op("aten::adaptive_avg_pool1d", x1, [1], torch_fn=_ref_float(torch.ops.aten.adaptive_avg_pool1d.default))


def test_adaptive_avg_pool_global_large():
    # 81 positions (two row blocks of 64) and 1100 channels (two channel blocks on the interpreter).
    x = make((1, 1100, 9, 9)).to(memory_format=torch.channels_last)
    check_op("aten::adaptive_avg_pool2d", x, [1, 1])
    check_op("aten::adaptive_avg_pool2d", make((3, 5, 1, 1)), [1, 1])


@pytest.mark.parametrize("dtype", DTYPES)
def test_adaptive_max_pool2d(dtype):
    # Divisible (7x6 to 7x3), uneven overlapping bins (4x5), output larger than the input (9x8) and a
    # global pool, in every layout: values, indices and the result strides are torch's.
    for _, x in _inputs2d(dtype):
        for size in ([4, 5], [7, 3], [9, 8], [1, 1]):
            check_op("aten::adaptive_max_pool2d", x, size, check_stride=True)
    check_op("aten::adaptive_max_pool2d", make((0, 3, 7, 6), dtype), [2, 2], check_stride=True)
    check_op("aten::adaptive_max_pool2d", make((2, 3, 7, 6), dtype), [0, 2])


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_adaptive_max_pool1d(dtype):
    x = make((2, 3, 9), dtype)
    for size in ([4], [3], [12], [1]):
        check_op("aten::adaptive_max_pool1d", x, size, check_stride=True)
    check_op("aten::adaptive_max_pool1d", x[0], [5], check_stride=True)
    check_op("aten::adaptive_max_pool1d", x.transpose(1, 2).contiguous().transpose(1, 2), [4], check_stride=True)
    # nn.AdaptiveMaxPool1d as torch.export lowers it: a 2-D pool over a height of 1.
    check_op("aten::adaptive_max_pool2d", x.unsqueeze(-2), [1, 4], check_stride=True)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
def test_adaptive_max_pool3d(dtype):
    x = make((2, 3, 5, 6, 4), dtype)
    # torch gives a contiguous result for a channels-last-3d input here (unlike its 2-D pool).
    for xx in (x, x.to(memory_format=torch.channels_last_3d), x[0], x.transpose(2, 4)):
        for size in ([3, 4, 3], [5, 3, 2], [7, 8, 5]):
            check_op("aten::adaptive_max_pool3d", xx, size, check_stride=True)
    check_op("aten::adaptive_max_pool3d", x, [1, 1, 1], check_stride=True)


def test_adaptive_max_pool_nan_inf_ties():
    nan = float("nan")
    plane = torch.tensor([[1.0, 3.0, 3.0, 0.0], [3.0, nan, 2.0, nan], [5.0, 5.0, -1.0, -1.0], [5.0, -1.0, -1.0, -1.0]])
    x = torch.stack([plane, torch.full((4, 4), float("-inf")), torch.ones(4, 4)])[None]
    for xx in (x, x.to(memory_format=torch.channels_last)):
        for size in ([2, 2], [1, 1], [3, 3], [3, 2]):
            check_op("aten::adaptive_max_pool2d", xx, size, check_stride=True)
    x3 = x.reshape(1, 3, 2, 2, 4)
    for xx in (x3, x3.to(memory_format=torch.channels_last_3d)):
        check_op("aten::adaptive_max_pool3d", xx, [1, 1, 2])
        check_op("aten::adaptive_max_pool3d", xx, [2, 1, 3])
    _, ind = run_op("aten::adaptive_max_pool2d", x, [2, 2])
    if numeric():
        # NaN wins (the last of a window: indices 5 and 7 share the 1x1 bin), all -inf keeps the
        # first tap, equal values keep the first in scan order, as torch.
        assert to_torch(ind)[0].reshape(3, 4).tolist() == [[5, 7, 8, 10], [0, 2, 8, 10], [0, 2, 8, 10]]
        assert to_torch(run_op("aten::adaptive_max_pool2d", x, [1, 1])[1]).flatten().tolist() == [7, 0, 0]


def test_adaptive_max_pool_bad_inputs():
    x = make((2, 3, 7, 6))
    check_raises("aten::adaptive_max_pool2d", x, [3], match="output_size must list 2 sizes")
    check_raises("aten::adaptive_max_pool2d", x, [2, 2, 2], match="output_size must list 2 sizes")
    check_raises("aten::adaptive_max_pool2d", x, [2, -1], match="output_size must be non-negative")
    check_raises("aten::adaptive_max_pool2d", make((2, 3, 0, 6)), [2, 2], match="non-zero")
    check_raises("aten::adaptive_max_pool2d", make((2, 0, 7, 6)), [2, 2], match="non-zero")
    check_raises("aten::adaptive_max_pool2d", make((7, 6)), [2, 2], match="3-D or 4-D")
    check_raises("aten::adaptive_max_pool2d", make((2, 3, 7, 6), "int64"), [2, 2], match="dtype")
    check_raises("aten::adaptive_max_pool3d", make((2, 3, 4, 5, 6)), [2, 2], match="output_size must list 3 sizes")
    check_raises("aten::adaptive_max_pool3d", make((4, 5, 6)), [2, 2, 2], match="4-D or 5-D")
    check_raises("aten::adaptive_max_pool3d", make((1, 3, 4, 0, 6)), [2, 2, 2], match="non-zero")
    check_raises("aten::adaptive_max_pool1d", make((2, 3, 9)), [2, 2], match="output_size must list 1 size")
    check_raises("aten::adaptive_max_pool1d", make((3, 0)), [2], match="non-zero")
    check_raises("aten::adaptive_max_pool1d", make((9,)), [2], match="2-D or 3-D")
    check_raises("aten::adaptive_avg_pool2d", x, [3], match="output_size must list 2 sizes")
