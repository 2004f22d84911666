"""Conformance of the upsampling ops against torch CPU."""

from __future__ import annotations

import pytest
import torch

from nbx_core.testing import check_op, check_raises, layouts, make


def _inputs(dtype="float32"):
    x = make((2, 3, 5, 4), dtype)
    return [x, x.to(memory_format=torch.channels_last), *[t for _, t in list(layouts(x))[1:]]]


def _float_ref(op):
    def ref(x, *a, **k):
        if x.dtype in (torch.float16, torch.bfloat16):
            return op(x.float(), *a, **k).to(x.dtype)
        return op(x, *a, **k)

    return ref


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
def test_nearest2d(dtype):
    for x in _inputs(dtype):
        check_op("aten::upsample_nearest2d", x, [7, 9])
        check_op("aten::upsample_nearest2d", x, [10, 8])
        check_op("aten::upsample_nearest2d", x, [3, 2])
        check_op("aten::upsample_nearest2d", x, [7, 9], 1.7, 2.3)
        check_op("aten::upsample_nearest2d.vec", x, None, [1.7, 2.3])
        check_op("aten::upsample_nearest2d.vec", x, [6, 6], None)
    check_op("aten::upsample_nearest2d", make((0, 3, 5, 4), dtype), [7, 9])


def test_nearest_exact():
    for x in _inputs():
        check_op("aten::_upsample_nearest_exact2d", x, [7, 3])
        check_op("aten::_upsample_nearest_exact2d", x, [7, 3], 1.5, 0.75)
        check_op("aten::_upsample_nearest_exact2d.vec", x, None, [1.5, 0.75])
    x1 = make((2, 3, 5))
    check_op("aten::_upsample_nearest_exact1d", x1, [12])
    check_op("aten::_upsample_nearest_exact1d", x1, [12], 2.5)
    check_op("aten::_upsample_nearest_exact1d.vec", x1.bfloat16(), None, [0.6])


def test_nearest1d_3d():
    x1 = make((2, 3, 5))
    check_op("aten::upsample_nearest1d", x1, [12])
    check_op("aten::upsample_nearest1d", x1.transpose(1, 2).contiguous().transpose(1, 2), [3], 0.7)
    check_op("aten::upsample_nearest1d.vec", x1.half(), None, [2.5])
    x3 = make((1, 2, 3, 4, 5))
    check_op("aten::upsample_nearest3d", x3, [5, 6, 7])
    check_op("aten::upsample_nearest3d", x3.to(memory_format=torch.channels_last_3d), [5, 8, 3], 1.5, 2.0, None)
    check_op("aten::upsample_nearest3d.vec", x3, None, [1.5, 2.0, 0.5])


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
@pytest.mark.parametrize("align", [False, True])
def test_bilinear2d(dtype, align):
    ref = _float_ref(torch.ops.aten.upsample_bilinear2d.default)
    ref_vec = _float_ref(torch.ops.aten.upsample_bilinear2d.vec)
    for x in _inputs(dtype):
        check_op("aten::upsample_bilinear2d", x, [7, 9], align, torch_fn=ref)
        check_op("aten::upsample_bilinear2d", x, [7, 9], align, 1.3, 2.1, torch_fn=ref)
        check_op("aten::upsample_bilinear2d.vec", x, None, align, [1.3, 2.1], torch_fn=ref_vec)
        check_op("aten::upsample_bilinear2d", x, [3, 1], align, torch_fn=ref)


@pytest.mark.parametrize("align", [False, True])
def test_linear1d(align):
    x1 = make((2, 3, 5))
    check_op("aten::upsample_linear1d", x1, [12], align)
    check_op("aten::upsample_linear1d", x1, [12], align, 2.5)
    check_op("aten::upsample_linear1d.vec", x1, None, align, [2.5])
    check_op("aten::upsample_linear1d", x1.double().transpose(1, 2).contiguous().transpose(1, 2), [1], align)
    check_op(
        "aten::upsample_linear1d",
        x1.bfloat16(),
        [7],
        align,
        torch_fn=_float_ref(torch.ops.aten.upsample_linear1d.default),
    )


def test_nearest_modes_take_uint8():
    u = make((1, 2, 5, 5), "uint8", low=0, high=255)
    check_op("aten::upsample_nearest2d.vec", u, None, [2.0, 1.5])
    check_op("aten::_upsample_nearest_exact1d.vec", u[0], None, [1.7])
    check_op("aten::upsample_nearest3d", u[None], [2, 7, 3])


def test_upsample_bad_inputs():
    x = make((1, 3, 5, 4))
    check_raises("aten::upsample_nearest2d", make((3, 5, 4)), [7, 9], match="4-D")
    check_raises("aten::upsample_nearest2d", x, [0, 9], match="positive")
    check_raises("aten::upsample_nearest2d.vec", x, [7, 9], [2.0, 2.0], match="exactly one")
    check_raises("aten::upsample_bilinear2d", make((1, 0, 5, 4)), [7, 9], False, match="non-zero")
    check_raises("aten::upsample_linear1d", x, [7], False, match="3-D")
    check_raises("aten::upsample_nearest1d", make((1, 3, 4), "int64"), [7], match="dtype")
    check_raises("aten::upsample_nearest3d", x, [2, 2, 2], match="5-D")
    check_raises("aten::_upsample_nearest_exact1d", x, [7], match="3-D")
    check_raises("aten::_upsample_nearest_exact2d.vec", x, None, None, match="exactly one")


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float64"])
@pytest.mark.parametrize("op", ["_upsample_bilinear2d_aa", "_upsample_bicubic2d_aa"])
@pytest.mark.parametrize("align", [False, True])
def test_antialiased_resize(dtype, op, align):
    # F.interpolate(antialias=True) and torchvision's resize: downsampling stretches the filter over
    # several input pixels (5 -> 2 rows: 2.5 pixels a row), upsampling does not (4 -> 9 columns).
    default, vec = getattr(torch.ops.aten, op).default, getattr(torch.ops.aten, op).vec
    for x in _inputs(dtype):
        check_op(f"aten::{op}", x, [2, 9], align, torch_fn=_float_ref(default))
        check_op(f"aten::{op}", x, [3, 3], align, 0.6, 0.7, torch_fn=_float_ref(default))
        check_op(f"aten::{op}.vec", x, None, align, [0.4, 2.3], torch_fn=_float_ref(vec))
        check_op(f"aten::{op}", x, [1, 1], align, torch_fn=_float_ref(default))
    big = make((1, 2, 37, 23), dtype)
    check_op(f"aten::{op}", big, [5, 4], align, torch_fn=_float_ref(default))  # 7.4 and 5.75 pixels a tap


def test_antialiased_resize_bad_inputs():
    check_raises("aten::_upsample_bilinear2d_aa", make((3, 5, 4)), [7, 9], False, match="4-D")
    check_raises("aten::_upsample_bicubic2d_aa", make((1, 3, 5, 4), "int64"), [2, 2], False, match="dtype")
    check_raises(
        "aten::_upsample_bilinear2d_aa.vec", make((1, 3, 5, 4)), [2, 2], False, [2.0, 2.0], match="exactly one"
    )
