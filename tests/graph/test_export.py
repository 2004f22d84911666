"""The importer on real torch.export programs, run on the torchref registry (no NBX family needed)."""

from __future__ import annotations

import json
import warnings

import ml_dtypes
import numpy as np
import pytest
import torch
import torch.nn as nn

from nbx_core.errors import ExportError, GraphInputError
from nbx_core.graph import load, read_graph
from nbx_core.graph.aliases import canonical
from nbx_core.graph.export import export, export_module
from nbx_core.testing import numeric

from .torch_kernels import FAMILY_NAMES, torch_registry


def _ops(path) -> list[str]:
    return [n.op for n in read_graph(path).nodes]


def _run_both(module, args, path, registry, dynamic_shapes=None, runs=None, tol=(1e-5, 1e-6)):
    out = export_module(module, args, path, dynamic_shapes, registry=registry)
    prog = load(out, registry=registry, device="cpu")
    for run in runs or [args]:
        if not numeric():  # the aot backend runs no program: it compiles every kernel a run launches
            prog.check_compiles(*run)
            continue
        with torch.no_grad():
            want = module(*run)
        got = prog(*run)
        gots, wants = (got, want) if isinstance(want, tuple) else ((got,), (want,))
        for g, w in zip(gots, wants, strict=True):
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=tol[0], atol=tol[1])
    return out


class Misc(nn.Module):
    """Aliases, an in-place op read afterwards, a multi-output op, sym arithmetic and diff."""

    def forward(self, x, y):
        a = torch.true_divide(torch.multiply(x, 2.0), 3.0)
        both = torch.greater(x, 0) & torch.greater(y, 0)
        d = torch.where(both, a, torch.subtract(y, 1.0))
        d.add_(1.0)
        top, idx = torch.max(d, dim=-1)
        flat = d.reshape(x.shape[0] * 2, -1)
        return flat, top, idx, torch.diff(x, dim=-1), torch.absolute(torch.concatenate([x, y], dim=0))


def test_aliases_inplace_getitem_sym_and_diff(tmp_path):
    registry = torch_registry()
    batch = torch.export.Dim("batch", min=1, max=8)
    x, y = torch.randn(4, 6), torch.randn(4, 6)
    path = _run_both(
        Misc(),
        (x, y),
        tmp_path / "misc.nbx",
        registry,
        ({0: batch}, {0: batch}),
        runs=[(x, y), (torch.randn(3, 6), torch.randn(3, 6))],
    )
    ops = _ops(path)
    assert not any(
        o.split("::")[1].split(".")[0]
        in (
            "multiply",
            "true_divide",
            "greater",
            "subtract",
            "absolute",
            "concatenate",
            "__and__",
            "diff",
            "add_",
            "sym_size",
        )
        for o in ops
    ), ops
    doc = json.loads((path / "graph.json").read_text())
    assert doc["symbols"]["batch"] == {"min": 1, "max": 8, "example": 4}
    assert any(
        {"sym": "2*batch"} in n["args"][1]
        for n in doc["nodes"]
        if n["op"].startswith("aten::view") or n["op"].startswith("aten::reshape")
    )


def test_sdpa_stays_when_registered_and_is_decomposed_when_not(tmp_path):
    from .models import GPTBlock

    x = (torch.randn(1, 4, 32),)
    kept = _run_both(GPTBlock().eval(), x, tmp_path / "a.nbx", torch_registry())
    assert "aten::scaled_dot_product_attention.default" in _ops(kept)
    attention = [n for n in FAMILY_NAMES if "attention" in n or ("softmax" in n and n != "aten::_softmax")]
    without = torch_registry(without=attention)
    split = _run_both(GPTBlock().eval(), x, tmp_path / "b.nbx", without)
    ops = _ops(split)
    assert not any("attention" in o for o in ops) and "aten::_softmax.default" in ops, ops


def test_op_without_kernel_or_decomposition_is_reported(tmp_path):
    class Sorts(nn.Module):
        def forward(self, x):
            return torch.sort(x).values + torch.cumsum(x, 0)

    registry = torch_registry(without=["aten::sort", "aten::cumsum"])
    with pytest.raises(ExportError) as info:
        export_module(Sorts(), (torch.randn(5),), tmp_path / "s.nbx", registry=registry)
    message = str(info.value)
    assert "2 ops have no kernel in the registry and no decomposition" in message
    assert "aten::sort.default: provided by nbx-index" in message and "aten::cumsum.default" in message
    assert message.endswith(
        "\nInstall or upgrade the NBX distributions that provide them (pip install -U nbx-index "
        "nbx-reduction), or register kernels for these names (docs/plugins.md)"
    )
    assert not (tmp_path / "s.nbx").exists()


