"""Inference batch norm folded into the convolution before it at load (nbx_core.graph.fold)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from nbx_core.backend import kernel_device_type
from nbx_core.graph import load
from nbx_core.graph.export import export_module
from nbx_core.testing import numeric


class _ConvBN(torch.nn.Module):
    def __init__(self, share: bool, bias: bool, affine: bool) -> None:
        super().__init__()
        self.share = share
        self.conv = torch.nn.Conv2d(4, 6, 3, padding=1, bias=bias)
        self.bn = torch.nn.BatchNorm2d(6, affine=affine)
        self.bn.running_mean.uniform_(-0.5, 0.5)
        self.bn.running_var.uniform_(0.5, 2.0)
        if affine:
            self.bn.weight.data.uniform_(0.5, 1.5)
            self.bn.bias.data.uniform_(-0.5, 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x)
        z = torch.relu(self.bn(y))
        return z + y if self.share else z


def _check(module: torch.nn.Module, x: torch.Tensor, tmp_path, folded: int, rtol: float = 1e-5):
    """The module's program, after checking how many batch norms it folded and, on a backend that
    computes, its output against torch (in float32)."""
    prog = load(export_module(module, (x,), tmp_path / "m.nbx"), device=kernel_device_type())
    assert prog.folded_batch_norms == folded
    if numeric():
        with torch.no_grad():
            want = module.float()(x.float()).numpy()
        got = torch.from_dlpack(prog(x)).float().cpu().numpy()
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * np.abs(want).max())
    return prog


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("affine", [True, False])
def test_folded_programs_match_torch_and_drop_the_folded_weights(bias, affine, tmp_path):
    torch.manual_seed(4)
    prog = _check(_ConvBN(share=False, bias=bias, affine=affine).eval(), torch.randn(2, 4, 5, 7), tmp_path, 1)
    # Around the convolution, the layout pass's input and output conversions (nbx_core.graph.layout).
    assert [n.op for n in prog.graph.nodes] == [
        "nbx::channels_last",
        "aten::conv2d.default",
        "aten::relu.default",
        "aten::contiguous.default",
    ]
    # Only the folded weight and bias are left: the originals and the statistics are dropped.
    assert [w.kind for w in prog.graph.weights] == ["constant", "constant"]
    assert sorted(prog._buffers) == sorted(w.key for w in prog.graph.weights)


def test_a_convolution_read_elsewhere_keeps_its_batch_norm(tmp_path):
    torch.manual_seed(4)
    prog = _check(_ConvBN(share=True, bias=True, affine=True).eval(), torch.randn(2, 4, 5, 7), tmp_path, 0)
    assert any(n.op == "aten::batch_norm.default" for n in prog.graph.nodes)


def test_a_bfloat16_fold_stays_within_the_rounding_of_its_weights(tmp_path):
    torch.manual_seed(4)
    module = _ConvBN(share=False, bias=True, affine=True).eval().to(torch.bfloat16)
    prog = _check(module, torch.randn(2, 4, 5, 7, dtype=torch.bfloat16), tmp_path, 1, rtol=3e-2)
    assert all(w.dtype == "bfloat16" for w in prog.graph.weights)
