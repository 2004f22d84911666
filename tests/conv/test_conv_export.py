"""Adaptive max pooling and 5-D grid sampling in an exported model: torch.export, converted, run on NBX."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from nbx_core.backend import kernel_device_type
from nbx_core.graph import load, read_graph
from nbx_core.graph.export import export_module
from nbx_core.graph.plan import Plan
from nbx_core.testing import numeric


class _PoolAndSample(nn.Module):
    """Adaptive max pools in 1, 2 and 3 dims (with and without indices) and 5-D grid samples."""

    def __init__(self) -> None:
        super().__init__()
        self.pool1 = nn.AdaptiveMaxPool1d(4, return_indices=True)
        self.pool2 = nn.AdaptiveMaxPool2d((3, 4))
        self.pool3 = nn.AdaptiveMaxPool3d((2, 3, 2))

    def forward(self, x: torch.Tensor, v: torch.Tensor, g: torch.Tensor) -> tuple[torch.Tensor, ...]:
        p1, i1 = self.pool1(x.flatten(2))
        p2 = self.pool2(x) * 2.0 + 1.0
        s1 = F.grid_sample(v, g, mode="bilinear", padding_mode="zeros", align_corners=False)
        s2 = F.grid_sample(v, g, mode="nearest", padding_mode="reflection", align_corners=True)
        return p1, i1, p2, self.pool3(v), s1 + s2


def _inputs(seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(2, 3, 7, 6, generator=gen)
    v = torch.randn(2, 3, 4, 5, 6, generator=gen)
    g = torch.rand(2, 3, 2, 4, 3, generator=gen) * 2.6 - 1.3  # some points outside the volume
    return x, v, g


def _compare(got: tuple, want: tuple, call: int) -> None:
    """NBX's outputs against torch's: indices exactly, values to float32 rounding."""
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        where = f"call {call}, output {i}"
        assert tuple(g.shape) == tuple(w.shape), where
        tol = 0.0 if w.dtype == torch.int64 else 1e-5
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=tol, atol=tol, err_msg=where)


def test_adaptive_max_pool_and_grid_sample_3d_export(tmp_path):
    module = _PoolAndSample().eval()
    first = _inputs(0)
    path = export_module(module, first, tmp_path / "pool_sample.nbx")
    ops = {n.op.split(".")[0] for n in read_graph(path).nodes}
    assert {"aten::adaptive_max_pool2d", "aten::adaptive_max_pool3d", "aten::grid_sampler_3d"} <= ops, ops
    prog = load(path, device=kernel_device_type())
    # The first call runs node by node and records the plan; the second, on new values, replays it.
    for call, args in enumerate((first, _inputs(1))):
        if numeric():
            with torch.no_grad():
                _compare(prog(*args), module(*args), call)
            assert isinstance(prog.plan_for(*args), Plan)
        else:  # the aot backend runs no program: it compiles every kernel a run launches
            prog.check_compiles(*args)
