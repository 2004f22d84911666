"""Convolution and global average pool launches as data (nbx_conv.convolution.CONV,
nbx_conv.pooling.GLOBAL_AVG): today's choices on each backend, and config=."""

from __future__ import annotations

import pytest
import torch
from nbx_conv import convolution, pooling

from nbx_core.errors import NbxError
from nbx_core.runtime import tuning
from nbx_core.testing import from_torch, make, numeric, to_torch

pytestmark = pytest.mark.usefixtures("tuning_cache")

# (output pixels, output channels per group, groups, input channels per group, taps, flat) -> the
# (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages, GROUP_M, PARTS) before the choice moved onto
# nbx_core.runtime.tuning: the ResNet-50 stem, 3x3 and 1x1 layers, deep 7x7 maps, small layers.
CONVS = {
    (401408, 64, 1, 3, 49, True): ((256, 64, 32, 8, 3, 8, 1), (128, 64, 64, 1, 1, 8, 1)),
    (100352, 64, 1, 64, 9, False): ((128, 64, 64, 4, 3, 8, 1), (128, 64, 64, 1, 1, 8, 1)),
    (25088, 128, 1, 128, 9, False): ((64, 128, 64, 4, 3, 8, 1), (128, 128, 64, 1, 1, 8, 1)),
    (100352, 64, 1, 64, 1, False): ((128, 64, 32, 4, 4, 8, 1), (128, 64, 64, 1, 1, 8, 1)),
    (1568, 512, 1, 512, 9, False): ((128, 256, 64, 8, 3, 8, 4), (128, 128, 64, 1, 1, 8, 1)),
    (1568, 2048, 1, 512, 1, False): ((128, 256, 64, 8, 3, 8, 1), (128, 128, 64, 1, 1, 8, 1)),
    (10, 8, 2, 4, 9, True): ((64, 16, 64, 8, 4, 8, 1), (16, 16, 64, 1, 1, 8, 1)),
    (100, 300, 1, 16, 9, False): ((128, 256, 16, 8, 3, 8, 1), (128, 128, 16, 1, 1, 8, 1)),
}
# (positions, channels) -> (BLOCK_R, BLOCK_C, num_warps) on sm_90 and on the interpreter.
POOLS = {
    (49, 2048): ((64, 128, 4), (64, 1024, 1)),
    (1, 3): ((1, 4, 4), (1, 4, 1)),
    (4096, 64): ((64, 64, 4), (64, 64, 1)),
    (100, 5000): ((64, 128, 4), (64, 1024, 1)),
}


@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_same_launch_as_before(dtype):
    for target, which in (("sm_90", 0), (None, 1)):
        for args, tiles in CONVS.items():
            config = convolution.CONV.resolve(dtype, *args, target=target)[0]
            assert config == dict(zip(convolution._PARAMS, tiles[which], strict=True)), args
            if tuning.arch() == target:
                assert convolution.CONV.lookup(dtype, *args) == config
        for (hw, c), tiles in POOLS.items():
            config = pooling.GLOBAL_AVG.resolve(dtype, hw, c, target=target)[0]
            assert config == dict(zip(("BLOCK_R", "BLOCK_C", "num_warps"), tiles[which], strict=True))


def test_config_argument_replaces_the_lookup(monkeypatch):
    # A 3x3 layer and a global pool at forced tiles (the reduction split in two), against torch.
    seen, launch = [], convolution.launch
    monkeypatch.setattr(
        convolution, "launch", lambda kernel, grid, *a, **kw: seen.append(kw) or launch(kernel, grid, *a, **kw)
    )
    x, w = make((2, 16, 5, 6)), make((8, 16, 3, 3), seed=1)
    config = {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "num_warps": 2, "num_stages": 2, "GROUP_M": 2, "PARTS": 2}
    out = convolution._conv(
        "conv2d", from_torch(x), from_torch(w), None, (1, 1), (1, 1), (1, 1), False, (0, 0), 1, config=config
    )
    assert (seen[0]["BLOCK_M"], seen[0]["num_warps"], seen[0]["PARTIAL"]) == (16, 2, True)
    if numeric():
        torch.testing.assert_close(to_torch(out), torch.nn.functional.conv2d(x, w, None, 1, 1), rtol=1e-4, atol=1e-4)
    with pytest.raises(NbxError, match="passed as config= to convolution: PARTS must be an integer of at least 1"):
        convolution._conv(
            "conv2d",
            from_torch(x),
            from_torch(w),
            None,
            (1, 1),
            (1, 1),
            (1, 1),
            False,
            (0, 0),
            1,
            config={**config, "PARTS": 0},
        )


