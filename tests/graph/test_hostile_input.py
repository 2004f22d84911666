"""Hostile graph.json and symbolic expressions: each ends as a GraphError naming the file and the
place, in bounded time (issue 32, item 4)."""

from __future__ import annotations

import json
import re
import time

import numpy as np
import pytest

from nbx_core.errors import GraphFormatError, GraphSymbolError, GraphVersionError
from nbx_core.graph import load, read_graph
from nbx_core.graph.symbolic import LIMIT, parse

from .conftest import write

X = np.ones((3, 4), np.float32)


def _with_sym(doc, expr) -> dict:
    """``doc`` plus a node sizing a tensor by ``expr``: test::sized_ones(x, [expr, 2])."""
    doc["nodes"].append(
        {
            "name": "ones",
            "op": "test::sized_ones.default",
            "args": [{"ref": "x"}, [{"sym": expr}, 2]],
            "kwargs": {"device": {"device": "cpu"}},
            "outputs": ["ones"],
        }
    )
    return doc


@pytest.mark.parametrize("depth", [900, 5000, 200_000])
def test_deeply_nested_graph_json_is_a_format_error(tmp_path, doc, depth):
    path = write(tmp_path / "g.nbx", doc)
    text = (path / "graph.json").read_text()
    deep = '"kwargs": {"k": ' + "[" * depth + "]" * depth + "}"
    (path / "graph.json").write_text(text.replace('"kwargs": {}', deep, 1))
    started = time.perf_counter()
    with pytest.raises(
        GraphFormatError,
        match=rf"g\.nbx/graph\.json: nested {depth + 4} levels deep; a graph nests at "
        "most 64 levels",
    ):
        read_graph(path)
    assert time.perf_counter() - started < 5


def test_deeply_nested_argument_in_memory_is_refused_by_save(tmp_path, doc):
    deep: list = []
    for _ in range(5000):
        deep = [deep]
    doc["nodes"][2]["args"].append(deep)
    with pytest.raises(
        GraphFormatError,
        match=r"node 2 'relu' \(aten::relu\.default\): arg 1: argument nested "
        "deeper than 64 levels",
    ):
        write(tmp_path / "g.nbx", doc)
    assert list(tmp_path.iterdir()) == []


def test_brackets_inside_strings_do_not_count_as_nesting(tmp_path, doc):
    doc["nodes"][2]["kwargs"] = {"approximate": "[" * 100 + '"{' * 100}
    assert read_graph(write(tmp_path / "g.nbx", doc)).nodes[2].kwargs["approximate"].startswith("[[[")


@pytest.mark.parametrize(
    ("expr", "why"),
    [
        ("batch**batch**batch**batch", "the exponent of \\*\\* must be an integer literal in 0..64, got 'batch'"),
        ("-" * 100_000 + "batch", "longer than 4096 characters"),
        ("batch**-1", "the exponent of \\*\\* must be an integer literal in 0..64, got '-'"),
        ("batch**65", "the exponent of \\*\\* must be an integer literal in 0..64, got '65'"),
        ("batch//(2-2)", "division by zero in 'batch//\\(2-2\\)'"),
        ("batch%0", "modulo by zero in 'batch%0'"),
        ("2**63", "the result exceeds 2\\*\\*62 in '2\\*\\*63'"),
        ("(2**62)*2 + batch", "is beyond ±2\\*\\*62 in '\\(2\\*\\*62\\)\\*2'"),
        ("9223372036854775808", "the literal 9223372036854775808 exceeds 2\\*\\*62"),
        ("(" * 65 + "batch" + ")" * 65, "more than 64 nested parentheses or calls"),
        ("max(" * 65 + "batch" + ")" * 65, "more than 64 nested parentheses or calls"),
        ("batch/2", "unexpected '/2' at character 5"),
        ("1e3", "unexpected 'e3'"),
        ("007", "unexpected '007' at character 0"),
        ("__import__('os')", 'unexpected "\'os" at character 11'),
        ("batch if batch else 1", "unexpected 'if'"),
        ("", "unexpected end"),
    ],
)
def test_bad_symbolic_expressions_are_refused_at_load(tmp_path, doc, expr, why):
    path = write(tmp_path / "g.nbx", doc)
    graph = json.loads((path / "graph.json").read_text())
    (path / "graph.json").write_text(json.dumps(_with_sym(graph, expr)))
    started = time.perf_counter()
    with pytest.raises(GraphFormatError) as info:
        read_graph(path)
    assert time.perf_counter() - started < 1
    message = str(info.value)
    assert message.startswith(f"{path}/graph.json: node 3 'ones' (test::sized_ones.default): arg 1: "), message
    assert "is not a symbolic int expression" in message
    assert re.search(why, message), message


