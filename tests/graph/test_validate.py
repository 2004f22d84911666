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


def test_not_a_directory(tmp_path):
    with pytest.raises(GraphFormatError, match="not a graph directory"):
        read_graph(tmp_path / "nope.nbx")


# name -> (edit of graph.json, error, what its message says)
MALFORMED = {
    "unknown_schema_version": (
        lambda d: d.update(version=7),
        GraphVersionError,
        r"graph\.json: schema version 7 is not supported.*reads version 1",
    ),
    "not_an_nbx_graph": (lambda d: d.update(format="onnx"), GraphVersionError, "not an NBX graph"),
    "undefined_value": (
        lambda d: d["nodes"][1]["args"].__setitem__(1, {"ref": "bias"}),
        GraphReferenceError,
        r"graph\.json: node 1 'add' \(aten::add\.Tensor\): arg 1: refers to undefined value "
        "'bias'",
    ),
    "value_defined_later": (
        lambda d: d["nodes"][0]["args"].__setitem__(0, {"ref": "relu"}),
        GraphReferenceError,
        r"node 0 'mul'.*'relu'; it is defined later, by node 2",
    ),
    "output_undefined": (
        lambda d: d["outputs"][0].update(name="ghost"),
        GraphReferenceError,
        r"output 'ghost': refers to undefined value 'ghost'",
    ),
    "duplicate_value": (
        lambda d: d["nodes"][1].update(outputs=["mul"]),
        GraphFormatError,
        r"node 1 'add'.*'mul' is defined twice \(first as an output of node 0",
    ),
    "wrong_arity_known_op": (
        lambda d: d["nodes"][2].update(op="aten::native_layer_norm.default", outputs=["relu", "mean"]),
        GraphArityError,
        r"node 2 'relu'.*declares 2 outputs but aten::native_layer_norm"
        r"\.default returns 3",
    ),
    "no_outputs": (lambda d: d["nodes"][0].update(outputs=[]), GraphArityError, "node 0 'mul'.*declares no outputs"),
    "bad_op_name": (
        lambda d: d["nodes"][0].update(op="mul"),
        GraphFormatError,
        r"node 0 'mul' \(mul\).*not a valid op name",
    ),
    "bad_argument_tag": (
        lambda d: d["nodes"][0]["args"].append({"tensor": [1, 2]}),
        GraphFormatError,
        r"node 0 'mul'.*unknown tag",
    ),
    "missing_key": (lambda d: d["nodes"][0].pop("kwargs"), GraphFormatError, r"node 0 'mul'.*missing key 'kwargs'"),
    "guard_relation": (
        lambda d: d.update(guards=[{"left": "batch", "op": "=<", "right": 8}]),
        GraphFormatError,
        r"guards\[0\]: op '=<' is not one of == != < <= > >=",
    ),
    "guard_symbol": (
        lambda d: d.update(guards=[{"left": "batch // 2", "op": "==", "right": "seq"}]),
        GraphFormatError,
        r"guards\[0\] right: uses undeclared symbols \['seq'\]",
    ),
    "guard_expression": (
        lambda d: d.update(guards=[{"left": "batch +", "op": "==", "right": 2}]),
        GraphFormatError,
        r"guards\[0\] left: 'batch \+' is not a symbolic int expression",
    ),
    "unknown_dtype": (
        lambda d: d["inputs"][0].update(dtype="complex128"),
        GraphFormatError,
        r"input 'x'.*unknown dtype 'complex128'",
    ),
    "undeclared_symbol": (
        lambda d: d["inputs"][0].update(shape=["seq", 4]),
        GraphFormatError,
        r"input 'x'.*undeclared symbols \['seq'\]",
    ),
    "constant_input_named_as_an_input": (
        lambda d: d.update(constant_inputs=[{"name": "x", "index": 1, "value": None}]),
        GraphFormatError,
        r"constant_inputs\[0\]: name 'x' must be an identifier no other input has",
    ),
    "constant_input_out_of_place": (
        lambda d: d.update(constant_inputs=[{"name": "mask", "index": 5, "value": None}]),
        GraphFormatError,
        r"constant_inputs\[0\]: index 5 must be a free place in 0\.\.1",
    ),
    "constant_input_without_value": (
        lambda d: d.update(constant_inputs=[{"name": "mask", "index": 0}]),
        GraphFormatError,
        r"constant_inputs\[0\]: missing key 'value'",
    ),
    "constant_input_not_a_scalar": (
        lambda d: d.update(constant_inputs=[{"name": "mask", "index": 0, "value": [1]}]),
        GraphFormatError,
        r"constant_inputs\[0\]: value \[1\] must be null, a boolean, a number or a string",
    ),
    "data_symbol_origin_malformed": (
        lambda d: d["symbols"].update(k={"min": 0, "from": {"value": 3}}),
        GraphFormatError,
        r"symbol 'k': \"from\" must be \{\"value\": a node result's name, \"dim\": a dim or null\}",
    ),
    "data_symbol_from_an_input": (
        lambda d: d["symbols"].update(k={"from": {"value": "x", "dim": 0}}),
        GraphReferenceError,
        r"symbol 'k': is bound by 'x', which no node returns \(it is an input\)",
    ),
    "data_symbol_from_nowhere": (
        lambda d: d["symbols"].update(k={"from": {"value": "ghost", "dim": None}}),
        GraphReferenceError,
        r"symbol 'k': is bound by 'ghost', which no node returns \(it is not defined\)",
    ),
    "data_symbol_in_an_input": (
        lambda d: (d["symbols"].update(k={"from": {"value": "relu", "dim": 0}}), d["inputs"][0].update(shape=["k", 4])),
        GraphFormatError,
        r"input 'x': uses k, a size read from data by 'relu': an input's dims can use only the symbols input dims",
    ),
    "data_symbol_before_its_node": (
        lambda d: (
            d["symbols"].update(k={"from": {"value": "relu", "dim": 0}}),
            d["nodes"][0]["args"].append({"sym": "k"}),
        ),
        GraphReferenceError,
        r"node 0 'mul'.*uses k, which the result 'relu' binds: no earlier node returns that result",
    ),
    "bad_symbolic_expression": (
        lambda d: d["nodes"][0]["args"].append({"sym": "__import__('os')"}),
        GraphFormatError,
        "is not a symbolic int expression",
    ),
}


