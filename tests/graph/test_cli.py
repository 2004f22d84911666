"""``nbx run`` on the committed example graph (needs the plugins it uses) and on a core-only graph."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import numpy as np
import pytest

from nbx_core import backend
from nbx_core.cli import main
from nbx_core.cli.run import describe_plan, statistics
from nbx_core.testing import numeric

EXAMPLE = Path(__file__).parents[2] / "examples" / "encoder_block.nbx"
PLUGINS = ("elementwise", "linalg", "norm", "attention")
runs_a_program = pytest.mark.skipif(not numeric(), reason="the aot backend runs no program: nbx run and Program "
                                    "refuse it (tests/core/test_backend.py checks the refusal)")


def _core_graph(tmp_path) -> Path:
    """y = transpose(x).contiguous(): core ops only, so every installation runs it."""
    from nbx_core.graph import save

    doc = {"format": "nbx-graph", "version": 1, "symbols": {"n": {"min": 1, "max": None, "example": 3}},
           "inputs": [{"name": "x", "dtype": "float32", "shape": ["n", 2]}], "weights": [],
           "nodes": [{"name": "t", "op": "aten::transpose.int", "args": [{"ref": "x"}, 0, 1], "kwargs": {},
                      "outputs": ["t"]},
                     {"name": "c", "op": "aten::clone.default", "args": [{"ref": "t"}],
                      "kwargs": {"memory_format": {"memory_format": "contiguous_format"}}, "outputs": ["c"]}],
           "outputs": [{"name": "c", "dtype": "float32", "shape": [2, "n"]}]}
    return save(doc, {}, tmp_path / "core.nbx")


def rows(out: str) -> dict[str, list[str]]:
    """The summary's table rows by their first cell (cells are two or more spaces apart)."""
    cells = (re.split(r"\s{2,}", line) for line in out.splitlines() if "  " in line)
    return {row[0]: row[1:] for row in cells}


