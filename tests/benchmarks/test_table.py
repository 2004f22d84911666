"""benchmarks/table.py: the tables of benchmarks/README.md are what it makes of benchmarks/results/."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("benchmarks_table", REPO / "benchmarks" / "table.py")
assert _spec is not None and _spec.loader is not None
table = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(table)


def test_the_readme_tables_are_generated_from_the_committed_results():
    readme = (REPO / "benchmarks" / "README.md").read_text()
    assert table.render(readme) == readme, "run `python -m benchmarks.table` after changing benchmarks/results/"


def test_the_models_table_has_a_row_a_model(tmp_path):
    assert "No whole-model results yet" in table.models_table(tmp_path)
    row = {
        "model": "bert",
        "nodes": 700,
        "torch_ms": 10.0,
        "compile_ms": 8.0,
        "compile_ro_ms": 6.0,
        "nbx_ms": 9.0,
        "nbx_graph_ms": 5.0,
        "first_run_s": 41.2,
        "torch_peak_mb": 900.0,
        "nbx_peak_mb": 800.0,
        "nbx_graph_peak_mb": 850.0,
        "error": 0.004,
        "error_graph": 0.005,
        "torch_error_fp32": 0.01,
        "nbx_error_fp32": 0.009,
        "nbx_graph_error_fp32": 0.012,
        "ok": True,
    }
    doc = {
        "gpu": "NVIDIA H200",
        "torch": "2.11",
        "triton": "3.6.0",
        "date": "2026-12-05",
        "results": [row, {"model": "llama", "failed": "OutOfMemoryError: no"}],
    }
    (tmp_path / "models.json").write_text(json.dumps(doc))
    lines = table.models_table(tmp_path).splitlines()
    assert lines[0].startswith("NVIDIA H200, torch 2.11, triton 3.6.0, 2026-12-05")
    header, rule, bert, llama = lines[2:]
    assert header.count("|") == rule.count("|") == bert.count("|") == llama.count("|") == 17
    assert bert == (
        "| bert | 700 | 10.0 | 8.0 | 6.0 | 9.0 | 5.0 | 1.111 | 2.0 | 1.25 | 1.6 | 1.2 | 41.2 | 900.0 / 800.0 / 850.0 "
        "| 5.0e-03 | 1.0e-02 / 1.2e-02 |"
    )
    assert llama.startswith("| llama | failed: OutOfMemoryError: no |")
    assert "models.png" not in table.models_table(tmp_path)
    (tmp_path / "models.png").write_bytes(b"")
    assert table.models_table(tmp_path).endswith("![speed relative to torch eager](results/models.png)")
