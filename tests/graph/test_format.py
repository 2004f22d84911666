"""Saving: round trip of every dtype, atomicity, and what a save may replace."""

from __future__ import annotations

import copy
import functools
import os
import re
import shutil

import ml_dtypes
import numpy as np
import pytest

import nbx_core.graph.writer as writer
from nbx_core.errors import ExportError, GraphError, GraphFormatError
from nbx_core.graph import read_graph, save
from nbx_core.graph.validate import load_weights

from .conftest import base_weights, write

ARRAYS = {
    "bool": np.array([True, False]),
    "uint8": np.arange(3, dtype=np.uint8),
    "int64": np.arange(3) - 1,
    "float16": np.ones(2, np.float16),
    "bfloat16": np.array([1.5, -2], ml_dtypes.bfloat16),
    "float32": np.zeros((2, 0), np.float32),
    "complex64": np.array([1 + 2j], np.complex64),
    "float8_e4m3fn": np.array([0.5, 2], ml_dtypes.float8_e4m3fn),
    "float64": np.array(3.0),
}


def test_every_dtype_round_trips(tmp_path, doc):
    doc["weights"] = [
        {"name": f"w_{d}", "key": d, "kind": "constant", "dtype": d, "shape": list(a.shape)} for d, a in ARRAYS.items()
    ]
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


def _nodes(path) -> list[str]:
    """The node names of the graph at ``path``, after checking its weights load too."""
    graph = read_graph(path)
    load_weights(graph)
    return [n.name for n in graph.nodes]


def _smaller(doc):
    """``doc`` minus its relu: a second, distinguishable graph."""
    doc = copy.deepcopy(doc)
    doc["nodes"].pop()
    doc["outputs"][0]["name"] = "add"
    return doc


@pytest.mark.parametrize(
    "content",
    [
        {"precious.txt": "data"},
        {"graph.json": "{}", "notes.md": "mine"},
        {"graph.json": '{"format": "onnx"}'},
        {"weights.safetensors": "x"},
        {"graph.json": "[[[[", "weights.safetensors": "x"},
    ],
)
def test_save_refuses_to_replace_a_directory_that_is_not_a_graph(tmp_path, doc, content):
    target = tmp_path / "mine"
    target.mkdir()
    for name, text in content.items():
        (target / name).write_text(text)
    with pytest.raises(
        ExportError,
        match=rf"^{target}: cannot save the graph there: {target} is a directory that is "
        r"not an NBX graph \(it holds .*\), and saving would delete it; nothing was "
        rf"written\. Save to another path, or move or delete {target} yourself",
    ):
        write(target, doc)
    assert {p.name: p.read_text() for p in target.iterdir()} == content
    assert [p.name for p in tmp_path.iterdir()] == ["mine"]


def test_save_refuses_to_replace_a_file_or_a_link(tmp_path, doc):
    (tmp_path / "file.nbx").write_text("mine")
    with pytest.raises(ExportError, match=r"file\.nbx exists and is not a directory; nothing was written"):
        write(tmp_path / "file.nbx", doc)
    graph = write(tmp_path / "g.nbx", doc)
    (tmp_path / "link.nbx").symlink_to(graph)
    with pytest.raises(ExportError, match=r"link\.nbx exists and is a symbolic link; nothing was written"):
        write(tmp_path / "link.nbx", doc)
    assert (tmp_path / "file.nbx").read_text() == "mine" and (tmp_path / "link.nbx").is_symlink()


def test_save_replaces_an_empty_directory_and_a_graph(tmp_path, doc):
    (tmp_path / "g.nbx").mkdir()
    path = write(tmp_path / "g.nbx", doc)
    assert _nodes(path) == ["mul", "add", "relu"]
    write(path, _smaller(doc))
    assert _nodes(path) == ["mul", "add"]
    assert [p.name for p in tmp_path.iterdir()] == ["g.nbx"]