class Custom(nn.Module):
    def forward(self, x):
        return torch.ops.nbxtest.twice(x) + 1


def test_missing_ops_error_names_plugins_only_when_some_would_provide_them(tmp_path):
    @torch.library.custom_op("nbxtest::twice", mutates_args=())
    def twice(x: torch.Tensor) -> torch.Tensor:
        return x * 2

    twice.register_fake(lambda x: torch.empty_like(x))
    with pytest.raises(ExportError) as info:
        export_module(Custom(), (torch.randn(3),), tmp_path / "c.nbx", registry=torch_registry())
    message = str(info.value)
    assert "nbxtest::twice.default: no installed plugin registers it" in message
    assert message.endswith(
        "\nNo NBX distribution provides them: register kernels for them in a plugin (docs/plugins.md)"
    )
    ep = torch.export.export(Custom(), (torch.randn(3),))
    with pytest.raises(ExportError) as info:
        export(ep, tmp_path / "c.nbx", available=["aten::add"])
    message = str(info.value)
    assert "nbxtest::twice.default: not in the given list of available ops" in message
    assert message.endswith(
        "\nAdd them to available= if the installation the graph is for provides them, or "
        "register kernels for them (docs/plugins.md)"
    )
    assert "Install the plugins named" not in message


def test_export_refuses_to_replace_a_directory_that_is_not_a_graph(tmp_path):
    target = tmp_path / "results"
    target.mkdir()
    (target / "run1.csv").write_text("a,b")
    with pytest.raises(
        ExportError,
        match=rf"^{target}: cannot save the graph there: {target} is a directory that is "
        r"not an NBX graph \(it holds run1\.csv\)",
    ):
        export_module(nn.ReLU(), (torch.randn(3),), target, registry=torch_registry())
    assert [p.name for p in target.iterdir()] == ["run1.csv"]


class Nonzero(nn.Module):
    def forward(self, x):
        return torch.nonzero(x)


def test_export_emits_no_future_warning(tmp_path):
    """torch's deprecated ShapeEnv.var_to_val warns; export reads the hints without it, for dynamic
    dims and for data-dependent ones (whose hint table is empty)."""
    registry = torch_registry()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        export_module(
            nn.ReLU(), (torch.randn(3, 4),), tmp_path / "r.nbx", ({0: torch.export.Dim("n", max=9)},), registry=registry
        )
        export_module(Nonzero(), (torch.randn(3, 4),), tmp_path / "z.nbx", registry=registry)
    ours = [
        f"{w.filename}:{w.lineno}: {w.message}"
        for w in caught
        if issubclass(w.category, FutureWarning) and "nbx_core" in w.filename
    ]
    assert ours == []


def test_dim_without_upper_bound_exports_as_unbounded(tmp_path):
    registry = torch_registry()
    path = _run_both(
        nn.ReLU(),
        (torch.randn(3, 4),),
        tmp_path / "u.nbx",
        registry,
        ({0: torch.export.Dim("n", min=2)},),
        runs=[(torch.randn(3, 4),), (torch.randn(11, 4),)],
    )
    assert read_graph(path).symbols["n"].max is None


class Bounded(nn.Module):
    """A constant made in forward (``aten::lift_fresh_copy``) and sizes bounded by min and max, which
    torch's shape environment writes with its own Max and Min."""

    def __init__(self):
        super().__init__()
        self.table = nn.Parameter(torch.randn(16, 4))

    def forward(self, x):
        scaled = x / torch.sqrt(torch.tensor(4.0))
        rows = self.table[: min(x.size(0), 5)]
        return scaled, rows * x.sum(), x.sum(1, keepdim=True).expand(x.size(0), torch.sym_max(2, x.size(1) - 3))


def test_constants_made_in_forward_and_sizes_bounded_by_min_and_max(tmp_path):
    registry = torch_registry()
    dims = ({0: torch.export.Dim("n", min=2, max=12), 1: torch.export.Dim("m", min=2, max=12)},)
    runs = [(torch.randn(3, 8),), (torch.randn(9, 4),), (torch.randn(2, 3),)]
    path = _run_both(Bounded(), runs[0], tmp_path / "b.nbx", registry, dims, runs=runs)
    assert "aten::clone.default" in _ops(path)
    text = json.dumps(read_graph(path).document)
    assert "min(" in text and "max(" in text


class DataSized(nn.Module):
    """A size read from a tensor's values, with the checks torch.export asks for on it."""

    def forward(self, x, n):
        k = n.item()
        torch._check(k >= 1)
        torch._check(k <= x.shape[0])
        return x[:k] * 2


