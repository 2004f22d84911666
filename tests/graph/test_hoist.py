"""Hoisting: a plan runs once the launches that only the input shapes determine (nbx_core.graph.hoist)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from nbx_core.backend import kernel_device_type
from nbx_core.cli.run import describe_plan
from nbx_core.graph import hoist, load
from nbx_core.graph.aliases import is_in_place, writes_in_place
from nbx_core.graph.export import export_module
from nbx_core.testing import numeric

pytestmark = pytest.mark.skipif(not numeric(), reason="hoisted plans are compared by their values")


class _CausalBias(torch.nn.Module):
    """A causal additive mask and a position table built from ``arange``, as language models build
    them, added to the input; ``accumulate`` also writes the input into a copy of a zero fill.
    ``in_place`` writes in place: ``"result"`` into the result, ``"fixed"`` into a fixed value with a
    fixed value (T5's relative buckets), ``"from_run"`` into the mask with a value of the run,
    ``"after_read"`` into the mask after the run read it."""

    def __init__(self, accumulate: bool = False, in_place: str = "", mask_out: bool = False) -> None:
        super().__init__()
        self.pos = torch.nn.Parameter(torch.randn(16, 8))
        self.accumulate, self.in_place, self.mask_out = accumulate, in_place, mask_out

    def forward(self, x: torch.Tensor, idx: torch.Tensor):
        n = x.shape[-1]
        i = torch.arange(n)
        causal = (i[None, :] <= i[:, None]).to(x.dtype)
        bias = (causal - 1.0) * 100.0 + self.pos[i][:, :1]
        if self.in_place == "fixed":
            bias += torch.where(causal > 0, 1.0, -1.0)
        if self.in_place == "from_run":
            bias.add_(x[0, :1, :])
        y = x + bias
        if self.in_place == "after_read":
            bias.mul_(2.0)
            y = y + bias
        if self.accumulate:  # a fixed zero fill that a node of the run writes into a copy of
            y = y + torch.zeros(n, n + 2).slice_scatter(x[0] * idx[:, None], dim=1, start=1, end=n + 1)[:, 1 : n + 1]
        if self.in_place == "result":
            y.mul_(2.0)
        return (y, bias) if self.mask_out else y


def _load(module, tmp_path, n=8, **kwargs):
    x, idx = torch.randn(2, n, n), torch.randint(0, n, (n,))
    path = export_module(module.eval(), (x, idx), tmp_path / "m.nbx", **kwargs)
    return load(path, device=kernel_device_type())


def _check_runs(prog, module, n=8, runs=3):
    for seed in range(runs):  # the first run records the plan; the others replay it on new values
        torch.manual_seed(seed)
        x, idx = torch.randn(2, n, n), torch.randint(0, n, (n,))
        with torch.no_grad():
            want = module(x, idx)
        got = prog(x, idx)
        for g, w in zip(
            got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,), strict=True
        ):
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6, atol=1e-5)


def test_launches_of_shape_only_values_run_once(tmp_path):
    module = _CausalBias()
    prog = _load(module, tmp_path)
    _check_runs(prog, module)
    x, idx = torch.randn(2, 8, 8), torch.zeros(8, dtype=torch.long)
    about = prog.describe(x, idx)
    assert about["hoisted_launches"] >= 3 and about["hoisted_bytes"] > 0, about
    # Only the add that reads the input is left.
    assert about["launches"] == 1, about
    assert (
        describe_plan(about)
        .splitlines()[1]
        .endswith(
            f"; {about['hoisted_launches']} launches of shape-only values ran once, their results kept (0.00 MiB)"
        )
    )


def test_a_zero_fill_a_run_writes_over_is_kept_and_read_at_every_run(tmp_path):
    module = _CausalBias(accumulate=True)
    prog = _load(module, tmp_path)
    _check_runs(prog, module, runs=4)
    assert prog.describe(torch.randn(2, 8, 8), torch.zeros(8, dtype=torch.long))["hoisted_launches"] > 0


def test_a_fixed_output_is_fresh_at_every_run(tmp_path):
    module = _CausalBias(mask_out=True)
    prog = _load(module, tmp_path)
    x, idx = torch.randn(2, 8, 8), torch.zeros(8, dtype=torch.long)
    prog(x, idx)
    _, first = prog(x, idx)
    first.numpy()[...] = 7.0  # the caller owns its outputs
    _check_runs(prog, module)


@pytest.mark.parametrize("in_place", ["result", "fixed", "from_run", "after_read"])
def test_values_written_in_place_are_hoisted_only_where_every_write_is(in_place, tmp_path):
    module = _CausalBias(in_place=in_place)
    prog = _load(module, tmp_path)
    assert writes_in_place(prog.graph)
    _check_runs(prog, module, runs=4)
    fixed = hoist.fixed_nodes(prog.graph)
    writers = [n for n in prog.graph.nodes if is_in_place(n.op)]
    assert writers
    # The value written is fixed only where every write into it is, and no node of the run read it
    # before a write; what it was made from stays fixed either way.
    producers = {name: n for n in prog.graph.nodes for name in n.outputs}
    written = [producers[n.reads()[0]] for n in writers]
    assert all(p.index in fixed for p in written) == (in_place == "fixed")
    assert any(n.op == "aten::le.Tensor" and n.index in fixed for n in prog.graph.nodes)
    assert all(n.index in fixed for n in writers) == (in_place == "fixed")
    assert prog.describe(torch.randn(2, 8, 8), torch.zeros(8, dtype=torch.long))["hoisted_launches"] > 0


def test_without_fusion_or_over_the_memory_bound_nothing_is_hoisted(tmp_path, monkeypatch):
    module = _CausalBias()
    x, idx = torch.randn(2, 8, 8), torch.zeros(8, dtype=torch.long)
    prog = _load(module, tmp_path)
    prog.fusion = False
    _check_runs(prog, module)
    assert prog.describe(x, idx)["hoisted_launches"] == 0
    monkeypatch.setattr(hoist, "HOISTED_MAX_BYTES", 0)
    prog = _load(module, tmp_path)
    _check_runs(prog, module)
    assert prog.describe(x, idx)["hoisted_launches"] == 0


def test_each_signature_hoists_its_own_values(tmp_path):
    module = _CausalBias()
    n = torch.export.Dim("n", min=2, max=16)
    prog = _load(module, tmp_path, dynamic_shapes=({1: n, 2: n}, {0: n}))
    for size in (8, 5, 8, 5):
        _check_runs(prog, module, n=size, runs=2)
