"""Conformance of flip, roll, tril/triu, pixel (un)shuffle, repeat_interleave and every pad op."""

import pytest
import torch

from nbx_core.testing import check_op, check_raises, layouts, make, numeric

DTYPES = ["float32", "float16", "bfloat16", "int32", "bool"]


@pytest.mark.parametrize("dtype", DTYPES)
def test_flip_roll(dtype):
    x = make((3, 4, 5), dtype)
    for _, t in layouts(x):
        check_op("aten::flip", t, [0, -1])
        check_op("aten::roll", t, [1, -7], [0, 2])
    check_op("aten::flip", x, [])
    check_op("aten::roll", x, [7])  # no dims: the flattened tensor rolls
    check_op("aten::roll", x, [2], [1])
    check_op("aten::flip", make((), dtype), [])
    check_op("aten::roll", make((0, 3), dtype), [1], [1])
    check_raises("aten::flip", x, [0, 0], match="more than once")
    check_raises("aten::roll", x, [1, 2], [0], match="same length")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("diagonal", [-1, 0, 2])
def test_tril_triu(dtype, diagonal):
    x = make((2, 4, 5), dtype)
    for _, t in layouts(x):
        check_op("aten::tril", t, diagonal)
        check_op("aten::triu", t, diagonal)
    check_op("aten::tril", make((0, 3), dtype), diagonal)
    check_raises("aten::triu", make((3,), dtype), match="2 dims")


@pytest.mark.parametrize("op", ["aten::tril_indices", "aten::triu_indices"])
def test_tril_triu_indices(op):
    for row, col, offset in ((4, 4, 0), (3, 5, 1), (5, 3, -2), (4, 6, 9), (4, 6, -9), (0, 3, 0), (1, 1, 0)):
        check_op(op, row, col, offset)
    check_op(op, 3, 4, dtype=torch.int32)
    check_raises(op, -1, 3, match="row must be non-negative")
    check_raises(op, 3, 4, dtype=torch.float32, match="dtype must be int64 or int32")


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int32", "bool"])
def test_pixel_shuffle(dtype):
    check_op("aten::pixel_shuffle", make((2, 8, 3, 2), dtype), 2)
    check_op("aten::pixel_shuffle", make((8, 3, 2), dtype).transpose(1, 2), 2)
    check_op("aten::pixel_unshuffle", make((2, 2, 4, 6), dtype), 2)
    check_op("aten::pixel_unshuffle", make((1, 3, 3, 2), dtype, seed=1), 1)
    check_raises("aten::pixel_shuffle", make((2, 7, 3, 3), dtype), 2, match="divisible")
    check_raises("aten::pixel_unshuffle", make((2, 2, 5, 6), dtype), 2, match="divisible")


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32", "bool"])
def test_repeat_interleave(dtype):
    x = make((3, 4), dtype)
    r = torch.tensor([2, 0, 3])
    check_op("aten::repeat_interleave.Tensor", r)
    check_op("aten::repeat_interleave.Tensor", r.int(), output_size=5)
    check_op("aten::repeat_interleave.Tensor", torch.tensor([], dtype=torch.int64))
    for _, t in layouts(x):
        check_op("aten::repeat_interleave", t, r, 0)
        check_op("aten::repeat_interleave.self_int", t, 2, -1)
    check_op("aten::repeat_interleave", x, torch.tensor([2]), 1)
    check_op("aten::repeat_interleave", x, torch.arange(12) % 3)
    check_op("aten::repeat_interleave", x, r, 0, output_size=5)
    check_op("aten::repeat_interleave.self_int", x, 2)
    check_op("aten::repeat_interleave.self_int", x, 0, 1)
    check_op("aten::repeat_interleave.self_int", make((), dtype), 3)


def test_repeat_interleave_errors():
    check_raises("aten::repeat_interleave", make((3,)), torch.tensor([1, 2]), 0, match="repeats")
    check_raises("aten::repeat_interleave.Tensor", torch.tensor([1.0]), match="int64")
    if numeric():
        check_raises("aten::repeat_interleave.Tensor", torch.tensor([1, -1]), match="non-negative")


@pytest.mark.parametrize("dtype", DTYPES)
def test_constant_pad_nd(dtype):
    x = make((2, 3, 4), dtype)
    for _, t in layouts(x):
        check_op("aten::constant_pad_nd", t, [1, 2, -1, 1], 1)
    check_op("aten::constant_pad_nd", x, [1, 2, 0, 1, 2, 2])
    check_op("aten::constant_pad_nd", x, [-2, -1])  # negative padding crops
    check_op("aten::constant_pad_nd", make((0, 2), dtype), [1, 1, 1, 0], 1)
    check_raises("aten::constant_pad_nd", x, [-3, -2], match="negative")
    check_raises("aten::constant_pad_nd", x, [1], match="even")


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int32"])
def test_pad_modes(dtype):
    x = make((2, 3, 4, 5), dtype)
    for mode in ("reflect", "replicate", "circular"):
        check_op("aten::pad", x[0], [1, 2], mode)
        check_op("aten::pad", x.transpose(2, 3), [1, 2, 2, 0], mode)
        check_op("aten::pad", x[None], [1, 2, 2, 0, 1, 1], mode)
    check_op("aten::pad", x, [1, 2, -1, 0], "constant", 2.5 if dtype != "int32" else 2)
    check_op("aten::pad", x, [1, 0])
    check_raises("aten::pad", x, [1, 2], "reflect", match="4-D")
    check_raises("aten::pad", x, [5, 0, 0, 0], "reflect", match="smaller")
    check_raises("aten::pad", x, [1, 0], "wrap", match="mode")


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int32"])
def test_reflection_replication_pads(dtype):
    x = make((2, 3, 4, 5), dtype)
    for _, t in layouts(x):
        check_op("aten::reflection_pad2d", t, [2, 3, 1, 0])
    check_op("aten::reflection_pad1d", x[0], [2, 3])
    check_op("aten::reflection_pad1d", x[0, 0], [4, 1])
    check_op("aten::reflection_pad3d", x, [1, 1, 1, 2, 0, 1])
    check_op("aten::replication_pad1d", x[0], [2, 3])
    check_op("aten::replication_pad2d", x, [2, 3, 1, 0])
    check_op("aten::replication_pad2d", x[0], [0, 4, 2, 2])
    check_op("aten::replication_pad3d", x, [1, 1, 1, 2, 0, 1])
    check_raises("aten::reflection_pad1d", x[0], [5, 0], match="smaller")


def test_negative_pads_crop_in_every_mode():
    x = make((2, 3, 6, 5))
    for mode in ("reflect", "replicate", "circular"):
        for pads in ([-1, 2], [2, -3], [-2, -1]):
            check_op("aten::pad", x[0], pads, mode)
        for pads in ([0, 0, 2, -4], [-2, -1, 4, 5], [-2, -1, -1, -3]):
            check_op("aten::pad", x, pads, mode)
    check_op("aten::replication_pad2d", x, [-2, 1, 3, -4])
    check_op("aten::reflection_pad1d", x[0], [-1, 2])
    check_raises("aten::replication_pad3d", x[0, 0], [1, 1, 1, 1, 1, 1], match="4-D or 5-D")
