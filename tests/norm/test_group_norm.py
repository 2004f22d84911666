"""Conformance of aten::native_group_norm and aten::group_norm against torch (CPU)."""

from __future__ import annotations

import nbx_norm.moments as moments
import pytest
import torch

from nbx_core.errors import DeviceError
from nbx_core.testing import check_op, check_raises, from_torch, layouts, make, run_op


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
@pytest.mark.parametrize("affine", ["none", "weight", "both"])
def test_native_group_norm_dtypes(dtype, affine):
    x = make((2, 6, 5, 3), dtype)
    w = make((6,), dtype, seed=1) if affine != "none" else None
    b = make((6,), dtype, seed=2) if affine == "both" else None
    check_op("aten::native_group_norm", x, w, b, 2, 6, 15, 3, 1e-5)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_group_norm_mixed_float32_params(dtype):
    x = make((2, 4, 7), dtype)
    check_op("aten::native_group_norm", x, make((4,), seed=1), make((4,), seed=2), 2, 4, 7, 2, 1e-5)


@pytest.mark.parametrize("groups", [1, 2, 4])
def test_group_norm_groups_and_ranks(groups):
    check_op("aten::group_norm", make((3, 4)), groups)
    check_op("aten::group_norm", make((2, 4, 3, 2, 2)), groups, make((4,), seed=1), make((4,), seed=2), 1e-3)


def test_group_norm_layouts():
    for _, x in layouts(make((3, 4, 6)) + 1.0):
        check_op("aten::group_norm", x, 2, make((8,), seed=1)[::2], None, 1e-5, True)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float64"])
@pytest.mark.parametrize("affine", ["none", "weight", "both"])
@pytest.mark.parametrize(
    "shape,fmt,sliced",
    [
        ((2, 6, 5, 3), torch.channels_last, False),
        ((2, 6, 10, 3), torch.channels_last, True),
        ((2, 6, 2, 3, 4), torch.channels_last_3d, False),
    ],
)
def test_channels_last_inputs_give_channels_last_results(dtype, affine, shape, fmt, sliced):
    # The groups are read in place (HxW runs of C // groups channels) and the result keeps the
    # layout, with torch's strides and statistics; a step-sliced input is made dense first.
    x = make(shape, dtype).contiguous(memory_format=fmt)
    x = x[:, :, ::2] if sliced else x
    w = make((6,), dtype, seed=1) if affine != "none" else None
    b = make((6,), dtype, seed=2) if affine == "both" else None
    n, c, hxw = x.shape[0], x.shape[1], x[0, 0].numel()
    if not sliced:  # torch's native_group_norm refuses an input not dense in its format
        check_op("aten::native_group_norm", x, w, b, n, c, hxw, 3, 1e-5, check_stride=True)
    check_op("aten::group_norm", x, 2, w, b, 1e-5, True, check_stride=True)


def test_group_norm_zero_size():
    check_op("aten::native_group_norm", make((0, 4, 3)), None, None, 0, 4, 3, 2, 1e-5)
    check_op("aten::native_group_norm", make((2, 4, 0)), None, None, 2, 4, 0, 2, 1e-5)
    check_op("aten::group_norm", make((0, 4, 5)), 2)


def test_group_norm_several_chunks(monkeypatch):
    # A group larger than one chunk merges chunk moments (offset mean: no cancellation).
    lookup = moments.MOMENTS.lookup
    monkeypatch.setattr(moments.MOMENTS, "lookup", lambda *a, **kw: {**lookup(*a, **kw), "CHUNK": 16})
    check_op("aten::native_group_norm", make((2, 4, 25)) * 0.5 + 4.0, make((4,), seed=1), None, 2, 4, 25, 2, 1e-5)


def test_bad_inputs(on_cuda):
    x = make((2, 4, 3))
    check_raises("aten::group_norm", x, 3, match="divisible")
    check_raises("aten::group_norm", x, 2, make((3,)), match="weight")
    check_raises("aten::group_norm", x, 2, None, make((5,)), match="bias")
    check_raises("aten::group_norm", make((4,)), 2, match="dims")
    check_raises("aten::native_group_norm", x, None, None, 3, 4, 3, 2, 1e-5, match="N\\*C\\*HxW")
    check_raises("aten::native_group_norm", x, make((4,), "bfloat16"), None, 2, 4, 3, 2, 1e-5, match="dtype")
    check_raises("aten::group_norm", x.int(), 2, match="float32")
    with pytest.raises(DeviceError, match="device"):
        run_op("aten::group_norm", from_torch(x), 2, on_cuda(from_torch(make((4,)))))


def test_channels_last_groups_split_across_programs(monkeypatch):
    # Units addressed per sample (two-level offsets) and each split across programs.
    lookup = moments.MOMENTS.lookup
    monkeypatch.setattr(moments.MOMENTS, "lookup", lambda *a, **kw: {**lookup(*a, **kw), "CHUNK": 16, "PROGRAMS": 64})
    x = (make((3, 4, 5, 6)) * 0.5 + 4.0).contiguous(memory_format=torch.channels_last)
    # float32 statistics merged from 16-element chunks round differently from torch's: a few ulps.
    check_op(
        "aten::native_group_norm",
        x,
        make((4,), seed=1),
        None,
        3,
        4,
        30,
        2,
        1e-5,
        check_stride=True,
        rtol=1e-4,
        atol=1e-4,
    )