@pytest.mark.parametrize(("edit", "error", "match"), list(MALFORMED.values()), ids=list(MALFORMED))
def test_a_malformed_document_names_the_file_and_the_place(graph, edit, error, match):
    _rewrite(graph, edit)
    with pytest.raises(error, match=match):
        read_graph(graph)


# name -> (change to the weights written, their dtypes, what the error says)
BAD_WEIGHTS = {
    "missing_from_safetensors": (
        lambda w: {k: v for k, v in w.items() if k != "lin.b"},
        {"lin.w": "float32"},
        r"weights\.safetensors: weight 'b' \(key 'lin\.b', first used by node 1 'add' \(aten::add\.Tensor\)\): "
        r"missing",
    ),
    "of_wrong_shape": (
        lambda w: {**w, "lin.b": np.zeros(5, np.float32)},
        {"lin.w": "float32", "lin.b": "float32"},
        r"weight 'b' .*node 1 'add'.*holds float32 \[5\] but graph\.json declares float32 \[4\]",
    ),
    "of_wrong_dtype": (
        lambda w: {**w, "lin.w": np.zeros(4, np.float16)},
        {"lin.w": "float16", "lin.b": "float32"},
        r"weight 'w' .*node 0 'mul'.*holds float16 \[4\]",
    ),
}


@pytest.mark.parametrize(("change", "dtypes", "match"), list(BAD_WEIGHTS.values()), ids=list(BAD_WEIGHTS))
def test_a_bad_weight_names_the_file_the_weight_and_its_first_user(graph, change, dtypes, match):
    write_safetensors(graph / "weights.safetensors", change(base_weights()), dtypes)
    with pytest.raises(GraphWeightsError, match=match):
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