def test_sum_of_parts_tiles_as_before():
    # Before the choice moved onto SUM_PARTS: on a GPU 16 pixels by up to 256 channels, on the
    # interpreter up to 128 pixels by all the channels; 4 warps.
    from nbx_core.runtime.launch import next_pow2

    for size in (4, 8):
        for m in (1, 10, 100, 1568, 100352):
            for k in (1, 3, 64, 300, 512, 2048):
                gpu = convolution.SUM_PARTS.resolve(size, m, k, target="sm_90")[0]
                assert gpu == {"BLOCK_M": 16, "BLOCK_N": min(256, next_pow2(k)), "num_warps": 4}
                cpu = convolution.SUM_PARTS.resolve(size, m, k, target=None)[0]
                assert cpu == {"BLOCK_M": min(128, next_pow2(m)), "BLOCK_N": next_pow2(k), "num_warps": 4}


@pytest.mark.parametrize(("backend", "capped"), [("cpu", False), ("cuda", True), ("aot", True)])
def test_float64_tiles_capped_on_a_gpu_only(monkeypatch, backend, capped):
    # float64 multiplies without tensor cores: on a GPU (the traits of cuda and aot) its tiles are at
    # most 32 x 32 x 8 whatever the configuration asks, as before the choice moved onto TRAITS; the
    # interpreter launches the configuration's. float32 keeps them everywhere. The split reduction's
    # second pass takes config= tiles.
    from nbx_core.ops.views import permute
    from nbx_core.runtime import traits

    assert traits.traits(backend).tiles_on_chip is capped
    monkeypatch.setattr(convolution, "TRAITS", traits.traits(backend))
    seen, launch = [], convolution.launch
    monkeypatch.setattr(
        convolution, "launch", lambda kernel, grid, *a, **kw: seen.append(kw) or launch(kernel, grid, *a, **kw)
    )
    config = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 16, "num_warps": 2, "num_stages": 1, "GROUP_M": 2, "PARTS": 2}
    for dtype in ("float64", "float32"):
        x, w, b = make((1, 16, 4, 5), dtype), make((8, 16, 3, 3), dtype, seed=1), make((8,), dtype, seed=2)
        out = convolution._conv(
            "conv2d",
            from_torch(x),
            from_torch(w),
            from_torch(b),
            (1, 1),
            (1, 1),
            (1, 1),
            False,
            (0, 0),
            1,
            config=config,
        )
        if numeric():
            want = torch.nn.functional.conv2d(x, w, b, 1, 1)
            torch.testing.assert_close(to_torch(out), want, rtol=1e-4, atol=1e-4)
    tiles = [(kw["BLOCK_M"], kw["BLOCK_N"], kw.get("BLOCK_K")) for kw in seen]
    assert tiles[0::2] == [(32, 32, 8) if capped else (64, 64, 16), (64, 64, 16)]
    parts = {"BLOCK_M": 4, "BLOCK_N": 8, "num_warps": 2}
    partial = make((3, 20, 8))
    flat = from_torch(torch.zeros(1, 4, 5, 8))
    convolution.sum_parts(from_torch(partial), None, permute(flat, 0, 3, 1, 2), False, config=parts)
    assert (seen[-1]["BLOCK_M"], seen[-1]["BLOCK_N"], seen[-1]["num_warps"]) == (4, 8, 2)
    if numeric():
        torch.testing.assert_close(to_torch(flat).reshape(20, 8), partial.sum(0))
