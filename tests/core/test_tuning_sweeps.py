"""Every family's tuning as data: the shipped tables, the sweeps nbx tune and benchmarks/sweep.py
run, and benchmarks that no longer assign plugin attributes."""

from __future__ import annotations

import ast
import json
import operator
import sys
from pathlib import Path

import pytest
import torch

from nbx_core.cli.tune import sweeps_of
from nbx_core.errors import NbxValueError
from nbx_core.runtime import tuning
from nbx_core.testing import numeric

ROOT = Path(__file__).resolve().parents[2]
FAMILIES = ["core", "linalg", "norm", "attention", "conv", "reduction", "index", "spectral"]
# (family, kernel) -> a shape small enough for the interpreter, and its dtype.
SMALL = {
    ("core", "pointwise"): ((1000,), "bfloat16"),
    ("linalg", "gemm"): ((2, 24, 40, 16), "float32"),
    ("norm", "row_norm"): ((5, 40), "float32"),
    ("attention", "flash"): ((1, 2, 40, 40, 16), "float32"),
    ("attention", "flash_split"): ((1, 2, 1, 1100, 16), "float32"),
    ("attention", "softmax"): ((5, 40), "float32"),
    ("norm", "moments"): ((2, 3, 3000), "float32"),
    ("norm", "apply_channels"): ((2, 3, 40), "float32"),
    ("conv", "convolution"): ((2, 16, 6, 8, 3, 1, 1), "float32"),
    ("conv", "global_avg_pool"): ((2, 40, 3, 5), "float32"),
    ("conv", "sum_parts"): ((3, 50, 40), "float32"),
    ("reduction", "rows"): ((5, 3000), "float32"),
    ("reduction", "columns"): ((3000, 40), "float32"),
    ("reduction", "cumsum"): ((5, 300), "float32"),
    ("reduction", "xent"): ((5, 300), "float32"),
    ("linalg", "lstm_cell"): ((3, 40), "float32"),
    ("linalg", "distance"): ((30, 20, 12), "float32"),
    ("index", "topk"): ((2, 100), "float32"),
    ("index", "sort"): ((2, 100), "float32"),
    ("spectral", "row_fft"): ((3, 256), "float32"),
    ("spectral", "column_pass"): ((1, 65536), "float32"),
    ("spectral", "dft"): ((2, 2000, 400, 160), "float32"),
    ("index", "embedding_bag"): ((3, 5, 40, 50), "float32"),
    ("index", "multinomial"): ((3, 300, 5), "float32"),
    ("index", "take_rows"): ((7, 40, 30), "float32"),
    ("spectral", "pad"): ((2, 300, 50), "float32"),
    ("spectral", "overlap_add"): ((2, 20, 64, 16), "float32"),
    ("spectral", "chirp"): ((2, 521), "float32"),
    ("spectral", "hermitian"): ((3, 256), "float32"),
}


def _torch(a):
    # A case's tensors, also inside a list argument (lstm_cell's hx), read through DLPack.
    return torch.from_dlpack(a) if hasattr(a, "__dlpack__") else [_torch(b) for b in a] if isinstance(a, list) else a


def _reference(case):
    name, args = case.reference
    out = operator.attrgetter(name)(torch)(*map(_torch, args))
    return out[0] if isinstance(out, tuple) else out


def test_every_tunable_kernel_has_a_sweep():
    swept = {(family, s.tunable.name) for family in FAMILIES for s in sweeps_of(family)}
    assert swept == set(SMALL)
    assert {(t.plugin, t.name) for t in tuning.tunables() if t.plugin in FAMILIES} == swept


@pytest.mark.parametrize(("family", "kernel"), sorted(SMALL))
def test_sweep_cases_run_through_config(family, kernel, tuning_cache):
    # What nbx tune and benchmarks/sweep.py time: each case at its lookup's configuration and at a
    # candidate passed as config=, both giving torch's numbers.
    sweep = next(s for s in sweeps_of(family) if s.tunable.name == kernel)
    shape, dtype = SMALL[family, kernel]
    cases = sweep.cases(shape, dtype)
    assert cases and all(c.candidates for c in cases)
    for case in cases:
        sweep.tunable.key(*case.args)  # a key for the lookup's arguments
        if not numeric():
            continue  # compiling GPU-sized candidates on aot would prove little for its cost
        for config in (None, case.candidates[0]):
            out = case.run(config)
            want = _reference(case)
            got = torch.from_dlpack(out).to(want.dtype)
            tol = 2e-2 if dtype == "bfloat16" else 1e-3 * max(1.0, float(want.abs().max()))
            torch.testing.assert_close(got, want, rtol=tol, atol=tol, msg=f"{case.label} at {config}")


