"""Linear layers that read one input merged into one product at load (nbx_core.graph.siblings)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from nbx_core.backend import kernel_device_type
from nbx_core.cli.run import describe_plan
from nbx_core.graph import load
from nbx_core.graph.export import export_module
from nbx_core.testing import numeric

F = torch.nn.functional


class _Attention(torch.nn.Module):
    """Queries, keys and values as three linears on one input, split into heads by views."""

    def __init__(
        self,
        kv: int = 16,
        bias: tuple[bool, bool, bool] = (True, True, True),
        regroup: bool = False,
    ) -> None:
        super().__init__()
        self.q = torch.nn.Linear(32, 32, bias=bias[0])
        self.k = torch.nn.Linear(32, kv, bias=bias[1])
        self.v = torch.nn.Linear(32, kv, bias=bias[2])
        self.regroup = regroup

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        q = self.q(x).view(b, s, -1, 8).transpose(1, 2)
        k = self.k(x).view(b, s, -1, 8).transpose(1, 2)
        if self.regroup:  # a view that merges the sequence with head features: not a view of a slice
            v = self.v(x).view(b, -1, 8).unsqueeze(1).expand(b, 4, s * self.v.out_features // 8, 8)
            v = v[:, :, :s]
        else:
            v = self.v(x).view(b, s, -1, 8).transpose(1, 2)
        k = k.repeat_interleave(q.shape[1] // k.shape[1], dim=1)
        v = v.repeat_interleave(q.shape[1] // v.shape[1], dim=1)
        return F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, s, -1)


def _program(module: torch.nn.Module, x: torch.Tensor, tmp_path, merged: int, **load_kwargs):
    """The module's program, after checking how many linears it merged away and, on a backend that
    computes, that its output equals the unmerged program's."""
    path = export_module(module.eval(), (x,), tmp_path / "m.nbx")
    prog = load(path, device=kernel_device_type(), **load_kwargs)
    assert prog.merged_linears == merged
    if numeric():
        plain = load(path, device=kernel_device_type(), fusion=False)
        want = _arrays(plain(x))
        with torch.no_grad():
            for w, t in zip(want, _arrays(module(x)), strict=True):
                np.testing.assert_allclose(w, t, rtol=1e-4, atol=1e-5)
        for _ in range(2):  # the recorded run, then the plan's replay
            for got, w in zip(_arrays(prog(x)), want, strict=True):
                np.testing.assert_allclose(got, w, rtol=1e-5, atol=1e-6)
    return prog


def _arrays(value) -> list[np.ndarray]:
    return [np.asarray(v.numpy()) for v in (value if isinstance(value, tuple) else (value,))]


@pytest.mark.parametrize("kv", [32, 16])
def test_queries_keys_and_values_become_one_product(kv, tmp_path):
    torch.manual_seed(0)
    prog = _program(_Attention(kv), torch.randn(2, 5, 32), tmp_path, 2)
    linears = [n for n in prog.graph.nodes if n.op == "aten::linear.default"]
    assert len(linears) == 1
    stacked = {w.name: w for w in prog.graph.weights}[linears[0].args[1].name]
    assert stacked.shape == (32 + 2 * kv, 32)
    slices = [n for n in prog.graph.nodes if n.op == "aten::slice.Tensor"]
    assert [n.args[1:] for n in slices] == [(-1, 0, 32), (-1, 32, 32 + kv), (-1, 32 + kv, 32 + 2 * kv)]
    # The originals are gone: only the stacked weight and bias are left.
    assert len(prog.graph.weights) == 2


def test_a_member_without_bias_adds_zeros(tmp_path):
    torch.manual_seed(1)
    prog = _program(_Attention(16, bias=(True, False, True)), torch.randn(2, 5, 32), tmp_path, 2)
    bias = next(n for n in prog.graph.nodes if n.op == "aten::linear.default").args[2]
    assert prog._buffers[{w.name: w for w in prog.graph.weights}[bias.name].key].shape == (64,)


def test_a_view_a_slice_cannot_take_becomes_a_copy(tmp_path):
    torch.manual_seed(2)
    prog = _program(_Attention(16, regroup=True), torch.randn(2, 6, 32), tmp_path, 2)
    assert not any(n.op == "aten::view.default" for n in prog.graph.nodes)


class _Gated(torch.nn.Module):
    """A feed-forward gate: an elementwise op reads each linear's result directly."""

    def __init__(self) -> None:
        super().__init__()
        self.gate, self.up = torch.nn.Linear(16, 24, bias=False), torch.nn.Linear(16, 24, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.silu(self.gate(x)) * self.up(x)


class _Shared(torch.nn.Module):
    """Two linears on one input sharing a weight, and a linear whose result is an output."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = torch.nn.Linear(16, 16), torch.nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return F.linear(x, self.a.weight).view(-1), F.linear(x, self.a.weight).view(-1), self.b(x)


class _WrittenView(torch.nn.Module):
    """A view of one result written in place: a slice of a shared product would carry the write."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = torch.nn.Linear(16, 16), torch.nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = self.a(x).view(-1, 4, 4)
        a.mul_(2.0)
        return a.sum(-1) + self.b(x).view(-1, 4, 4).sum(-1)


class _DifferentInputs(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = torch.nn.Linear(16, 16), torch.nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.a(x).view(-1, 4, 4) + self.b(x + 1).view(-1, 4, 4)


@pytest.mark.parametrize("module", [_Gated, _Shared, _WrittenView, _DifferentInputs])
def test_linears_that_must_stay_apart_are_not_merged(module, tmp_path):
    torch.manual_seed(3)
    prog = _program(module(), torch.randn(3, 16), tmp_path, 0)
    assert not any(n.op == "aten::slice.Tensor" for n in prog.graph.nodes)


def test_without_fusion_nothing_is_merged_and_the_plan_says_what_was(tmp_path):
    torch.manual_seed(4)
    x = torch.randn(2, 5, 32)
    prog = _program(_Attention(), x, tmp_path, 0, fusion=False)
    assert sum(n.op == "aten::linear.default" for n in prog.graph.nodes) == 3
    about = {"nodes": 9, "patterns": {}, "merged_linears": 2, "planned": False, "reason": "planning is off"}
    assert describe_plan(about).splitlines()[0] == "plan: 9 nodes, 2 linear layers merged into the product of a sibling"