def test_shape_expressions_name_their_dim(tmp_path, doc):
    doc["outputs"][0]["shape"] = ["batch", "batch**batch"]
    with pytest.raises(GraphFormatError, match=r"g\.nbx/graph\.json: output 'relu': dim 1: 'batch\*\*batch' is not"):
        write(tmp_path / "g.nbx", doc)


@pytest.mark.parametrize(
    ("expr", "why"),
    [
        (
            "batch//(batch-batch)",
            "'batch//\\(batch-batch\\)' has no value for batch=3: division by zero in 'batch//\\(batch-batch\\)'",
        ),
        ("batch%(batch-3)", "has no value for batch=3: modulo by zero"),
        (
            "(batch*1000)**7",
            "has no value for batch=3: the result .* is beyond ±2\\*\\*62 in '\\(batch\\*1000\\)\\*\\*7'",
        ),
        ("batch**62", "has no value for batch=3: the result 3815.* is beyond ±2\\*\\*62 in 'batch\\*\\*62'"),
        ("batch**63", "has no value for batch=3: the result exceeds 2\\*\\*62 in 'batch\\*\\*63'"),
    ],
)
def test_symbolic_expressions_without_a_value_name_the_node_at_run_time(tmp_path, doc, np_registry, expr, why):
    prog = load(write(tmp_path / "g.nbx", _with_sym(doc, expr)), registry=np_registry)
    started = time.perf_counter()
    with pytest.raises(GraphSymbolError) as info:
        prog(X)
    assert time.perf_counter() - started < 1
    message = str(info.value)
    assert message.startswith(f"{tmp_path}/g.nbx/graph.json: node 3 'ones' (test::sized_ones.default): arg 1: ")
    assert re.search(why, message), message


