"""Conformance of the convolution ops against torch CPU."""

from __future__ import annotations

import pytest
import torch

from nbx_core.errors import DeviceError, NbxError
from nbx_core.registry import get_registry
from nbx_core.testing import assert_close, check_op, check_raises, from_torch, layouts, make, numeric, run_op

HALF_TOL = {"float16": (2e-3, 2e-3), "bfloat16": (2e-2, 2e-2)}


def _dt(name: str) -> torch.dtype:
    return getattr(torch, name)


# float32 reductions of hundreds of terms, summed in another order than the float64 reference:
# the H200 strays ~sqrt(K) eps |x| (1.5e-5 on values near 2 for K = 720), past the default 1.3e-6.
FLOAT32_LONG_TOL = (2e-5, 5e-5)


def _tol(dtype: str) -> dict:
    r, a = HALF_TOL.get(dtype, FLOAT32_LONG_TOL if dtype == "float32" else (None, None))
    return {"rtol": r, "atol": a}


def _ref_half(fn):
    """torch's CPU half-type conv accumulates like ours only roughly: compare to float32 math, rounded."""
    def ref(x, w, b, *args):
        out = fn(x.float(), w.float(), None if b is None else b.float(), *args)
        return out.to(x.dtype)
    return ref


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
def test_conv2d_dtypes(dtype):
    x, w, b = make((1, 3, 6, 5), dtype), make((4, 3, 3, 3), dtype, seed=1), make((4,), dtype, seed=2)
    ref = _ref_half(torch.ops.aten.conv2d.default) if dtype in HALF_TOL else None
    check_op("aten::conv2d", x, w, b, [1, 1], [1, 1], [1, 1], 1, torch_fn=ref, **_tol(dtype))


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_conv2d_nested_channels(dtype):
    # 16+ channels per group take the nested (tap, channel-block) reduction.
    x, w = make((2, 32, 5, 5), dtype), make((32, 16, 3, 3), dtype, seed=1)
    ref = _ref_half(torch.ops.aten.conv2d.default) if dtype in HALF_TOL else None
    check_op("aten::conv2d", x, w, None, [2, 1], [1, 1], [1, 2], 2, torch_fn=ref, **_tol(dtype))


