"""Every malformed graph is a GraphError subclass naming the file and the node (or weight)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from nbx_core.errors import (
    GraphArityError,
    GraphError,
    GraphFormatError,
    GraphReferenceError,
    GraphVersionError,
    GraphWeightsError,
)
from nbx_core.graph import load, read_graph, required_ops
from nbx_core.graph.writer import write_safetensors

from .conftest import base_weights, write


def _rewrite(path: Path, edit) -> None:
    file = path / "graph.json"
    doc = json.loads(file.read_text())
    edit(doc)
    file.write_text(json.dumps(doc))


@pytest.fixture
def graph(tmp_path, doc) -> Path:
    return write(tmp_path / "g.nbx", doc)


def test_valid_graph_reads(graph):
    g = read_graph(graph)
    assert [n.op for n in g.nodes] == ["aten::mul.Tensor", "aten::add.Tensor", "aten::relu.default"]
    assert required_ops(graph) == {"aten::mul.Tensor": 1, "aten::add.Tensor": 1, "aten::relu.default": 1}


def test_bad_json(graph):
    (graph / "graph.json").write_text('{"format": "nbx-graph", "version": 1,')
    with pytest.raises(GraphFormatError, match=r"g\.nbx/graph\.json: not valid JSON"):
        read_graph(graph)


def test_non_finite_literal_is_not_json(graph):
    (graph / "graph.json").write_text((graph / "graph.json").read_text().replace('"version": 1', '"version": NaN'))
    with pytest.raises(GraphFormatError, match="NaN is not JSON"):
        read_graph(graph)


def test_unknown_schema_version(graph):
    _rewrite(graph, lambda d: d.update(version=7))
    with pytest.raises(GraphVersionError, match=r"graph\.json: schema version 7 is not supported.*reads version 1"):
        read_graph(graph)


def test_not_an_nbx_graph(graph):
    _rewrite(graph, lambda d: d.update(format="onnx"))
    with pytest.raises(GraphVersionError, match="not an NBX graph"):
        read_graph(graph)


def test_not_a_directory(tmp_path):
    with pytest.raises(GraphFormatError, match="not a graph directory"):
        read_graph(tmp_path / "nope.nbx")


def test_undefined_value(graph):
    _rewrite(graph, lambda d: d["nodes"][1]["args"].__setitem__(1, {"ref": "bias"}))
    with pytest.raises(GraphReferenceError,
                       match=r"graph\.json: node 1 'add' \(aten::add\.Tensor\): arg 1: refers to undefined value "
                             "'bias'"):
        read_graph(graph)


def test_value_defined_later(graph):
    _rewrite(graph, lambda d: d["nodes"][0]["args"].__setitem__(0, {"ref": "relu"}))
    with pytest.raises(GraphReferenceError, match=r"node 0 'mul'.*'relu'; it is defined later, by node 2"):
        read_graph(graph)


def test_output_undefined(graph):
    _rewrite(graph, lambda d: d["outputs"][0].update(name="ghost"))
    with pytest.raises(GraphReferenceError, match=r"output 'ghost': refers to undefined value 'ghost'"):
        read_graph(graph)


def test_duplicate_value(graph):
    _rewrite(graph, lambda d: d["nodes"][1].update(outputs=["mul"]))
    with pytest.raises(GraphFormatError, match=r"node 1 'add'.*'mul' is defined twice \(first as an output of node 0"):
        read_graph(graph)


def test_wrong_arity_known_op(graph):
    def edit(d):
        d["nodes"][2].update(op="aten::native_layer_norm.default", outputs=["relu", "mean"])
    _rewrite(graph, edit)
    with pytest.raises(GraphArityError, match=r"node 2 'relu'.*declares 2 outputs but aten::native_layer_norm"
                                              r"\.default returns 3"):
        read_graph(graph)


def test_no_outputs(graph):
    _rewrite(graph, lambda d: d["nodes"][0].update(outputs=[]))
    with pytest.raises(GraphArityError, match="node 0 'mul'.*declares no outputs"):
        read_graph(graph)


def test_bad_op_name(graph):
    _rewrite(graph, lambda d: d["nodes"][0].update(op="mul"))
    with pytest.raises(GraphFormatError, match=r"node 0 'mul' \(mul\).*not a valid op name"):
        read_graph(graph)


def test_bad_argument_tag(graph):
    _rewrite(graph, lambda d: d["nodes"][0]["args"].append({"tensor": [1, 2]}))
    with pytest.raises(GraphFormatError, match=r"node 0 'mul'.*unknown tag"):
        read_graph(graph)


def test_missing_key(graph):
    _rewrite(graph, lambda d: d["nodes"][0].pop("kwargs"))
    with pytest.raises(GraphFormatError, match=r"node 0 'mul'.*missing key 'kwargs'"):
        read_graph(graph)


def test_unknown_dtype(graph):
    _rewrite(graph, lambda d: d["inputs"][0].update(dtype="complex128"))
    with pytest.raises(GraphFormatError, match=r"input 'x'.*unknown dtype 'complex128'"):
        read_graph(graph)


def test_undeclared_symbol(graph):
    _rewrite(graph, lambda d: d["inputs"][0].update(shape=["seq", 4]))
    with pytest.raises(GraphFormatError, match=r"input 'x'.*undeclared symbols \['seq'\]"):
        read_graph(graph)


def test_bad_symbolic_expression(graph):
    _rewrite(graph, lambda d: d["nodes"][0]["args"].append({"sym": "__import__('os')"}))
    with pytest.raises(GraphFormatError, match="is not a symbolic int expression"):
        read_graph(graph)


def test_weight_missing_from_safetensors(graph):
    arrays = base_weights()
    del arrays["lin.b"]
    write_safetensors(graph / "weights.safetensors", arrays, {"lin.w": "float32"})
    with pytest.raises(GraphWeightsError, match=r"weights\.safetensors: weight 'b' \(key 'lin\.b', first used by "
                                                r"node 1 'add' \(aten::add\.Tensor\)\): missing"):
        load(graph)


def test_weight_of_wrong_shape(graph):
    arrays = {**base_weights(), "lin.b": np.zeros(5, np.float32)}
    write_safetensors(graph / "weights.safetensors", arrays, {"lin.w": "float32", "lin.b": "float32"})
    with pytest.raises(GraphWeightsError, match=r"weight 'b' .*node 1 'add'.*holds float32 \[5\] but graph\.json "
                                                r"declares float32 \[4\]"):
        load(graph)


def test_weight_of_wrong_dtype(graph):
    arrays = {**base_weights(), "lin.w": np.zeros(4, np.float16)}
    write_safetensors(graph / "weights.safetensors", arrays, {"lin.w": "float16", "lin.b": "float32"})
    with pytest.raises(GraphWeightsError, match=r"weight 'w' .*node 0 'mul'.*holds float16 \[4\]"):
        load(graph)


@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty"])
def test_corrupt_safetensors(graph, damage):
    file = graph / "weights.safetensors"
    data = file.read_bytes()
    file.write_bytes({"garbage": b"\xff" * 64, "truncated": data[:-3], "empty": b""}[damage])
    with pytest.raises(GraphWeightsError, match=r"weights\.safetensors: corrupt safetensors file"):
        load(graph)


def test_missing_weights_file(graph):
    (graph / "weights.safetensors").unlink()
    with pytest.raises(GraphWeightsError, match=r"weights\.safetensors: cannot read it"):
        load(graph)


def test_errors_are_graph_errors():
    for cls in (GraphFormatError, GraphVersionError, GraphReferenceError, GraphArityError, GraphWeightsError):
        assert issubclass(cls, GraphError)
