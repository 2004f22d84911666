"""benchmarks/models.py: which rows pass the accuracy test."""

from __future__ import annotations

import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("benchmarks_models", REPO / "benchmarks" / "models.py")
assert _spec is not None and _spec.loader is not None
models = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(models)


def _row(error: float, fp32: float | None, torch_fp32: float | None) -> dict:
    row = {"error": error, "error_graph": error}
    if torch_fp32 is not None:
        row |= {"torch_error_fp32": torch_fp32, "nbx_error_fp32": fp32, "nbx_graph_error_fp32": fp32}
    return row


def test_a_row_passes_close_to_torch_or_as_accurate_as_torch():
    assert models.accurate(_row(0.01, None, None))
    assert not models.accurate(_row(0.031, None, None))  # measured without a float32 run
    assert models.accurate(_row(0.031, 0.020, 0.022))  # as accurate as torch eager against float32
    assert models.accurate(_row(0.031, 0.024, 0.022))  # within the margin
    assert not models.accurate(_row(0.031, 0.030, 0.022))


def test_the_graph_replay_counts_too():
    row = _row(0.01, 0.01, 0.02) | {"error_graph": 0.05, "nbx_graph_error_fp32": 0.05}
    assert not models.accurate(row)