def test_a_check_relating_a_size_read_from_data_to_an_input_dim_holds_at_every_run(tmp_path):
    n = torch.export.Dim("n", min=2, max=16)
    ep = torch.export.export(DataSized(), (torch.randn(6, 3), torch.tensor(4)), dynamic_shapes=({0: n}, None))
    path = export(ep, tmp_path / "d.nbx", torch_registry())
    graph = read_graph(path)
    (data,) = [s for s in graph.symbols.values() if s.source is not None]
    assert data.min == 1  # torch._check(k >= 1) is the size's range; k <= x.shape[0] a guard checked on it
    assert [(g.left.text, g.op, g.right.text) for g in graph.guards] == [(data.name, "<=", "n")]
    if not numeric():
        return
    prog = load(path)
    for rows, k in ((6, 4), (9, 9), (3, 1)):
        x = torch.randn(rows, 3)
        np.testing.assert_allclose(prog(x, torch.tensor(k)).numpy(), (x[:k] * 2).numpy())
    with pytest.raises(
        GraphInputError,
        match=rf"breaks a condition the model states on it \(torch._check\), "
        rf"{data.name} <= n \(n=6, {data.name}=7\)",
    ):
        prog(torch.randn(6, 3), torch.tensor(7))
    with pytest.raises(GraphInputError, match=rf"{data.name} = 0, is outside the range 1\.\."):
        prog(torch.randn(6, 3), torch.tensor(0))


class CachedTable(nn.Module):
    """A table cached for the length it was last called with: exported after a call, the trace takes
    the cached path, valid only while ``x.shape[1] // 2`` is that length (torch records a guard)."""

    def __init__(self):
        super().__init__()
        self.table = None

    def forward(self, x):
        n = x.shape[1] // 2
        if self.table is None or self.table.shape[0] != n:
            self.table = torch.arange(n, dtype=x.dtype)
        return x[:, :n] * self.table


def test_guards_torch_export_records_are_checked_at_every_run(tmp_path):
    registry = torch_registry()
    module = CachedTable()
    module(torch.randn(2, 8))
    ep = torch.export.export(module, (torch.randn(2, 8),), dynamic_shapes=({1: torch.export.Dim.AUTO},))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every guard of this export can be stated
        path = export(ep, tmp_path / "g.nbx", registry)
    relations = [(g.left.text, g.op, g.right.text) for g in read_graph(path).guards]
    dim = read_graph(path).inputs[0].shape[1].text
    assert (f"{dim} // 2", "==", "4") in relations
    prog = load(path, registry=registry, device="cpu")
    x = torch.randn(2, 9)  # 9 // 2 == 4: the guard holds
    if numeric():
        np.testing.assert_allclose(prog(x).numpy(), (x[:, :4] * torch.arange(4.0)).numpy(), rtol=1e-6)
    else:
        prog.check_compiles(x)
    with pytest.raises(
        GraphInputError, match=rf"\({dim}=12\) break a condition torch\.export recorded.*{dim} // 2 == 4 \(6 == 4\)"
    ):
        prog(torch.randn(2, 12))


def test_guards_in_forms_a_graph_cannot_state_are_reported():
    from nbx_core.graph.export import _guards

    shapes = {"x": [2, "n"], "y": ["2*n"]}
    stated, unchecked = _guards(
        [
            "L['x'].size()[1] * 2 == L['y'].size()[0] and 2 <= L['x'].size()[1] <= 64",
            "L['x'].size()[1] != max(1, -L['x'].size()[1] // 3)",
            "L['x'].stride()[0] == 8",
            "L['x'].size()[1] == 3 or L['x'].size()[1] == 5",
            "L['z'].size()[0] == 1",
        ],
        shapes,
    )
    assert stated == [
        {"left": "n * 2", "op": "==", "right": "2*n"},
        {"left": "2", "op": "<=", "right": "n"},
        {"left": "n", "op": "<=", "right": "64"},
        {"left": "n", "op": "!=", "right": "max(1, ((-n) // 3))"},
    ]
    assert unchecked == [
        "L['x'].stride()[0] == 8",
        "L['x'].size()[1] == 3 or L['x'].size()[1] == 5",
        "L['z'].size()[0] == 1",
    ]


class Optional(nn.Module):
    """Arguments that are not tensors: None, a number, a keyword flag."""

    def forward(self, x, mask=None, bias=None, scale=2.0, *, flag=None, y=None):
        return x + bias * scale + y if mask is None and flag is None else x