def test_save_refuses_when_its_backup_name_holds_something_else(tmp_path, doc):
    path = write(tmp_path / "g.nbx", doc)
    (tmp_path / ".g.nbx.old").mkdir()
    (tmp_path / ".g.nbx.old" / "keep.txt").write_text("mine")
    with pytest.raises(ExportError, match=r"\.g\.nbx\.old is a directory that is not an NBX graph"):
        write(path, _smaller(doc))
    assert _nodes(path) == ["mul", "add", "relu"] and (tmp_path / ".g.nbx.old" / "keep.txt").exists()


class _Killed(BaseException):
    """The process died: nothing after it touches the disk."""


@pytest.mark.parametrize("existed", [True, False])
def test_a_save_killed_at_any_step_leaves_the_old_graph_or_the_new_one(tmp_path, doc, monkeypatch, existed):
    """Every rename and removal a save makes is a step; after a kill before step k no later step
    happens (not even the save's own cleanup). load() must then give the old graph or the new one,
    and the next save must succeed and leave nothing behind but the graph."""
    old, new = ["mul", "add", "relu"], ["mul", "add"]
    real = {"rename": os.rename, "replace": os.replace, "rmtree": shutil.rmtree}
    outcomes = []
    for k in range(12):
        path = tmp_path / f"k{k}" / "g.nbx"
        if existed:
            write(path, doc)
        calls = 0

        def step(name, *args, _k=k, **kwargs):
            nonlocal calls
            calls += 1
            if calls > _k:
                raise _Killed
            return real[name](*args, **kwargs)

        monkeypatch.setattr(os, "rename", functools.partial(step, "rename"))
        monkeypatch.setattr(os, "replace", functools.partial(step, "replace"))
        monkeypatch.setattr(shutil, "rmtree", functools.partial(step, "rmtree"))
        try:
            write(path, _smaller(doc))
            finished = True
        except _Killed:
            finished = False
        monkeypatch.undo()
        if existed or (path.exists() or (path.parent / ".g.nbx.old").exists()):
            outcomes.append(_nodes(path))
            assert outcomes[-1] in (old, new), (k, outcomes[-1])
        else:
            outcomes.append(None)
        write(path, doc)
        assert _nodes(path) == old
        debris = sorted(p.name for p in path.parent.iterdir() if p.name != "g.nbx")
        assert all(re.fullmatch(r"\.g\.nbx\.\w{8}\.tmp", name) for name in debris), (k, debris)
        if finished:
            break
    assert finished and outcomes[-1] == new
    # existing graph: kills before the rename aside, between the two renames (old read from its
    # backup), before and during the backup's removal, then none
    assert outcomes == ([old, old, new, new, new] if existed else [None, new])


def test_save_refuses_a_document_json_cannot_hold(tmp_path, doc):
    doc["nodes"][0]["args"].append(float("nan"))
    with pytest.raises(GraphFormatError, match=r"g\.nbx/graph\.json: the document cannot be written as JSON"):
        save(doc, base_weights(), tmp_path / "g.nbx")
    assert list(tmp_path.iterdir()) == []


def test_dot_paths_are_read_and_refused_by_name(tmp_path, doc, monkeypatch):
    path = write(tmp_path / "g.nbx", doc)
    monkeypatch.chdir(path)
    assert _nodes(".") == ["mul", "add", "relu"]
    write(".", _smaller(doc))  # the graph the working directory is: replaced like any other
    assert _nodes(path) == ["mul", "add"]
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ExportError, match=r"is a directory that is not an NBX graph \(it holds g\.nbx\)"):
        write(".", doc)


@pytest.mark.parametrize("refused", ["moving the old graph aside", "moving the new graph in"])
def test_a_save_whose_rename_fails_keeps_the_old_graph_and_leaves_no_debris(tmp_path, doc, monkeypatch, refused):
    path = write(tmp_path / "g.nbx", doc)
    rename = os.rename

    def refusing(src, dst):
        if str(dst).endswith(".old") if refused == "moving the old graph aside" else str(src).endswith(".tmp"):
            raise PermissionError(f"cannot rename {src}")
        rename(src, dst)

    monkeypatch.setattr(os, "rename", refusing)
    with pytest.raises(PermissionError):
        write(path, _smaller(doc))
    monkeypatch.undo()
    assert _nodes(path) == ["mul", "add", "relu"]
    assert [p.name for p in tmp_path.iterdir()] == ["g.nbx"]