def test_symbolic_values_are_ints_with_python_semantics(tmp_path, doc, np_registry):
    expr = "max(1, min(batch*4 - 7, 2)) + (-batch)//2 % 5 + -batch**2 + (batch + 1)**2 + 0**0"
    doc["outputs"].append({"name": "ones", "dtype": "float32", "shape": [expr, 2]})
    prog = load(write(tmp_path / "g.nbx", _with_sym(doc, expr)), registry=np_registry)
    _, ones = prog(X)
    batch = 3
    assert ones.shape == (max(1, min(batch * 4 - 7, 2)) + (-batch) // 2 % 5 + -(batch**2) + (batch + 1) ** 2 + 1, 2)


def test_a_symbol_no_input_binds_is_named():
    expr = parse("seq*2", "model.nbx/graph.json: output 'y': dim 0")
    with pytest.raises(
        GraphSymbolError,
        match=r"^model\.nbx/graph\.json: output 'y': dim 0: 'seq\*2' uses symbol seq, "
        "which no input dim binds",
    ):
        expr({"batch": 2})


def test_bound_values_and_literals_stay_within_2_62():
    assert parse("2**62", "w")({}) == LIMIT == parse("4611686018427387904", "w")({})
    assert parse("-(2**62)", "w")({}) == -LIMIT
    assert parse("(seq)", "w").symbol == "seq" and parse("seq + 0", "w").symbol is None


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d.update(mutations=5), r"graph\.json: 'mutations' must be a JSON list, got 5"),
        (lambda d: d.update(mutations=[5]), r"graph\.json: mutations\[0\]: expected a JSON object, got int"),
        (lambda d: d.update(symbols=[]), r"graph\.json: symbols: must be an object"),
        (lambda d: d.update(symbols={"batch": 5}), r"symbol 'batch': must be an object"),
        (lambda d: d.update(symbols={"batch": {"max": 2**63}}), r"symbol 'batch': max must be an int in 0\.\.2\*\*62"),
        (lambda d: d.update(symbols={"1x": {}}), r"symbol '1x': a symbol name must be an identifier"),
        (lambda d: d.update(inputs={"x": 1}), r"graph\.json: 'inputs' must be a JSON list"),
        (lambda d: d.update(inputs=[5]), r"graph\.json: inputs\[0\]: expected a JSON object, got int"),
        (lambda d: d.update(producer=5), r"graph\.json: producer: must be an object of names to strings or numbers"),
        (lambda d: d.update(producer={"nbx": [1]}), r"producer: must be an object"),
        (
            lambda d: d.update(mutation=[]),
            r"graph\.json: unknown keys \['mutation'\]: a version 1 graph holds format, ",
        ),
        (lambda d: d["nodes"].__setitem__(0, 5), r"graph\.json: node 0: expected a JSON object, got int"),
        (
            lambda d: d["nodes"][0].update(kwargs=[]),
            r"node 0 'mul' \(aten::mul\.Tensor\): 'kwargs' must be a JSON dict",
        ),
        (lambda d: d["nodes"][0].update(outputs=[5]), r"node 0 'mul' .*a value name must be a non-empty string, got 5"),
        (lambda d: d["nodes"][0].update(op=5), r"node 0 'mul': 'op' must be a JSON str, got 5"),
        (
            lambda d: d["nodes"][0]["args"].append({"float": []}),
            r"node 0 'mul' .*: arg 2: argument \{'float': \[\]\} has "
            "an unknown tag or a malformed body",
        ),
        (lambda d: d["nodes"][0]["args"].append({"complex": ["a", 1]}), r"arg 2: argument .* malformed body"),
        (lambda d: d["nodes"][0]["args"].append({"complex": [{"ref": "x"}, 1]}), r"arg 2: argument .* malformed body"),
        (lambda d: d["nodes"][0]["args"].append({"dtype": 5}), r"arg 2: a dtype is named by a string, got 5"),
        (lambda d: d["nodes"][0]["args"].append({"sym": 5}), r"arg 2: symbolic int 5 is not a string expression"),
        (
            lambda d: d["weights"][0].update(shape=["4"]),
            r"weight 'w': shape \['4'\]: dim 0 is '4', not one of ints in ",
        ),
        (lambda d: d["weights"][0].update(shape=[True]), r"weight 'w': shape \[True\]: dim 0 is True"),
        (lambda d: d["inputs"][0].update(shape=["batch", 2**63]), r"input 'x': shape .*: dim 1 is 9223372036854775808"),
        (lambda d: d["inputs"][0].update(shape=["batch", -1]), r"input 'x': shape \['batch', -1\]: dim 1 is -1"),
        (lambda d: d["inputs"][0].update(shape=5), r"input 'x': 'shape' must be a JSON list, got 5"),
        (lambda d: d["inputs"][0].update(dtype=["float32"]), r"input 'x': 'dtype' must be a JSON str"),
    ],
)
def test_every_field_is_type_checked(tmp_path, doc, edit, message):
    path = write(tmp_path / "g.nbx", doc)
    graph = json.loads((path / "graph.json").read_text())
    edit(graph)
    (path / "graph.json").write_text(json.dumps(graph))
    with pytest.raises(GraphFormatError, match=message) as info:
        read_graph(path)
    assert str(info.value).startswith(f"{path}/graph.json"), info.value


@pytest.mark.parametrize("version", [1.0, True, "1"])
def test_version_must_be_the_int_1(tmp_path, doc, version):
    doc["version"] = version
    with pytest.raises(GraphVersionError, match="is not supported"):
        write(tmp_path / "g.nbx", doc)


@pytest.mark.parametrize("literal", ["1e999", "-1e400"])
def test_float_literal_beyond_float64_is_not_json(tmp_path, doc, literal):
    doc["nodes"][2]["args"].append(12345.5)
    path = write(tmp_path / "g.nbx", doc)
    text = (path / "graph.json").read_text()
    (path / "graph.json").write_text(text.replace("12345.5", literal))
    with pytest.raises(GraphFormatError, match=rf"not valid JSON: {literal} is beyond float64"):
        read_graph(path)
