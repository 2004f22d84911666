"""Saving: round trip of every dtype, and atomicity."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import nbx_core.graph.writer as writer
from nbx_core.errors import GraphError
from nbx_core.graph import read_graph
from nbx_core.graph.validate import load_weights

from .conftest import base_weights, write

ARRAYS = {
    "bool": np.array([True, False]), "uint8": np.arange(3, dtype=np.uint8), "int64": np.arange(3) - 1,
    "float16": np.ones(2, np.float16), "bfloat16": np.array([1.5, -2], ml_dtypes.bfloat16),
    "float32": np.zeros((2, 0), np.float32), "complex64": np.array([1 + 2j], np.complex64),
    "float8_e4m3fn": np.array([0.5, 2], ml_dtypes.float8_e4m3fn), "float64": np.array(3.0),
}


def test_every_dtype_round_trips(tmp_path, doc):
    doc["weights"] = [{"name": f"w_{d}", "key": d, "kind": "constant", "dtype": d, "shape": list(a.shape)}
                      for d, a in ARRAYS.items()]
    doc["nodes"] = [n for n in doc["nodes"] if n["name"] == "relu"]
    doc["nodes"][0]["args"] = [{"ref": "x"}]
    loaded = load_weights(read_graph(write(tmp_path / "g.nbx", doc, ARRAYS)))
    for key, array in ARRAYS.items():
        assert loaded[key].dtype == array.dtype and loaded[key].shape == array.shape
        np.testing.assert_array_equal(loaded[key], array)


def test_save_validates_before_writing(tmp_path, doc):
    doc["nodes"][0]["args"] = [{"ref": "nope"}]
    with pytest.raises(GraphError, match="undefined value 'nope'"):
        write(tmp_path / "g.nbx", doc)
    assert list(tmp_path.iterdir()) == []


def test_save_checks_given_weights(tmp_path, doc):
    with pytest.raises(GraphError, match=r"given to save\(\): weight 'b' .*holds float32 \[3\]"):
        write(tmp_path / "g.nbx", doc, {**base_weights(), "lin.b": np.zeros(3, np.float32)})


def test_interrupted_save_leaves_old_graph_and_no_debris(tmp_path, doc, monkeypatch):
    path = write(tmp_path / "g.nbx", doc)
    before = (path / "graph.json").read_text()

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(writer, "write_safetensors", interrupted)
    doc["nodes"].pop()
    doc["outputs"][0]["name"] = "add"
    with pytest.raises(KeyboardInterrupt):
        write(path, doc)
    assert [p.name for p in tmp_path.iterdir()] == ["g.nbx"]
    assert (path / "graph.json").read_text() == before
    monkeypatch.undo()
    write(path, doc)  # a completed save replaces the old graph
    assert [n.name for n in read_graph(path).nodes] == ["mul", "add"]
    assert [p.name for p in tmp_path.iterdir()] == ["g.nbx"]
