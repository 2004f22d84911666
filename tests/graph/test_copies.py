"""Copies that only attention reads dropped at load (nbx_core.graph.copies)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from nbx_core.backend import kernel_device_type
from nbx_core.cli.run import describe_plan
from nbx_core.graph import load
from nbx_core.graph.export import export_module
from nbx_core.testing import numeric


class _Heads(torch.nn.Module):
    """Whisper's attention: heads split off by view, transpose and contiguous."""

    def __init__(self, reader: str = "attention") -> None:
        super().__init__()
        self.q, self.k, self.v = (torch.nn.Linear(16, 16) for _ in range(3))
        self.reader = reader

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        q, k, v = (p(x).view(b, s, 2, 8).transpose(1, 2).contiguous() for p in (self.q, self.k, self.v))
        if self.reader == "in_place":
            x.mul_(2.0)
        y = torch.nn.functional.scaled_dot_product_attention(q, k, v)
        if self.reader == "view":  # a view needs the copy's strides
            return y + q.view(b, 2, s * 8).view(b, 2, s, 8)
        return y


@pytest.mark.parametrize(("reader", "dropped"), [("attention", 3), ("view", 2), ("in_place", 0)])
def test_copies_only_attention_reads_are_dropped(reader, dropped, tmp_path):
    torch.manual_seed(8)
    module, x = _Heads(reader).eval(), torch.randn(2, 5, 16)
    path = export_module(module, (x.clone(),), tmp_path / "heads.nbx")
    prog = load(path, device=kernel_device_type())
    assert prog.dropped_copies == dropped
    assert sum(n.op == "aten::contiguous.default" for n in prog.graph.nodes) == 3 - dropped
    if numeric():
        with torch.no_grad():
            want = module(x.clone()).numpy()
        np.testing.assert_allclose(prog(x.clone()).numpy(), want, rtol=1e-5, atol=1e-5)
        if reader == "attention":
            assert "_copy_kernel" not in prog.describe(x.clone())["kernels"]


def test_without_fusion_the_copies_stay_and_the_plan_says_what_was_dropped(tmp_path):
    x = torch.randn(2, 5, 16)
    prog = load(export_module(_Heads().eval(), (x,), tmp_path / "heads.nbx"), fusion=False)
    assert prog.dropped_copies == 0
    assert sum(n.op == "aten::contiguous.default" for n in prog.graph.nodes) == 3
    about = {"nodes": 9, "patterns": {}, "dropped_copies": 3, "planned": False, "reason": "planning is off"}
    assert describe_plan(about).splitlines()[0] == "plan: 9 nodes, 3 copies only attention read dropped"


class _Grouped(torch.nn.Module):
    """Grouped-query attention as transformers writes it: 4 query heads share each of 2 key/value heads."""

    def __init__(self, reuse: bool = False) -> None:
        super().__init__()
        self.q, self.kv = torch.nn.Linear(16, 64), torch.nn.Linear(16, 64)
        self.reuse = reuse

    @staticmethod
    def _repeat(x: torch.Tensor, n: int) -> torch.Tensor:
        b, h, s, d = x.shape
        return x[:, :, None, :, :].expand(b, h, n, s, d).reshape(b, h * n, s, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        q = self.q(x).view(b, s, 8, 8).transpose(1, 2)
        k, v = (t.view(b, s, 2, 16).transpose(1, 2)[..., :8] for t in self.kv(x).split(32, dim=-1))
        k, v = self._repeat(k, 4), self._repeat(v, 4)
        y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return y + v if self.reuse else y  # reuse: the repeated values are read again


@pytest.mark.parametrize(("reuse", "dropped"), [(False, 2), (True, 1)])
def test_repeated_key_and_value_heads_become_grouped_attention(reuse, dropped, tmp_path):
    torch.manual_seed(9)
    module, x = _Grouped(reuse).eval(), torch.randn(2, 6, 16)
    prog = load(export_module(module, (x,), tmp_path / "gqa.nbx"), device=kernel_device_type())
    assert prog.dropped_copies == dropped
    attention = next(n for n in prog.graph.nodes if n.op == "aten::scaled_dot_product_attention.default")
    assert attention.kwargs.get("enable_gqa") is True
    assert sum(n.op == "aten::expand.default" for n in prog.graph.nodes) == 2 - dropped
    if numeric():
        with torch.no_grad():
            want = module(x).numpy()
        for _ in range(2):
            np.testing.assert_allclose(prog(x).numpy(), want, rtol=1e-5, atol=1e-5)


def test_attention_given_key_and_value_by_keyword_is_left_alone(tmp_path):
    from nbx_core.graph.copies import drop_attention_copies

    x = torch.randn(2, 6, 16)
    graph = load(export_module(_Grouped().eval(), (x,), tmp_path / "gqa.nbx"), fusion=False).graph
    nodes = [
        dataclasses.replace(n, args=n.args[:1], kwargs={**n.kwargs, "key": n.args[1], "value": n.args[2]})
        if n.op == "aten::scaled_dot_product_attention.default"
        else n
        for n in graph.nodes
    ]
    same, dropped = drop_attention_copies(dataclasses.replace(graph, nodes=tuple(nodes)))
    assert dropped == 0 and same.nodes == tuple(nodes)
