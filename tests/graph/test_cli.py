"""``nbx run`` on the committed example graph (needs the plugins it uses) and on a core-only graph."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from nbx_core.cli import main
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


@runs_a_program
def test_run_generates_missing_inputs(tmp_path, capsys):
    assert main(["run", str(_core_graph(tmp_path)), "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "x  float32  [3, 2]  (generated, normal(0, 1), seed 0)" in out
    assert "c  float32  [2, 3]" in out and "time: load + resolve" in out


@runs_a_program
def test_run_reads_inputs_and_writes_npz(tmp_path, capsys):
    x = np.arange(10, dtype=np.float32).reshape(5, 2)
    np.save(tmp_path / "x.npy", x)
    args = ["run", str(_core_graph(tmp_path)), "--input", f"x={tmp_path / 'x.npy'}",
            "--output", str(tmp_path / "o.npz")]
    assert main(args) == 0
    assert f"(from {tmp_path / 'x.npy'})" in capsys.readouterr().out
    with np.load(tmp_path / "o.npz", allow_pickle=False) as npz:
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
    out = capsys.readouterr().out
    assert "src_key_padding_mask  bool  [2, 8]  (generated, all False, seed 0)" in out
    assert "layer_norm_1  float32  [2, 8, 32]" in out


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
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-5)
