"""Sizes read from data (a boolean mask's count, nonzero, item()): symbols a node's result binds."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from nbx_core.errors import GraphInputError
from nbx_core.graph import load, read_graph
from nbx_core.graph.export import export_module
from nbx_core.graph.plan import Unplanned
from nbx_core.testing import assert_close, numeric


class _Selects(nn.Module):
    def forward(self, x: torch.Tensor, n: torch.Tensor) -> tuple[torch.Tensor, ...]:
        kept = x[x > 0]  # aten::index with a bool mask: as many values as are positive
        k = n.max().item()
        torch._check(k >= 0)
        torch._check(k <= 50)
        padded = torch.zeros(kept.shape[0] + 1)  # a size argument computed from a data-dependent size
        return kept * 2, torch.arange(k), torch.nonzero(x).float(), padded, kept.sum()


def _inputs(seed: int, count: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(4, 5, generator=g), torch.tensor([count, 1])


@pytest.fixture
def selects(tmp_path):
    return export_module(_Selects(), _inputs(0, 3), tmp_path / "selects.nbx")


def test_the_export_names_the_results_that_bind_each_size(selects):
    graph = read_graph(selects)
    bound = {(s.source, s.dim, s.min, s.max) for s in graph.symbols.values()}
    assert bound == {("index", 0, 0, 20), ("item", None, 0, 50), ("nonzero", 0, 0, 20)}
    by_source = {s.source: s.name for s in graph.symbols.values()}
    shapes = [[d if isinstance(d, int) else d.text for d in o.shape] for o in graph.outputs]
    assert shapes == [
        [by_source["index"]],
        [by_source["item"]],
        [by_source["nonzero"], 2],
        [f"1 + {by_source['index']}"],
        [],
    ]


def test_each_run_reads_its_own_sizes(selects):
    prog = load(selects)
    if not numeric():  # the aot backend runs no program: it compiles the kernels a run launches
        prog.check_compiles(*_inputs(0, 3))
        return
    # The counts change from run to run (none kept, with k = 0, in the last): every run has its sizes.
    for seed, count in ((0, 3), (1, 7), (2, 0)):
        x, n = _inputs(seed, count)
        if seed == 2:
            x = -x.abs()
        got, want = prog(x, n), _Selects()(x, n)
        for g, w in zip(got, want, strict=True):
            assert tuple(g.shape) == tuple(w.shape)
            assert_close(g, w)
    plan = prog.plan_for(*_inputs(0, 3))
    assert isinstance(plan, Unplanned) and "reads sizes from tensor values" in plan.reason


def test_a_size_outside_the_models_stated_range_is_refused(selects):
    prog = load(selects)
    if not numeric():
        pytest.skip("the aot backend reads no values")
    with pytest.raises(GraphInputError, match=r"node \d+ 'item'.*= 70, is outside the range 0\.\.50 the model states"):
        prog(*_inputs(0, 70))


def test_bundle_signatures_vary_input_dims_only(selects):
    from nbx_core.graph.bundle import signatures

    graph = read_graph(selects)
    assert signatures(graph, {}) == [{}]  # every size here is read from data: one signature, the inputs'
    data = next(iter(graph.symbols))
    with pytest.raises(GraphInputError, match=rf"no symbolic dim named {data} \(the graph declares: none\)"):
        signatures(graph, {data: [3]})


class _Pairs(nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        a, b = x[x > 0], y[y > 0]
        torch._check(a.shape[0] == b.shape[0])  # a guard over two sizes read from data
        return a * b


def test_a_check_between_two_sizes_read_from_data_is_a_guard_checked_once_both_are_bound(tmp_path):
    x, y = torch.tensor([1.0, -2.0, 3.0, 4.0]), torch.tensor([-1.0, 5.0, 6.0, 7.0])
    path = export_module(_Pairs(), (x, y), tmp_path / "pairs.nbx")
    graph = read_graph(path)
    names = sorted(s.name for s in graph.symbols.values() if s.source is not None)
    assert len(names) == 2 and [sorted((g.left.text, g.right.text)) for g in graph.guards] == [names]
    if not numeric():
        return
    prog = load(path)
    assert_close(prog(x, y), _Pairs()(x, y))
    with pytest.raises(GraphInputError, match=r"breaks a condition the model states on it \(torch._check\)"):
        prog(x, torch.tensor([-1.0, 5.0, 6.0, -7.0]))


def _matches_torch_on_new_inputs(path, module: nn.Module) -> None:
    """The program of ``path`` gives ``module``'s results on two other (4, 5) inputs (cpu backend)."""
    if not numeric():
        return
    prog = load(path)
    for seed in (1, 2):
        x = torch.randn(4, 5, generator=torch.Generator().manual_seed(seed))
        for got, want in zip(prog(x), module(x), strict=True):
            assert_close(got, want)


class _Indices(nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return torch.where(x > 0)  # aten::where.default: one index tensor per dim, their length read from data


def test_where_with_a_condition_alone_returns_the_indices_per_dim(tmp_path):
    path = export_module(_Indices(), (torch.randn(4, 5),), tmp_path / "indices.nbx")
    (size,) = read_graph(path).symbols.values()
    assert (size.source, size.dim) == ("where.0", 0)
    _matches_torch_on_new_inputs(path, _Indices())


class _Decomposed(nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        # argwhere and nonzero(as_tuple=True) have no kernel of their own: torch decomposes them into
        # nonzero (and unbind), whose results bind the sizes the outer ops read from data.
        return torch.argwhere(x > 0), *torch.nonzero(x < 0, as_tuple=True)


def test_a_size_read_inside_a_decomposed_op_is_bound_by_its_decomposition(tmp_path):
    path = export_module(_Decomposed(), (torch.randn(4, 5),), tmp_path / "decomposed.nbx")
    sources = {s.source for s in read_graph(path).symbols.values()}
    assert sources and all("/" in s for s in sources)  # results inside the decompositions
    _matches_torch_on_new_inputs(path, _Decomposed())