@pytest.mark.parametrize("case", [
    ([1, 1], [0, 0], [1, 1], 1), ([2, 1], [1, 0], [2, 1], 1), ([1, 2], [2, 1], [1, 1], 1), ([1, 1], [1, 1], [1, 1], 3),
])
def test_conv2d_stride_padding_dilation_groups(case):
    stride, padding, dilation, groups = case
    x, w = make((2, 3, 6, 5)), make((6, 3 // groups, 3, 2), seed=1)
    check_op("aten::conv2d", x, w, make((6,), seed=2), stride, padding, dilation, groups)
    check_op("aten::conv2d", x, w, None, stride, padding, dilation, groups)


def test_conv2d_layouts_and_channels_last():
    x, w, b = make((2, 3, 6, 5)), make((4, 3, 3, 3), seed=1), make((4,), seed=2)
    for _, xl in layouts(x):
        check_op("aten::conv2d", xl, w, b, [1, 1], [1, 1])
    xcl = x.to(memory_format=torch.channels_last)
    got = check_op("aten::conv2d", xcl, w.to(memory_format=torch.channels_last), b, [1, 1], [1, 1])
    assert got.stride()[1] == 1  # channels-last in, channels-last out (torch's rule)
    check_op("aten::conv2d", x.transpose(2, 3), w, b, [2, 1], [0, 1])


def test_conv2d_unbatched_and_empty_batch():
    w = make((4, 3, 3, 3), seed=1)
    check_op("aten::conv2d", make((3, 6, 5)), w, None, [1, 1], [1, 1])
    check_op("aten::conv2d", make((0, 3, 6, 5)), w, None, [1, 1], [1, 1])


@pytest.mark.parametrize("dilation", [[1, 1], [1, 2], [2, 1]])
def test_conv2d_padding_strings(dilation):
    x, w = make((1, 3, 6, 5)), make((4, 3, 2, 3), seed=1)
    check_op("aten::conv2d.padding", x, w, None, [1, 1], "same", dilation)
    check_op("aten::conv2d.padding", x, w, make((4,), seed=2), [2, 1], "valid", dilation)


def test_conv1d():
    x, w = make((2, 4, 7)), make((6, 2, 3), seed=1)
    check_op("aten::conv1d", x, w, make((6,), seed=2), [2], [1], [1], 2)
    check_op("aten::conv1d", x.transpose(1, 2).contiguous().transpose(1, 2), w, None, [1], [2], [2], 2)
    check_op("aten::conv1d", x[0], w, None, [1], [0], [1], 2)
    check_op("aten::conv1d.padding", x, make((5, 4, 4), seed=3), None, [1], "same", [1], 1)
    check_op("aten::conv1d.padding", x, make((5, 4, 4), seed=3), None, [3], "valid", [2], 1)
    xh = x.to(torch.float16)
    check_op("aten::conv1d", xh, w.half(), None, [1], [1], [1], 2,
             torch_fn=_ref_half(torch.ops.aten.conv1d.default), **_tol("float16"))


def test_depthwise():
    x = make((2, 3, 6, 5))
    w = make((6, 1, 3, 3), seed=1)
    b = make((6,), seed=2)
    check_op("aten::conv2d", x, w, b, [1, 1], [1, 1], [1, 1], 3)

    def ref(x, w, ks, b, st, pad, dil):
        return torch.nn.functional.conv2d(x, w, b, st, pad, dil, x.shape[1])

    check_op("aten::_conv_depthwise2d", x, w, [3, 3], b, [1, 2], [1, 0], [2, 1], torch_fn=ref)
    check_op("aten::_conv_depthwise2d", x.to(memory_format=torch.channels_last), w, [3, 3], None, [1, 1], [1, 1],
             [1, 1], torch_fn=ref)


@pytest.mark.parametrize("case", [
    ([1, 1], [0, 0], [0, 0], 1, [1, 1]), ([2, 2], [1, 0], [1, 0], 1, [1, 1]), ([2, 3], [0, 1], [1, 2], 1, [1, 1]),
    ([1, 1], [1, 1], [0, 0], 2, [2, 1]), ([2, 1], [1, 1], [1, 0], 2, [1, 2]),
])
def test_conv_transpose2d(case):
    stride, padding, out_pad, groups, dilation = case
    x, w = make((2, 4, 4, 3)), make((4, 3, 3, 2), seed=1)
    check_op("aten::conv_transpose2d.input", x, w, make((3 * groups,), seed=2), stride, padding, out_pad, groups,
             dilation)
    check_op("aten::conv_transpose2d", x.to(memory_format=torch.channels_last), w, None, stride, padding, out_pad,
             groups, dilation)


def test_conv_transpose1d():
    x, w = make((2, 4, 5)), make((4, 3, 3), seed=1)
    check_op("aten::conv_transpose1d", x, w, make((6,), seed=2), [2], [1], [1], 2, [1])
    check_op("aten::conv_transpose1d", x, w, None, [3], [0], [2], 1, [2])
    check_op("aten::conv_transpose1d", x[1], w, None, [1], [0], [0], 1, [1])
    xb = x.bfloat16()
    check_op("aten::conv_transpose1d", xb, w.bfloat16(), None, [2], [1], [1], 2, [1],
             torch_fn=_ref_half(torch.ops.aten.conv_transpose1d.default), **_tol("bfloat16"))


@pytest.mark.parametrize("transposed", [False, True])
def test_convolution_export_signature(transposed):
    x = make((2, 4, 5, 4))
    w = make((4, 3, 3, 2), seed=1) if transposed else make((6, 2, 3, 2), seed=1)
    out_pad = [1, 0] if transposed else [0, 0]
    k = 6 if transposed else 6
    check_op("aten::convolution", x, w, make((k,), seed=2), [2, 1], [1, 1], [1, 1], transposed, out_pad, 2)
    check_op("aten::convolution", x.to(memory_format=torch.channels_last), w, None, [1, 1], [0, 1], [2, 1],
             transposed, [0, 0], 2)
    w1 = make((4, 3, 3), seed=3) if transposed else make((6, 4, 3), seed=3)
    check_op("aten::convolution", make((2, 4, 7)), w1, None, [2], [1], [1], transposed, [1] if transposed else [0], 1)


def test_bad_inputs(on_cuda):
    x, w = make((1, 3, 6, 5)), make((4, 3, 3, 3), seed=1)
    check_raises("aten::conv2d", x, make((4, 2, 3, 3)), None, [1, 1], [0, 0], match="channels")
    check_raises("aten::conv2d", x, make((4, 3, 3, 3)), None, [1, 1], [0, 0], [1, 1], 2, match="groups")
    check_raises("aten::conv2d", make((1, 3, 2, 2)), w, None, [1, 1], [0, 0], match="can't be greater")
    check_raises("aten::conv2d.padding", x, w, None, [2, 1], "same", match="strided")
    check_raises("aten::conv2d", make((3, 6)), w, None, [1, 1], [0, 0], match="input")
    check_raises("aten::conv2d", x, w, make((5,)), [1, 1], [0, 0], match="bias")
    check_raises("aten::conv2d", x, w.half(), None, [1, 1], [0, 0], match="dtype|float")
    check_raises("aten::conv_transpose2d.input", x, make((3, 2, 3, 3)), None, [1, 1], [0, 0], [1, 1],
                 match="output_padding")
    with pytest.raises(NbxError, match="padding string"):
        run_op("aten::conv2d.padding", x, w, None, [1, 1], "full")
    for op, weight in (("conv_transpose1d", make((3, 2, 3))), ("conv_transpose2d", make((3, 2, 3, 3)))):
        with pytest.raises(NbxError, match=f"{op}: padding must be ints, got a string"):
            get_registry().lookup(f"aten::{op}")(from_torch(x[0] if op.endswith("1d") else x),
                                                  from_torch(weight), None, 1, "same")
    with pytest.raises(DeviceError, match="device"):
        get_registry().call("aten::conv2d", from_torch(x), on_cuda(from_torch(w)), None, [1, 1], [0, 0])


def _ref_wide(dtype: str, fn):
    """The reference for long reductions: half types in float32 math, float32 in float64 math (torch's
    own float32 convolution strays from the exact result more than float32's tolerance), rounded."""
    if dtype == "float64":
        return None
    wide = torch.float32 if dtype in HALF_TOL else torch.float64

    def ref(x, w, b, *args):
        return fn(x.to(wide), w.to(wide), None if b is None else b.to(wide), *args).to(x.dtype)
    return ref


def _small_tiles(monkeypatch, parts: int = 1):
    """Force 16x16x16 tiles in groups of 2 row tiles, so small layers span several tiles of each kind,
    and the reduction split into ``parts``. Numbers only: the aot pass compiles the tiles that ship."""
    from nbx_conv import convolution

    if not numeric():
        pytest.skip("forced tiles are checked for their numbers; aot compiles the shipped tiles")

    monkeypatch.setattr(convolution.CONV, "lookup", lambda *a, **kw: {
        "BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "num_warps": 4, "num_stages": 2, "GROUP_M": 2, "PARTS": parts})


def _weight_layouts(w):
    """The weight as torch holds parameters, channels-last, and contiguous along output channels."""
    return [w, w.to(memory_format=torch.channels_last), w.permute(1, 2, 3, 0).contiguous().permute(3, 0, 1, 2)]


@pytest.mark.parametrize(("dtype", "tiles"), [("float32", "default"), ("float32", "small"), ("bfloat16", "default"),
                                             ("float64", "default")])
def test_conv2d_taps_channel_blocks(dtype, tiles, monkeypatch):
    # 40 channels: one partial block of 64, or blocks 16 + 16 + 8 of 16; 24 output channels, 60 rows.
    if tiles == "small":
        _small_tiles(monkeypatch)
    x, b = make((2, 40, 5, 6), dtype), make((24,), dtype, seed=2)
    ref = _ref_wide(dtype, torch.ops.aten.conv2d.default)
    ws = _weight_layouts(make((24, 40, 3, 3), dtype, seed=1))
    for xl in [x.to(memory_format=torch.channels_last)] + ([] if tiles == "small" else [x]):
        for w in ws[:1] if tiles == "small" else ws:
            check_op("aten::conv2d", xl, w, b, [1, 1], [1, 1], [1, 1], 1, torch_fn=ref, **_tol(dtype))
    # 32 channels per group in blocks of 16 (no channel mask), stride, dilation, groups.
    w = make((48, 32, 3, 2), dtype, seed=3)
    check_op("aten::conv2d", make((1, 64, 7, 6), dtype).to(memory_format=torch.channels_last), w, None, [2, 1],
             [1, 2], [2, 1], 2, torch_fn=ref, **_tol(dtype))


def test_conv2d_taps_many_channel_blocks():
    # 80 channels: a full block of 64 and a partial one at the default tiles, with a zero-padded border.
    x, w = make((1, 80, 4, 5)), make((8, 80, 3, 3), seed=1)
    check_op("aten::conv2d", x.to(memory_format=torch.channels_last), w, make((8,), seed=2), [1, 1], [2, 1],
             torch_fn=_ref_wide("float32", torch.ops.aten.conv2d.default), **_tol("float32"))


@pytest.mark.parametrize("tiles", ["default", "small"])
def test_conv2d_taps_wide_window(tiles, monkeypatch):
    # 7x5 = 35 taps: more than a row's tap bits hold, so each step tests the window's bounds instead.
    if tiles == "small":
        _small_tiles(monkeypatch, parts=2)
    ref, tol = _ref_wide("float32", torch.ops.aten.conv2d.default), _tol("float32")
    x, w = make((2, 16, 6, 7)), make((8, 16, 7, 5), seed=1)
    for xl in (x, x.to(memory_format=torch.channels_last)):
        check_op("aten::conv2d", xl, w, make((8,), seed=2), [1, 2], [3, 2], [1, 1], torch_fn=ref, **tol)
    # 5x6 = 30 taps, dilated: tap bits
    check_op("aten::conv2d", x, make((8, 16, 5, 6), seed=3), None, [1, 1], [4, 2], [2, 1], torch_fn=ref, **tol)


@pytest.mark.parametrize("tiles", ["default", "small"])
def test_conv2d_pointwise(tiles, monkeypatch):
    # 1x1 without padding is a GEMM over a strided view of the input (ResNet's downsampling shortcut).
    if tiles == "small":
        _small_tiles(monkeypatch)
    x = make((2, 48, 7, 6))
    ws = _weight_layouts(make((40, 48, 1, 1), seed=1))
    for xl in [x.to(memory_format=torch.channels_last)] + ([] if tiles == "small" else [x]):
        for w in ws[:1] if tiles == "small" else ws:
            check_op("aten::conv2d", xl, w, make((40,), seed=2), [2, 2], [0, 0])
        check_op("aten::conv2d", xl, make((36, 24, 1, 1), seed=3), None, [1, 2], [0, 0], [3, 1], 2)
    xb = x.bfloat16().to(memory_format=torch.channels_last)
    check_op("aten::conv2d", xb, make((40, 48, 1, 1), "bfloat16", seed=1), None, [2, 1], [0, 0],
             torch_fn=_ref_half(torch.ops.aten.conv2d.default), **_tol("bfloat16"))
    # A padded 1x1 reads outside the input: the taps loop, not the pointwise one.
    check_op("aten::conv2d", x, make((40, 48, 1, 1), seed=1), None, [2, 2], [1, 0])


@pytest.mark.parametrize("tiles", ["default", "small"])
def test_conv_transpose2d_taps(tiles, monkeypatch):
    # 16 input channels per group take the taps loop backwards; the weight (C_in, C_out/groups, kH, kW).
    if tiles == "small":
        _small_tiles(monkeypatch)
    x = make((2, 32, 4, 3))
    w = make((32, 20, 3, 2), seed=1)
    w_cl = w.permute(1, 2, 3, 0).contiguous().permute(3, 0, 1, 2)  # input channels contiguous
    w_k = w.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2)  # output channels contiguous
    cases = [(x, w)] if tiles == "small" else [(xl, ww) for xl in (x, x.to(memory_format=torch.channels_last))
                                               for ww in (w, w_cl, w_k)]
    for xl, ww in cases:
        check_op("aten::conv_transpose2d.input", xl, ww, make((40,), seed=2), [2, 1], [1, 0], [1, 0], 2, [1, 2],
                 torch_fn=_ref_wide("float32", torch.ops.aten.conv_transpose2d.input))
    check_op("aten::conv_transpose2d.input", x, make((32, 24, 1, 1), seed=3), None, [2, 2], [0, 0], [1, 1], 1,
             [1, 1])


@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_conv2d_gpu_tiles_of_64_channel_layers(dtype, monkeypatch):
    # The GPU's tiles for 3x3 layers of 64 output channels (128 x 64 x 64, 4 warps, 3 stages) on a
    # small layer: numbers on the cpu backend, compiled by aot.
    from nbx_conv import convolution

    from nbx_core.runtime import traits

    rule = convolution.CONV.rule
    monkeypatch.setattr(convolution, "TRAITS", traits.traits("cuda"))
    monkeypatch.setattr(convolution.CONV, "lookup", lambda dtype, m, *a, **kw: rule(dtype, max(m, 65536), *a))
    assert rule(dtype, 65536, 64, 1, 64, 9, False) == {"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 64, "num_warps": 4,
                                                       "num_stages": 3, "GROUP_M": 8, "PARTS": 1}
    x = make((2, 64, 9, 13), dtype).to(memory_format=torch.channels_last)  # 234 pixels: a ragged tile
    w, b = make((64, 64, 3, 3), dtype, seed=1), make((64,), dtype, seed=2)
    check_op("aten::conv2d", x, w, b, [1, 1], [1, 1], torch_fn=_ref_wide(dtype, torch.ops.aten.conv2d.default),
             **_tol(dtype))


def test_conv_int64_offsets(monkeypatch):
    # Inputs past 2**31 elements index with int64 offsets: every reduction loop (taps with and without
    # tap bits, pointwise, flat, transposed) and the split reduction's second pass, on small tensors.
    from nbx_conv import convolution

    monkeypatch.setattr(convolution, "needs_int64", lambda *a: True)
    lookup = convolution.CONV.lookup
    ref, tol = _ref_wide("float32", torch.ops.aten.conv2d.default), _tol("float32")
    x = make((2, 16, 6, 7)).to(memory_format=torch.channels_last)
    check_op("aten::conv2d", x, make((8, 16, 3, 3), seed=1), make((8,), seed=2), [1, 1], [1, 1], torch_fn=ref, **tol)
    check_op("aten::conv2d", x, make((8, 16, 7, 5), seed=3), None, [1, 2], [3, 2], torch_fn=ref, **tol)
    check_op("aten::conv2d", x, make((8, 16, 1, 1), seed=4), None, [2, 1], [0, 0], torch_fn=ref, **tol)
    check_op("aten::conv2d", make((1, 3, 9, 8)), make((8, 3, 7, 7), seed=5), None, [2, 2], [3, 3], torch_fn=ref,
             **tol)
    check_op("aten::conv_transpose2d.input", make((2, 16, 4, 3)), make((16, 8, 3, 3), seed=6), None, [2, 1], [1, 1],
             [1, 0], 1, [1, 1], torch_fn=_ref_wide("float32", torch.ops.aten.conv_transpose2d.input), **tol)
    monkeypatch.setattr(convolution.CONV, "lookup", lambda *a, **kw: {**lookup(*a, **kw), "PARTS": 3})
    check_op("aten::conv2d", x, make((8, 16, 3, 3), seed=1), make((8,), seed=2), [1, 1], [1, 1], torch_fn=ref, **tol)


@pytest.mark.parametrize("dtype", ["bfloat16", "float64"])  # float32 and float64 partial sums
def test_conv_split_reduction(dtype, monkeypatch):
    # Reductions split into parts (as for 7x7 maps on the GPU), summed by a second kernel, bias there.
    from nbx_conv import convolution

    lookup = convolution.CONV.lookup
    parts = {"n": 3}
    monkeypatch.setattr(convolution.CONV, "lookup", lambda *a, **kw: {**lookup(*a, **kw), "PARTS": parts["n"]})
    ref = _ref_wide(dtype, torch.ops.aten.conv2d.default)
    tol = _tol(dtype)
    x = make((2, 32, 5, 4), dtype)
    w, b = make((24, 16, 3, 3), dtype, seed=1), make((24,), dtype, seed=2)
    for xl in (x, x.to(memory_format=torch.channels_last)):  # taps: 9 steps in parts of 3
        check_op("aten::conv2d", xl, w, b, [1, 1], [1, 1], [1, 1], 2, torch_fn=ref, **tol)
    # The stem's flat reduction: 147 in 3 steps of 64, one per part.
    check_op("aten::conv2d", make((1, 3, 9, 8), dtype), make((8, 3, 7, 7), dtype, seed=3), make((8,), dtype, seed=4),
             [2, 2], [3, 3], torch_fn=ref, **tol)
    parts["n"] = 2  # pointwise: one step, so the second part only stores zeros
    check_op("aten::conv2d", x.to(memory_format=torch.channels_last), make((40, 32, 1, 1), dtype, seed=5), None,
             [2, 2], [0, 0], torch_fn=ref, **tol)
    check_op("aten::conv_transpose2d.input", x, make((32, 8, 3, 3), dtype, seed=6), None, [2, 1], [1, 1], [1, 0], 2,
             [1, 1], torch_fn=_ref_wide(dtype, torch.ops.aten.conv_transpose2d.input), **tol)


@pytest.mark.parametrize("parts", [1, 2])
def test_float64_takes_small_tiles(parts, monkeypatch):
    # On a GPU float64 multiplies in registers on tiles of at most 32 x 32 x 8 (larger ones need more
    # shared memory than an SM has, as the 7x7 stem did): the stem's flat reduction, taps, pointwise
    # and transposed layers on those tiles, with and without a split reduction.
    from nbx_conv import convolution

    if not numeric():
        pytest.skip("forced tiles are checked for their numbers; aot compiles the GPU's float64 tiles")
    monkeypatch.setattr(convolution.CONV, "lookup", lambda *a, **kw: {
        "BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 8, "num_warps": 4, "num_stages": 2, "GROUP_M": 2, "PARTS": parts})
    x = make((2, 20, 9, 8), "float64")
    check_op("aten::conv2d", make((2, 3, 12, 11), "float64"), make((40, 3, 7, 7), "float64", seed=1),
             make((40,), "float64", seed=2), [2, 2], [3, 3])
    check_op("aten::conv2d", x.to(memory_format=torch.channels_last), make((36, 20, 3, 3), "float64", seed=3),
             None, [1, 1], [1, 1])
    check_op("aten::conv2d", x, make((36, 20, 1, 1), "float64", seed=4), None, [1, 1], [0, 0])
    check_op("aten::conv_transpose2d.input", x, make((20, 12, 3, 3), "float64", seed=5), None, [2, 1], [1, 1])


def test_float64_stem_compiles_within_shared_memory():
    # The 7x7 stem in float64 at the GPU's own tiles: the aot pass compiles it for sm_90 and checks its
    # shared memory against the SM's (it needed 256 KB at the half types' tiles).
    check_op("aten::conv2d", make((1, 3, 40, 40), "float64"), make((64, 3, 7, 7), "float64", seed=1), None,
             [2, 2], [3, 3])


# 3-D convolution: the same implicit GEMM with a depth axis. Sizes stay small (the interpreter).
CL3 = torch.channels_last_3d
CONV3D, CONVT3D = torch.ops.aten.conv3d.default, torch.ops.aten.conv_transpose3d.input


def _weight_layouts_3d(w):
    """A 3-D weight as torch holds parameters, channels-last, and contiguous along output channels."""
    return [w, w.to(memory_format=CL3), w.permute(1, 2, 3, 4, 0).contiguous().permute(4, 0, 1, 2, 3)]


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16", "float64"])
def test_conv3d_dtypes(dtype):
    x, w, b = make((1, 3, 4, 5, 4), dtype), make((4, 3, 3, 2, 3), dtype, seed=1), make((4,), dtype, seed=2)
    check_op("aten::conv3d", x, w, b, [1, 2, 1], [1, 0, 1], [2, 1, 1], 1, torch_fn=_ref_wide(dtype, CONV3D),
             **_tol(dtype))


@pytest.mark.parametrize("case", [
    ([1, 1, 1], [0, 0, 0], [1, 1, 1], 1), ([2, 1, 2], [1, 1, 0], [1, 2, 1], 1), ([1, 2, 1], [0, 1, 2], [2, 1, 1], 2),
    ([1, 1, 3], [1, 1, 1], [1, 1, 1], 4),
])
def test_conv3d_stride_padding_dilation_groups(case):
    # Few channels per group: the flat reduction over (channel, kd, kh, kw).
    stride, padding, dilation, groups = case
    x, w = make((2, 4, 5, 4, 6)), make((8, 4 // groups, 2, 3, 2), seed=1)
    check_op("aten::conv3d", x, w, make((8,), seed=2), stride, padding, dilation, groups)
    check_op("aten::conv3d", x.to(memory_format=CL3), w, None, stride, padding, dilation, groups)


def test_conv3d_layouts_unbatched_and_empty_batch():
    x, w, b = make((2, 3, 4, 3, 5)), make((4, 3, 2, 3, 3), seed=1), make((4,), seed=2)
    for _, xl in layouts(x):
        check_op("aten::conv3d", xl, w, b, [1, 1, 2], [1, 1, 1])
    check_op("aten::conv3d", x.permute(0, 1, 2, 4, 3), w, b, [2, 1, 1], [0, 1, 1])
    got = check_op("aten::conv3d", x.to(memory_format=CL3), w.to(memory_format=CL3), b, [1, 1, 1], [1, 0, 1])
    assert got.stride()[1] == 1  # channels-last in, channels-last out (torch's rule)
    check_op("aten::conv3d", x[0], w, None, [1, 1, 1], [1, 1, 1])
    check_op("aten::conv3d", x[:0], w, None, [1, 1, 1], [1, 1, 1])


@pytest.mark.parametrize("dilation", [[1, 1, 1], [2, 1, 1], [1, 2, 3]])
def test_conv3d_padding_strings(dilation):
    # Even kernel sizes: 'same' puts the odd padding pixel after the input, as torch does.
    x, w = make((1, 3, 4, 5, 6)), make((4, 3, 2, 3, 2), seed=1)
    check_op("aten::conv3d.padding", x, w, make((4,), seed=2), [1, 1, 1], "same", dilation)
    check_op("aten::conv3d.padding", x, w, None, [2, 1, 2], "valid", dilation)


@pytest.mark.parametrize(("dtype", "tiles"), [("float32", "default"), ("float32", "small"), ("bfloat16", "default")])
def test_conv3d_taps(dtype, tiles, monkeypatch):
    # 16+ channels per group: the (tap, channel block) loop. 3x3x3 = 27 taps fit a row's tap bits.
    ref, tol = _ref_wide(dtype, CONV3D), _tol(dtype)
    b, w = make((24,), dtype, seed=2), make((24, 20, 3, 3, 3), dtype, seed=1)
    if tiles == "small":  # 2 x 2 output tiles, each over 27 taps x 2 channel blocks
        _small_tiles(monkeypatch)
        check_op("aten::conv3d", make((1, 20, 3, 3, 3), dtype).to(memory_format=CL3), w, b, [1, 1, 1], [1, 1, 1],
                 torch_fn=ref, **tol)
        return
    x = make((2, 20, 3, 4, 5), dtype)
    ws = _weight_layouts_3d(w)
    cases = [(x.to(memory_format=CL3), ws[0]), (x, ws[1]), (x.to(memory_format=CL3), ws[2])]
    for xl, wl in cases if dtype == "float32" else cases[:1]:
        check_op("aten::conv3d", xl, wl, b, [1, 1, 1], [1, 1, 1], [1, 1, 1], 1, torch_fn=ref, **tol)
    # 4x3x3 = 36 taps: more than the tap bits hold, so steps test the window's bounds; groups, stride, dilation.
    x = make((1, 32, 5, 4, 4), dtype).to(memory_format=CL3)
    check_op("aten::conv3d", x, make((16, 16, 4, 3, 3), dtype, seed=3), None, [1, 1, 2], [2, 1, 1], [1, 2, 1], 2,
             torch_fn=ref, **tol)


def test_conv3d_pointwise():
    # 1x1x1 without padding: a GEMM over a strided view of the input; padded, the taps loop.
    ref, tol = _ref_wide("float32", CONV3D), _tol("float32")
    x = make((2, 32, 3, 4, 5))
    for xl in (x, x.to(memory_format=CL3)):
        check_op("aten::conv3d", xl, make((24, 32, 1, 1, 1), seed=1), make((24,), seed=2), [2, 1, 2], [0, 0, 0],
                 torch_fn=ref, **tol)
    check_op("aten::conv3d", x, make((24, 16, 1, 1, 1), seed=3), None, [1, 2, 1], [0, 0, 0], [1, 1, 1], 2,
             torch_fn=ref, **tol)
    check_op("aten::conv3d", x, make((24, 32, 1, 1, 1), seed=1), None, [2, 2, 1], [1, 0, 0], torch_fn=ref, **tol)


@pytest.mark.parametrize("case", [
    ([1, 1, 1], [0, 0, 0], [0, 0, 0], 1, [1, 1, 1]), ([2, 1, 2], [1, 0, 1], [1, 0, 1], 1, [1, 1, 1]),
    ([2, 3, 1], [0, 1, 0], [1, 2, 0], 2, [1, 1, 2]), ([1, 2, 2], [1, 1, 0], [0, 0, 1], 2, [2, 1, 1]),
])
def test_conv_transpose3d(case):
    stride, padding, out_pad, groups, dilation = case
    x, w = make((2, 4, 3, 2, 3)), make((4, 3, 2, 3, 2), seed=1)
    check_op("aten::conv_transpose3d.input", x, w, make((3 * groups,), seed=2), stride, padding, out_pad, groups,
             dilation)
    check_op("aten::conv_transpose3d", x.to(memory_format=CL3), w, None, stride, padding, out_pad, groups, dilation)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_conv_transpose3d_taps(dtype):
    # 16 input channels per group take the taps loop backwards; weight layouts as the forward test.
    ref, tol = _ref_wide(dtype, CONVT3D), _tol(dtype)
    x = make((1, 32, 3, 2, 3), dtype)
    ws = _weight_layouts_3d(make((32, 8, 3, 2, 3), dtype, seed=1))
    cases = [(x, ws[0]), (x.to(memory_format=CL3), ws[1]), (x, ws[2])]
    for xl, w in cases if dtype == "float32" else cases[:1]:
        check_op("aten::conv_transpose3d.input", xl, w, make((16,), dtype, seed=2), [2, 1, 2], [1, 0, 1], [1, 0, 0],
                 2, [1, 2, 1], torch_fn=ref, **tol)


@pytest.mark.parametrize("transposed", [False, True])
def test_convolution_export_signature_3d(transposed):
    x = make((2, 4, 3, 4, 3))
    w = make((4, 3, 2, 3, 2), seed=1) if transposed else make((6, 2, 2, 3, 2), seed=1)
    out_pad = [1, 0, 1] if transposed else [0, 0, 0]
    check_op("aten::convolution", x, w, make((6,), seed=2), [2, 1, 2], [1, 1, 0], [1, 1, 1], transposed, out_pad, 2)
    check_op("aten::convolution", x.to(memory_format=CL3), w, None, [1, 1, 1], [0, 1, 1], [1, 2, 1], transposed,
             [0, 0, 0], 2)


def test_conv3d_split_reduction(monkeypatch):
    # Reductions split into parts, summed by a second kernel that sees depth and height as one axis of
    # the (contiguous or channels-last) output.
    from nbx_conv import convolution

    lookup = convolution.CONV.lookup
    monkeypatch.setattr(convolution.CONV, "lookup", lambda *a, **kw: {**lookup(*a, **kw), "PARTS": 3})
    dtype = "bfloat16"
    tol = _tol(dtype)
    x, b = make((2, 32, 3, 4, 3), dtype), make((24,), dtype, seed=2)
    for xl in (x, x.to(memory_format=CL3)):
        check_op("aten::conv3d", xl, make((24, 16, 3, 2, 3), dtype, seed=1), b, [1, 1, 1], [1, 1, 1], [1, 1, 1], 2,
                 torch_fn=_ref_wide(dtype, CONV3D), **tol)
    check_op("aten::conv3d", make((1, 3, 5, 4, 6), dtype), make((8, 3, 3, 3, 3), dtype, seed=3), b[:8], [2, 1, 2],
             [1, 1, 1], torch_fn=_ref_wide(dtype, CONV3D), **tol)
    check_op("aten::conv_transpose3d.input", x, make((32, 8, 2, 3, 2), dtype, seed=4), None, [2, 1, 1], [0, 1, 1],
             [1, 0, 0], 2, [1, 1, 1], torch_fn=_ref_wide(dtype, CONVT3D), **tol)


def test_conv3d_int64_offsets(monkeypatch):
    # Offsets past 2**31 elements: the depth terms of every reduction loop in int64, on small tensors.
    from nbx_conv import convolution

    monkeypatch.setattr(convolution, "needs_int64", lambda *a: True)
    ref, tol = _ref_wide("float32", CONV3D), _tol("float32")
    x = make((2, 16, 3, 4, 5)).to(memory_format=CL3)
    check_op("aten::conv3d", x, make((8, 16, 3, 3, 3), seed=1), make((8,), seed=2), [1, 1, 1], [1, 1, 1],
             torch_fn=ref, **tol)
    check_op("aten::conv3d", x, make((8, 16, 4, 3, 3), seed=3), None, [1, 2, 1], [2, 1, 1], torch_fn=ref, **tol)
    check_op("aten::conv3d", x, make((8, 16, 1, 1, 1), seed=4), None, [2, 1, 2], [0, 0, 0], torch_fn=ref, **tol)
    check_op("aten::conv3d", make((1, 3, 4, 5, 4)), make((8, 3, 3, 3, 3), seed=5), None, [1, 2, 1], [1, 1, 1],
             torch_fn=ref, **tol)
    check_op("aten::conv_transpose3d.input", make((1, 16, 3, 2, 3)), make((16, 8, 2, 3, 2), seed=6), None,
             [2, 1, 2], [1, 1, 0], [1, 0, 1], 1, [1, 1, 1], torch_fn=_ref_wide("float32", CONVT3D), **tol)


def test_conv3d_bad_inputs():
    x, w = make((1, 3, 4, 5, 4)), make((4, 3, 2, 3, 3), seed=1)
    check_raises("aten::conv3d", x, make((4, 3, 3, 3), seed=1), None, [1, 1, 1], [0, 0, 0], match="5-D")
    check_raises("aten::conv3d", x, make((4, 2, 2, 3, 3)), None, [1, 1, 1], [0, 0, 0], match="channels")
    check_raises("aten::conv3d", make((1, 3, 1, 5, 4)), w, None, [1, 1, 1], [0, 0, 0], match="can't be greater")
    check_raises("aten::conv3d.padding", x, w, None, [1, 2, 1], "same", match="strided")
    check_raises("aten::conv3d", x, w, make((5,)), [1, 1, 1], [0, 0, 0], match="bias")
    check_raises("aten::conv3d", x, w, None, [1, 1], [0, 0, 0], match="stride")
    check_raises("aten::conv_transpose3d.input", x, make((3, 2, 2, 2, 2)), None, [1, 1, 1], [0, 0, 0], [0, 1, 0],
                 match="output_padding")
    check_raises("aten::convolution", make((1, 3, 2, 2, 2, 2)), make((4, 3, 1, 1, 1, 1)), None, [1] * 4, [0] * 4,
                 [1] * 4, False, [0] * 4, 1, match="3-D")


def test_conv3d_modules_export_and_run(tmp_path):
    # torch.export keeps nn.Conv3d as aten::conv3d (conv3d.padding for 'same') and nn.ConvTranspose3d as
    # aten::conv_transpose3d.input: a graph of both runs on NBX.
    from nbx_core.graph import load, read_graph
    from nbx_core.graph.export import export_module

    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Conv3d(3, 4, (2, 3, 3), stride=(1, 2, 1), padding=1),
                                 torch.nn.ConvTranspose3d(4, 4, 2, stride=2, output_padding=(1, 0, 0), groups=2),
                                 torch.nn.Conv3d(4, 2, 3, padding="same", dilation=(1, 2, 1))).eval()
    x = make((1, 3, 3, 4, 3))
    path = export_module(module, (x,), tmp_path / "conv3d.nbx")
    ops = {n.op for n in read_graph(path).nodes}
    assert {"aten::conv3d.default", "aten::conv3d.padding", "aten::conv_transpose3d.input"} <= ops, ops
    prog = load(path)
    if not numeric():
        prog.check_compiles(x)
        return
    with torch.no_grad():
        want = module(x)
    assert_close(prog(x), want, rtol=2e-5, atol=5e-5)