@pytest.mark.parametrize("family", FAMILIES)
def test_shipped_tables_are_well_formed(family):
    # Every entry of every table a family ships: a configuration its kernel accepts, and a source
    # that is a results file of this repository.
    tunables = {s.tunable.name: s.tunable for s in sweeps_of(family)}
    folders = {t.tables for t in tunables.values()}
    assert len(folders) == 1
    tables = sorted(folders.pop().glob("*.json"))
    assert tables, f"{family} ships no table"
    for path in tables:
        data = json.loads(path.read_text())
        assert data["arch"].startswith("sm_") and data["about"] and set(data["kernels"]) <= set(tunables), path
        assert tuning.table_text(data) == path.read_text(), f"{path}: write it with tuning.table_text"
        for name, parts in data["kernels"].items():
            rules = [(f"rule {i}", r) for i, r in enumerate(parts.get("rules", []))]
            entries = list(parts.get("shapes", {}).items()) + rules
            for key, entry in entries:
                assert tunables[name].check(entry["config"], f"{key} in {path}") == entry["config"]
                assert (ROOT / entry["source"]).is_file(), f"{key} in {path}: {entry['source']}"


def _assigned_attributes(name: str, text: str) -> list[str]:
    """``module.attr = ...`` (or ``setattr(module, ...)``) in the source ``text`` of file ``name``,
    for modules of nbx_core or a plugin that it imports."""
    tree = ast.parse(text)
    modules = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {a.asname or a.name.split(".")[0] for a in node.names if a.name.startswith("nbx")}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("nbx"):
            modules |= {a.asname or a.name for a in node.names}
    found = []

    def targets(node):
        if isinstance(node, ast.Tuple | ast.List):
            for elt in node.elts:
                yield from targets(elt)
        else:
            yield node

    for node in ast.walk(tree):
        assigned = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AugAssign | ast.AnnAssign)
            else []
        )
        for target in (t for a in assigned for t in targets(a)):
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id in modules:
                found.append(f"{name}:{node.lineno}: {target.value.id}.{target.attr}")
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "setattr"
            and node.args
            and isinstance(node.args[0], ast.Name)
            and node.args[0].id in modules
        ):
            found.append(f"{name}:{node.lineno}: setattr({node.args[0].id}, ...)")
    return found


def test_no_benchmark_assigns_plugin_attributes():
    # Benchmarks pass candidates as config= (through the tuning modules); they never rebind a
    # module's tiles, functions or constants.
    found = [f for p in sorted((ROOT / "benchmarks").glob("*.py")) for f in _assigned_attributes(p.name, p.read_text())]
    assert found == []
    bad = (
        "import nbx_norm.layer_norm as ln\nfrom nbx_attention import flash_attention as fa\n"
        "ln._TILE, ln._num_warps = 1, 2\nfa._config = None\nsetattr(fa, 'x', 1)\nh.results = []\n"
    )
    assert _assigned_attributes("x.py", bad) == [
        "x.py:3: ln._TILE",
        "x.py:3: ln._num_warps",
        "x.py:4: fa._config",
        "x.py:5: setattr(fa, ...)",
    ]


def test_benchmark_sweep_writes_the_tables(tmp_path, monkeypatch, tuning_cache):
    # benchmarks/sweep.py with a harness that times norm's cases by a made-up clock (running none): the
    # candidate with 2 warps wins by more than the margin and goes into a copy of nbx-norm's table,
    # with the results file as its source; a key whose winner is the shipped one is left alone.
    sys.path.insert(0, str(ROOT))
    try:
        from benchmarks import sweep as bench
    finally:
        sys.path.remove(str(ROOT))
    from nbx_norm import tuning as norm_tuning

    tunable = norm_tuning.ROW_NORM
    table = tmp_path / "configs"
    table.mkdir()
    shipped = tunable.tables / "h200.json"
    (table / "h200.json").write_text(shipped.read_text())
    monkeypatch.setattr(tunable, "tables", table)
    monkeypatch.setattr(tuning, "arch", lambda: "sm_90")
    monkeypatch.setattr(norm_tuning.SWEEPS[0], "shapes", [(4, 5000), (4, 40)])

    class Harness:
        results, errors = [], []

        def compare(self, name, *, nbx, torch, shape, dtype):
            long_rows = shape[1] > 1000
            return {"nbx_ms": 1.0 if long_rows and "num_warps=2" in name else 2.0 if "shipped" in name else 3.0}

    chosen = bench.sweep_tunables(Harness(), "norm")
    results = ROOT / "benchmarks" / "results" / "sweeps" / "h200-norm-reduction.json"
    written = bench.write_tables(chosen, results, margin=0.02)
    assert written == [table / "h200.json"]
    shapes = json.loads((table / "h200.json").read_text())["kernels"]["row_norm"]["shapes"]
    new = {k: v for k, v in shapes.items() if k not in json.loads(shipped.read_text())["kernels"]["row_norm"]["shapes"]}
    assert list(new) == ["bfloat16:N8192"] and new["bfloat16:N8192"]["config"]["num_warps"] == 2
    assert new["bfloat16:N8192"]["source"] == "benchmarks/results/sweeps/h200-norm-reduction.json"


@pytest.mark.parametrize(("family", "kernel"), sorted(SMALL))
def test_a_shape_of_the_wrong_rank_is_refused_with_what_shapes_are(family, kernel):
    sweep = next(s for s in sweeps_of(family) if s.tunable.name == kernel)
    with pytest.raises(NbxValueError, match=r"shapes are .+, got 1x1x1x1x1x1x1x1x1$"):
        sweep.cases((1,) * 9, "float32")