@runs_a_program
def test_run_generates_missing_inputs(tmp_path, capsys):
    graph = _core_graph(tmp_path)
    assert main(["run", str(graph), "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    table = rows(out)
    assert table["input"] == ["dtype", "shape", "source"]
    assert table["x"] == ["float32", "[3, 2]", "generated, normal(0, 1), seed 0"]
    assert table["output"] == ["dtype", "shape", "min", "max", "mean", "NaN"]
    assert table["c"][:2] == ["float32", "[2, 3]"] and table["c"][-1] == "0"


@runs_a_program
def test_run_names_the_backend_and_the_device(tmp_path, capsys):
    graph = _core_graph(tmp_path)
    assert main(["run", str(graph), "--device", "cpu"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    names = {"cpu": "cpu (Triton's interpreter)", "cuda": "cuda", "aot": "aot (compiles kernels, computes nothing)"}
    assert first == f"{graph}: 2 nodes, backend {names[backend.current()]}, device cpu"


@runs_a_program
def test_run_reports_the_time_since_start_up_and_mentions_output(tmp_path, capsys):
    assert main(["run", str(_core_graph(tmp_path))]) == 0
    out = capsys.readouterr().out
    times = re.search(r"^time: (\S+) s in all: start-up (\S+) s, load \+ resolve (\S+) s, run (\S+) s$", out, re.M)
    total, start_up, load, run = map(float, times.groups())
    assert total >= load + run and abs(total - start_up - load - run) < 0.03
    assert out.endswith("outputs not saved: --output OUT.npz writes them\n")


@runs_a_program
def test_run_prints_each_outputs_statistics(tmp_path, capsys):
    x = np.array([[1.0, -2.0], [3.5, 0.25], [-7.0, 4.0]], np.float32)
    np.save(tmp_path / "x.npy", x)
    assert main(["run", str(_core_graph(tmp_path)), "--input", f"x={tmp_path / 'x.npy'}"]) == 0
    if numeric():  # the aot backend computes nothing
        assert rows(capsys.readouterr().out)["c"] == ["float32", "[2, 3]", "-7", "4", "-0.04167", "0"]


@pytest.mark.parametrize(
    ("array", "expected"),
    [
        (np.array([1.0, np.nan, -2.5, np.inf], np.float32), ("-2.5", "inf", "inf", "1")),
        (np.array([np.nan, np.nan]), ("nan", "nan", "nan", "2")),
        (np.array([[3, -1], [2, 7]], np.int64), ("-1", "7", "2.75", "")),
        (np.array([True, False, True]), ("False", "True", "0.6667", "")),
        (np.array([3 + 4j, 0j], np.complex64), ("0", "5", "2.5", "0")),
        (np.zeros((0, 3), np.float32), ("", "", "", "")),
    ],
)
def test_statistics(array, expected):
    assert statistics(array) == expected


def test_run_help_is_plain_text(capsys):
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    help_text = capsys.readouterr().out
    assert "``" not in help_text and "(--seed)" in help_text


def test_run_with_an_unknown_flag_prints_the_run_usage(tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        main(["run", "model.nbx", "--bogus"])
    err = capsys.readouterr().err
    assert info.value.code == 2
    assert err.startswith("usage: nbx run ") and err.endswith("nbx run: error: unrecognized arguments: --bogus\n")


def test_run_on_a_directory_that_holds_no_graph_says_so(tmp_path, capsys):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "notes.md").write_text("not a graph")
    assert main(["run", str(tmp_path / "docs")]) == 1
    err = capsys.readouterr().err
    assert err == (f"nbx: GraphFormatError: {tmp_path / 'docs'}: not a graph directory (expected "
                   f"{tmp_path / 'docs' / 'graph.json'} and {tmp_path / 'docs' / 'weights.safetensors'})\n")


@runs_a_program
def test_run_reads_inputs_and_writes_npz(tmp_path, capsys):
    x = np.arange(10, dtype=np.float32).reshape(5, 2)
    np.save(tmp_path / "x.npy", x)
    args = ["run", str(_core_graph(tmp_path)), "--input", f"x={tmp_path / 'x.npy'}",
            "--output", str(tmp_path / "o.npz")]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert rows(out)["x"][-1] == f"from {tmp_path / 'x.npy'}"
    assert out.endswith(f"wrote {tmp_path / 'o.npz'}\n")
    with np.load(tmp_path / "o.npz", allow_pickle=False) as npz:
        if numeric():  # the aot backend compiles every kernel and runs none
            np.testing.assert_array_equal(npz["c"], x.T)


def test_run_usage_errors(tmp_path, capsys):
    graph = str(_core_graph(tmp_path))
    assert main(["run", graph, "--input", "y=a.npy"]) == 2
    assert "the graph has no such input; inputs: x" in capsys.readouterr().err
    np.save(tmp_path / "bad.npy", np.zeros((3, 3), np.float32))
    assert main(["run", graph, "--input", f"x={tmp_path / 'bad.npy'}"]) == 1
    assert "GraphInputError" in capsys.readouterr().err
    assert main(["run", str(tmp_path / "missing.nbx")]) == 1
    assert "not a graph directory" in capsys.readouterr().err


@runs_a_program
def test_readme_command_runs_the_example(capsys):
    for family in PLUGINS:
        if importlib.util.find_spec(f"nbx_{family}") is None:
            pytest.skip(f"needs plugin nbx-{family}, which is not installed")
    assert main(["run", str(EXAMPLE)]) == 0
    table = rows(capsys.readouterr().out)
    assert table["src_key_padding_mask"] == ["bool", "[2, 8]", "generated, all False, seed 0"]
    assert table["layer_norm_1"][:2] == ["float32", "[2, 8, 32]"]


@runs_a_program
def test_example_matches_torch():
    """The committed graph computes what the script's module computes (torchref kernels)."""
    import sys

    import torch

    from nbx_core.graph import load

    from .torch_kernels import torch_registry

    sys.path.insert(0, str(EXAMPLE.parent))
    try:
        from make_encoder_block import build
    finally:
        sys.path.pop(0)
    block, src, mask = build()
    got = load(EXAMPLE, registry=torch_registry(), device="cpu")(src, mask)
    with torch.no_grad():
        want = block(src, src_key_padding_mask=mask)
    if numeric():  # the aot backend compiles every kernel and runs none
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-5)


@runs_a_program
def test_run_plan_prints_the_execution_plan(capsys):
    for family in PLUGINS:
        if importlib.util.find_spec(f"nbx_{family}") is None:
            pytest.skip(f"needs plugin nbx-{family}, which is not installed")
    assert main(["run", str(EXAMPLE), "--plan"]) == 0
    out = capsys.readouterr().out
    plan = out[out.index("plan: 42 nodes"):]
    assert re.search(r"^  \d+ launches, \d+ zero fills; fused: \d+ elementwise kernels and \d+ epilogues", plan, re.M)
    assert "kernels: _gemm_kernel x4" in plan and "arena" in plan
    assert main(["run", str(EXAMPLE), "--plan", "--no-plan"]) == 0
    assert "not planned: planning is off" in capsys.readouterr().out


def test_the_printed_plan_counts_folded_batch_norms():
    about = {"nodes": 5, "patterns": {}, "folded_batch_norms": 2, "planned": False, "reason": "planning is off"}
    assert describe_plan(about).splitlines()[0] == "plan: 5 nodes, 2 batch norms folded into convolutions"
    assert describe_plan({**about, "folded_batch_norms": 0}).splitlines()[0] == "plan: 5 nodes"


def test_the_printed_plan_counts_channels_last_convolutions():
    about = {"nodes": 9, "patterns": {}, "folded_batch_norms": 2, "channels_last_convolutions": 3, "planned": False,
             "reason": "planning is off"}
    assert describe_plan(about).splitlines()[0] == (
        "plan: 9 nodes, 2 batch norms folded into convolutions, 3 convolutions on channels-last inputs")


def test_the_printed_plan_says_where_temporaries_live():
    about = {"nodes": 9, "patterns": {}, "planned": True, "launches": 7, "zero_fills": 0, "fused": {},
             "arena_bytes": 2 << 20, "temporaries": 12, "temporaries_in_outputs": 10, "cuda_graph": True,
             "cuda_graph_bytes": 3 << 20, "kernels": {"_gemm_kernel": 7}}
    assert describe_plan(about).splitlines()[2] == (
        "  arena 2.00 MiB for 2 temporaries, 10 more in the outputs' bytes; CUDA graph: yes, its block 3.00 MiB")
    plain = {**about, "temporaries_in_outputs": 0, "cuda_graph": False, "cuda_graph_bytes": None}
    assert describe_plan(plain).splitlines()[2] == "  arena 2.00 MiB for 12 temporaries; CUDA graph: no"
