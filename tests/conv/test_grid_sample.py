"""Conformance of grid_sampler_2d and grid_sampler_3d against torch CPU."""

from __future__ import annotations

import itertools

import pytest
import torch

from nbx_core.errors import NbxValueError
from nbx_core.testing import check_op, check_raises, make, run_op


def _grid(dtype="float32"):
    g = make((2, 4, 3, 2), low=-1.3, high=1.3, seed=2)
    g[0, 0, 0] = torch.tensor([0.25, -0.5])  # exact half-pixel positions (round half to even)
    g[1, 0, 0] = torch.tensor([1.0, -1.0])
    return g.to(getattr(torch, dtype))


@pytest.mark.parametrize(("interp", "pad", "align"), list(itertools.product(range(3), range(3), (False, True))))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_grid_sampler_2d(interp, pad, align, dtype):
    x = make((2, 3, 5, 4), dtype)
    check_op("aten::grid_sampler_2d", x, _grid(dtype), interp, pad, align)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_grid_sampler_2d_half(dtype):
    # torch's CPU kernel computes half types in their own precision; NBX in float32, rounded once.
    def ref(x, g, *a):
        return torch.ops.aten.grid_sampler_2d(x.float(), g.float(), *a).to(x.dtype)

    x = make((2, 3, 5, 4), dtype)
    for interp, pad in ((0, 0), (1, 1), (2, 2)):
        check_op("aten::grid_sampler_2d", x, _grid(dtype), interp, pad, False, torch_fn=ref)


def test_grid_sampler_2d_layouts():
    x = make((2, 3, 5, 4))
    g = _grid()
    check_op("aten::grid_sampler_2d", x.to(memory_format=torch.channels_last), g, 0, 0, False)
    check_op("aten::grid_sampler_2d", x.transpose(2, 3), g.transpose(1, 2), 2, 1, True)
    wide = torch.empty(2, 4, 3, 4)
    wide[..., ::2] = g
    check_op("aten::grid_sampler_2d", x, wide[..., ::2], 1, 2, False)
    check_op("aten::grid_sampler_2d", make((0, 3, 5, 4)), make((0, 2, 2, 2)), 0, 0, False)
    check_op("aten::grid_sampler_2d", make((1, 2, 1, 1)), make((1, 2, 2, 2), seed=3), 0, 2, True)


def test_grid_sampler_2d_bad():
    x = make((2, 3, 5, 4))
    check_raises("aten::grid_sampler_2d", x, make((1, 4, 3, 2)), 0, 0, False, match="batch")
    check_raises("aten::grid_sampler_2d", x, make((2, 4, 3, 3)), 0, 0, False, match="grid")
    check_raises("aten::grid_sampler_2d", x, _grid().double(), 0, 0, False, match="dtype")
    check_raises("aten::grid_sampler_2d", x[0], make((4, 3, 2)), 0, 0, False, match="4-D")


def _grid3d(dtype="float32"):
    g = make((2, 3, 2, 4, 3), low=-1.3, high=1.3, seed=2)
    g[0, 0, 0, 0] = torch.tensor([0.25, -0.5, 0.0])  # exact half-voxel positions (round half to even)
    g[1, 0, 0, 0] = torch.tensor([1.0, -1.0, 1.0])  # the corners
    g[1, 2, 1, 3] = torch.tensor([2.7, -3.1, 4.2])  # far outside: several reflections
    g[0, 2, 1, 2] = torch.tensor([-0.2, 0.4, -1.2])  # outside along depth only
    return g.to(getattr(torch, dtype))


@pytest.mark.parametrize(("interp", "pad", "align"), list(itertools.product(range(2), range(3), (False, True))))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_grid_sampler_3d(interp, pad, align, dtype):
    x = make((2, 3, 4, 5, 6), dtype)
    check_op("aten::grid_sampler_3d", x, _grid3d(dtype), interp, pad, align, check_stride=True)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_grid_sampler_3d_half(dtype):
    # torch's CPU kernel computes half types in their own precision; NBX in float32, rounded once.
    def ref(x, g, *a):
        return torch.ops.aten.grid_sampler_3d(x.float(), g.float(), *a).to(x.dtype)

    x = make((2, 3, 4, 5, 6), dtype)
    for interp, pad in ((0, 0), (1, 1), (0, 2)):
        check_op("aten::grid_sampler_3d", x, _grid3d(dtype), interp, pad, False, torch_fn=ref)


def test_grid_sampler_3d_layouts():
    x = make((2, 3, 4, 5, 6))
    g = _grid3d()
    # torch's result is contiguous whatever the input's layout.
    check_op("aten::grid_sampler_3d", x.to(memory_format=torch.channels_last_3d), g, 0, 0, False, check_stride=True)
    check_op("aten::grid_sampler_3d", x.transpose(2, 4), g.transpose(1, 3), 1, 2, True, check_stride=True)
    wide = torch.empty(2, 3, 2, 4, 6)
    wide[..., ::2] = g
    check_op("aten::grid_sampler_3d", x, wide[..., ::2], 0, 1, True)
    check_op("aten::grid_sampler_3d", x[:1].expand(2, 3, 4, 5, 6), g, 0, 2, False)
    check_op("aten::grid_sampler_3d", make((0, 3, 4, 5, 6)), make((0, 2, 2, 2, 3)), 0, 0, False)
    check_op("aten::grid_sampler_3d", x, make((2, 0, 2, 2, 3)), 1, 0, False)
    check_op("aten::grid_sampler_3d", make((1, 2, 1, 1, 1)), make((1, 2, 2, 2, 3), seed=3), 0, 2, True)
    check_op("aten::grid_sampler_3d", make((1, 2, 1, 3, 1)), make((1, 2, 2, 2, 3), seed=4), 0, 1, False)


def test_grid_sampler_3d_bad():
    x = make((2, 3, 4, 5, 6))
    g = _grid3d()
    check_raises("aten::grid_sampler_3d", x, g[:1], 0, 0, False, match="batch")
    check_raises("aten::grid_sampler_3d", x, g[..., :2], 0, 0, False, match="grid")
    check_raises("aten::grid_sampler_3d", x, g.double(), 0, 0, False, match="dtype")
    check_raises("aten::grid_sampler_3d", x[0], g[0], 0, 0, False, match="5-D")
    check_raises("aten::grid_sampler_3d", make((2, 3, 0, 5, 6)), g, 0, 0, False, match="non-zero")
    check_raises("aten::grid_sampler_3d", x, g, 2, 0, False, match=r"interpolation_mode 2 \(bicubic\) takes 4-D")
    # torch's CPU kernel takes other mode numbers without a word; NBX refuses them.
    with pytest.raises(NbxValueError, match="padding_mode must be 0, 1 or 2"):
        run_op("aten::grid_sampler_3d", x, g, 0, 3, False)