def test_a_program_is_called_as_the_module_was(tmp_path):
    x, b, y = torch.randn(3), torch.randn(3), torch.randn(3)
    module = Optional()
    path = export(
        torch.export.export(module, (x, None, b, 3.0), {"flag": None, "y": y}), tmp_path / "o.nbx", torch_registry()
    )
    graph = read_graph(path)
    assert [s.name for s in graph.inputs] == ["x", "bias", "y"]
    assert graph.call_names() == ["x", "mask", "bias", "scale", "flag", "y"]
    prog = load(path, registry=torch_registry(), device="cpu")
    want = module(x, None, b, 3.0, y=y).numpy()
    calls = [
        ((x, None, b, 3.0), {"flag": None, "y": y}),
        ((x, None, b), {"y": y}),
        ((x,), {"bias": b, "y": y}),
        ((), {"x": x, "mask": None, "bias": b, "y": y, "scale": 3.0}),
    ]
    for args, kwargs in calls:
        if numeric():
            np.testing.assert_allclose(prog(*args, **kwargs).numpy(), want, rtol=1e-6)
        else:
            prog.check_compiles(*args, **kwargs)
    for args, kwargs in (((x, x, b), {"y": y}), ((x, None, b, 2.0), {"y": y}), ((x, None, b, True), {"y": y})):
        with pytest.raises(
            GraphInputError,
            match=r"input '(mask|scale)' was exported as (None|3\.0), which the graph "
            "holds: pass that value or leave it out",
        ):
            prog(*args, **kwargs)
    with pytest.raises(GraphInputError, match=r"7 positional inputs given, the graph takes 6 \(x, mask, bias"):
        prog(x, None, b, 3.0, None, y, y)


class Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("calls", torch.zeros(()))
        self.scale = nn.Parameter(torch.tensor([1.0, 2.0]))

    def forward(self, x):
        self.calls.add_(1.0)
        return x * self.scale * self.calls


def test_buffer_mutation_persists_across_runs(tmp_path):
    registry = torch_registry()
    path = export_module(Counter(), (torch.ones(2),), tmp_path / "c.nbx", registry=registry)
    prog = load(path, registry=registry, device="cpu")
    if not numeric():  # the aot backend runs no program: it compiles every kernel a run launches
        prog.check_compiles(np.ones(2, np.float32))
        return
    firsts = [prog(np.ones(2, np.float32)).numpy().tolist() for _ in range(3)]
    assert firsts == [[1.0, 2.0], [2.0, 4.0], [3.0, 6.0]]


def test_asserts_dropped_and_bf16_weights(tmp_path):
    class Half(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.randn(3, dtype=torch.bfloat16))

        def forward(self, x):
            torch._check(x.shape[0] >= 2)
            return (x.to(torch.bfloat16) * self.w).float()

    registry = torch_registry()
    n = torch.export.Dim("n", min=2, max=10)
    path = _run_both(Half(), (torch.randn(4, 3),), tmp_path / "h.nbx", registry, ({0: n},), tol=(1.6e-2, 1e-2))
    assert not any("assert" in o or "constrain" in o for o in _ops(path))
    weights = read_graph(path).weights
    assert [(w.dtype, w.shape) for w in weights] == [("bfloat16", (3,))]
    from nbx_core.graph.validate import load_weights

    assert load_weights(read_graph(path))["w"].dtype == ml_dtypes.bfloat16


def test_export_rejects_a_module(tmp_path):
    with pytest.raises(ExportError, match="expected a torch.export.ExportedProgram"):
        export(nn.Linear(2, 2), tmp_path / "x.nbx", torch_registry())


def test_alias_table():
    assert canonical("aten::multiply.Tensor") == "aten::mul.Tensor"
    assert canonical("aten::__and__.Tensor") == "aten::bitwise_and.Tensor"
    assert canonical("aten::swapaxes.default") == "aten::transpose.int"
    assert canonical("aten::lift_fresh_copy.default") == "aten::clone.default"
    assert canonical("aten::add.Tensor") == "aten::add.Tensor"


def test_tied_weights_are_stored_and_loaded_once(tmp_path):
    # An LM head tied to the embedding (GPT-2, Llama 3.2): one tensor in weights.safetensors, one
    # device buffer, both weights reading it. A parameter equal in value but not tied stays apart.
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(11, 4)
            self.head = nn.Linear(4, 11, bias=False)
            self.head.weight = self.embed.weight
            self.copy = nn.Parameter(self.embed.weight.detach().clone())

        def forward(self, ids):
            h = self.embed(ids)
            return self.head(h) + h @ self.copy.T

    registry = torch_registry()
    ids = torch.tensor([[1, 5, 10]])
    path = _run_both(Tied(), (ids,), tmp_path / "t.nbx", registry)
    weights = {w.name: w.key for w in read_graph(path).weights}
    assert len(weights) == 3 and len(set(weights.values())) == 2, weights
    from safetensors import safe_open

    with safe_open(str(path / "weights.safetensors"), "np") as f:
        assert sorted(f.keys()) == sorted(set(weights.values()))
    prog = load(path, registry=registry, device="cpu")
    assert len(prog._buffers) == 2
