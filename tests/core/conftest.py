"""A graph of core ops only (transpose, clone, cat, cast), so that every installation runs it."""

from __future__ import annotations

from pathlib import Path

import pytest

from nbx_core.graph import save

CORE_DOC = {
    "format": "nbx-graph", "version": 1, "symbols": {"n": {"min": 1, "max": None, "example": 4}},
    "inputs": [{"name": "x", "dtype": "float32", "shape": ["n", 3]}], "weights": [],
    "nodes": [
        {"name": "t", "op": "aten::transpose.int", "args": [{"ref": "x"}, 0, 1], "kwargs": {}, "outputs": ["t"]},
        {"name": "c", "op": "aten::clone.default", "args": [{"ref": "t"}],
         "kwargs": {"memory_format": {"memory_format": "contiguous_format"}}, "outputs": ["c"]},
        {"name": "k", "op": "aten::cat.default", "args": [[{"ref": "c"}, {"ref": "t"}], 1], "kwargs": {},
         "outputs": ["k"]},
        {"name": "d", "op": "aten::_to_copy.default", "args": [{"ref": "k"}],
         "kwargs": {"dtype": {"dtype": "float64"}}, "outputs": ["d"]},
    ],
    "outputs": [{"name": "d", "dtype": "float64", "shape": [3, "2*n"]}],
}


@pytest.fixture
def core_graph(tmp_path) -> Path:
    """The core graph, saved: ``d = cat([x.T contiguous, x.T], 1).to(float64)`` for x float32 [n, 3]."""
    return save(CORE_DOC, {}, tmp_path / "core.nbx")
