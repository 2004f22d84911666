"""The runner, on a test-local registry of numpy kernels (no plugin needed)."""

from __future__ import annotations

import gc
import os

import numpy as np
import pytest

from nbx_core import NBXTensor
from nbx_core.errors import GraphArityError, GraphError, GraphInputError, NbxValueError, UnresolvedOpError
from nbx_core.graph import load
from nbx_core.testing import numeric

from . import np_kernels
from .conftest import base_weights, write

X = np.arange(8, dtype=np.float32).reshape(2, 4) - 3


def _expected(x: np.ndarray) -> np.ndarray:
    w = base_weights()
    return np.maximum(x * w["lin.w"] + w["lin.b"], 0)


def _node(name, op, args, outputs=None, **kwargs):
    return {"name": name, "op": op, "args": args, "kwargs": kwargs, "outputs": outputs or [name]}


def test_runs_and_declares(tmp_path, doc, np_registry):
    prog = load(write(tmp_path / "g.nbx", doc), registry=np_registry)
    assert [s.name for s in prog.inputs] == ["x"] and [s.name for s in prog.outputs] == ["relu"]
    assert prog.required_ops() == {"aten::mul.Tensor": 1, "aten::add.Tensor": 1, "aten::relu.default": 1}
    y = prog(X)
    assert isinstance(y, NBXTensor)
    np.testing.assert_array_equal(y.numpy(), _expected(X))
    np.testing.assert_array_equal(prog(x=X).numpy(), _expected(X))
    assert set(prog.run({"x": X})) == {"relu"}


def test_missing_ops_listed_with_counts_before_any_kernel(tmp_path, doc, np_registry):
    doc["nodes"] += [
        _node("g1", "aten::gelu.default", [{"ref": "relu"}]),
        _node("g2", "aten::gelu.default", [{"ref": "g1"}]),
        _node("n1", "acme::fused_rope.default", [{"ref": "g2"}]),
        _node("c1", "aten::convolution.default", [{"ref": "n1"}]),
    ]
    doc["outputs"][0]["name"] = "c1"
    path = write(tmp_path / "g.nbx", doc)
    with pytest.raises(UnresolvedOpError) as info:
        load(path, registry=np_registry)
    message = str(info.value)
    assert "graph.json: 3 of the 6 ops the graph calls cannot be resolved, so nothing ran" in message
    assert "aten::gelu.default: provided by nbx-elementwise" in message and "[used by 2 nodes]" in message
    assert "acme::fused_rope.default" in message and "namespace 'acme' is not NBX's" in message
    assert "aten::convolution.default: provided by nbx-conv" in message and "[used by 1 node]" in message
    assert np_kernels.CALLS == []


def test_inputs_checked(tmp_path, doc, np_registry):
    prog = load(write(tmp_path / "g.nbx", doc), registry=np_registry)
    with pytest.raises(GraphInputError, match=r"input 'x' is float64, the graph declares float32"):
        prog(X.astype(np.float64))
    with pytest.raises(GraphInputError, match=r"input 'x' has shape \[2, 5\], .*\[batch, 4\]: dim 1 must be 4"):
        prog(np.zeros((2, 5), np.float32))
    with pytest.raises(GraphInputError, match=r"input 'x' dim 0 \(batch\) is 17, outside the exported range 1\.\.16"):
        prog(np.zeros((17, 4), np.float32))
    with pytest.raises(GraphInputError, match=r"missing \['x'\], unknown \['y'\]"):
        prog(y=X)
    with pytest.raises(GraphInputError, match="2 positional inputs given"):
        prog(X, X)
    assert np_kernels.CALLS == []


def test_symbolic_dims_bind_consistently(tmp_path, doc, np_registry):
    doc["symbols"]["n"] = {"min": 1, "max": None, "example": 3}
    doc["inputs"].append({"name": "z", "dtype": "float32", "shape": ["batch", "2*n"]})
    doc["inputs"].append({"name": "v", "dtype": "float32", "shape": ["n"]})
    prog = load(write(tmp_path / "g.nbx", doc), registry=np_registry)
    prog(X, np.zeros((2, 6), np.float32), np.zeros(3, np.float32))
    with pytest.raises(GraphInputError, match=r"input 'z' dim 0 is 3, but input 'x' dim 0 bound batch = 2"):
        prog(X, np.zeros((3, 6), np.float32), np.zeros(3, np.float32))
    with pytest.raises(GraphInputError, match=r"input 'z' dim 1 is 5, but the graph declares 2\*n = 6"):
        prog(X, np.zeros((2, 5), np.float32), np.zeros(3, np.float32))


def test_symbolic_args_and_devices_are_evaluated(tmp_path, doc, np_registry):
    doc["nodes"].append(
        _node(
            "ones",
            "test::sized_ones.default",
            [{"ref": "x"}, [{"sym": "batch*2 + 1"}, 3]],
            dtype={"dtype": "float32"},
            device={"device": "cpu"},
        )
    )
    doc["outputs"].append({"name": "ones", "dtype": "float32", "shape": ["2*batch + 1", 3]})
    prog = load(write(tmp_path / "g.nbx", doc), registry=np_registry)
    _, ones = prog(np.zeros((3, 4), np.float32))
    assert ones.shape == (7, 3)


def test_in_place_mutation_is_seen_by_later_readers(tmp_path, doc, np_registry):
    # c = relu(...); add_(c, 1) -> d; e = c * 2 must read the mutated c.
    doc["nodes"] += [
        _node("d", "aten::add_.Tensor", [{"ref": "relu"}, 1.0]),
        _node("e", "aten::mul.Tensor", [{"ref": "relu"}, 2.0]),
    ]
    doc["outputs"] = [{"name": "e", "dtype": "float32", "shape": ["batch", 4]}]
    prog = load(write(tmp_path / "g.nbx", doc), registry=np_registry)
    np.testing.assert_array_equal(prog(X).numpy(), (_expected(X) + 1) * 2)


def test_buffer_mutation_updates_stored_state(tmp_path, doc, np_registry):
    # b <- b + 1 after every run (what torch.export records as BUFFER_MUTATION).
    doc["nodes"].append(_node("b_next", "aten::add.Tensor", [{"ref": "b"}, 1.0]))
    doc["mutations"] = [{"value": "b_next", "kind": "buffer", "target": "lin.b"}]
    prog = load(write(tmp_path / "g.nbx", doc), registry=np_registry)
    first = prog(X).numpy().copy()
    second = prog(X).numpy()
    np.testing.assert_array_equal(first, _expected(X))
    w = base_weights()
    np.testing.assert_array_equal(second, np.maximum(X * w["lin.w"] + w["lin.b"] + 1, 0))


def test_mutation_target_must_exist(tmp_path, doc):
    doc["mutations"] = [{"value": "relu", "kind": "buffer", "target": "lin.w"}]
    with pytest.raises(GraphError, match=r"mutations\[0\]: target 'lin.w' is not a buffer of the graph"):
        write(tmp_path / "g.nbx", doc)


def test_runtime_arity(tmp_path, doc, np_registry):
    doc["nodes"].append(_node("halves", "test::two_halves.default", [{"ref": "x"}]))
    path = write(tmp_path / "g.nbx", doc)
    with pytest.raises(
        GraphArityError,
        match=r"node 3 'halves' \(test::two_halves.default\): the kernel returned 2 "
        r"results but the node declares 1 outputs",
    ):
        load(path, registry=np_registry)(X)


def test_multi_output_with_unused_result(tmp_path, doc, np_registry):
    doc["nodes"].append(_node("halves", "test::two_halves.default", [{"ref": "x"}], outputs=[None, "second"]))
    doc["outputs"] = [{"name": "second", "dtype": "float32", "shape": [1, 4]}]
    np.testing.assert_array_equal(load(write(tmp_path / "g.nbx", doc), registry=np_registry)(X).numpy(), X[1:])


def test_kernel_error_names_the_node(tmp_path, doc, np_registry):
    doc_bad = dict(doc)
    doc_bad["nodes"] = [_node("mul", "aten::mul.Tensor", [{"ref": "x"}, [1, 2]])] + doc["nodes"][1:]
    prog = load(write(tmp_path / "h.nbx", doc_bad), registry=np_registry)
    with pytest.raises(Exception, match=r"operands could not be broadcast") as info:
        prog(X)
    assert any("node 0 'mul' (aten::mul.Tensor)" in note for note in getattr(info.value, "__notes__", []))


def test_wrong_output_dtype_is_reported(tmp_path, doc, np_registry):
    doc["outputs"][0]["dtype"] = "float16"
    prog = load(write(tmp_path / "g.nbx", doc), registry=np_registry)
    with pytest.raises(
        GraphError,
        match=r"output 'relu' of node 2 'relu' \(aten::relu.default\): the kernel produced "
        r"float32 \[2, 4\], the graph declares float16 \[2, 4\]",
    ):
        prog(X)


def _chain(doc, length):
    doc["nodes"] = [_node("n0", "aten::mul.Tensor", [{"ref": "x"}, {"ref": "w"}])]
    for i in range(1, length):
        doc["nodes"].append(_node(f"n{i}", "aten::add.Tensor", [{"ref": f"n{i - 1}"}, {"ref": "b"}]))
    doc["outputs"] = [{"name": f"n{length - 1}", "dtype": "float32", "shape": ["batch", 4]}]
    return doc


def test_intermediates_freed_after_last_use(tmp_path, doc, np_registry):
    prog = load(write(tmp_path / "g.nbx", _chain(doc, 30)), registry=np_registry)
    out = prog(X)
    # Each kernel sees only its own input alive among the tensors kernels made (plus nothing else).
    assert max(np_kernels.LIVE) <= 1, np_kernels.LIVE
    gc.collect()
    assert sum(r() is not None for r in np_kernels.PRODUCED) == 1  # only the output
    del out
    assert sum(r() is not None for r in np_kernels.PRODUCED) == 0


def _rss_kib() -> int:
    with open("/proc/self/statm") as f:  # current resident set, not the peak
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def test_memory_flat_over_100_runs(tmp_path, doc, np_registry):
    doc = _chain(doc, 20)
    doc["symbols"]["batch"]["max"] = 4096
    prog = load(write(tmp_path / "g.nbx", doc), registry=np_registry)
    x = np.ones((4096, 4), np.float32)  # 64 KiB per value: a leak of 20 values a run would show
    for _ in range(5):
        prog(x)
    gc.collect()
    rss0 = _rss_kib()
    live = []
    for _ in range(100):
        prog(x)
        live.append(sum(r() is not None for r in np_kernels.PRODUCED))
    gc.collect()
    rss1 = _rss_kib()
    assert max(live) <= 1
    assert rss1 - rss0 < 8 * 1024  # KiB: 100 runs x 20 values x 64 KiB would be 125 MiB if kept


def test_kernel_nbx_error_keeps_class_and_names_node(tmp_path, doc, np_registry):
    doc["nodes"].insert(0, _node("v", "aten::view.default", [{"ref": "x"}, [3, 5]]))
    prog = load(write(tmp_path / "g.nbx", doc), registry=np_registry)
    with pytest.raises(NbxValueError, match=r"node 0 'v' \(aten::view.default\): "):
        prog(X)


def _permute_view_doc(doc):
    # x [batch, 4] -> permute -> [4, batch] -> view [4 * batch]: torch would refuse this view,
    # as NBX's eager view does; the runner copies where nothing in the graph writes in place.
    doc["nodes"] = [
        _node("p", "aten::permute.default", [{"ref": "x"}, [1, 0]]),
        _node("v", "aten::view.default", [{"ref": "p"}, [-1]]),
    ]
    doc["outputs"] = [{"name": "v", "dtype": "float32", "shape": ["4*batch"]}]
    return doc


def test_view_copies_when_strides_allow_none_and_nothing_writes(tmp_path, doc, np_registry):
    prog = load(write(tmp_path / "g.nbx", _permute_view_doc(doc)), registry=np_registry)
    v = prog(X)
    assert v.shape == (8,) and v.is_contiguous()
    if numeric():  # the copy is a kernel, which the aot backend compiles without running
        np.testing.assert_array_equal(v.numpy(), X.T.reshape(-1))


def test_view_stays_strict_in_a_graph_that_writes_in_place(tmp_path, doc, np_registry):
    doc = _permute_view_doc(doc)
    doc["nodes"].append(_node("x1", "aten::add_.Tensor", [{"ref": "x"}, 1.0]))
    prog = load(write(tmp_path / "g.nbx", doc), registry=np_registry)
    with pytest.raises(NbxValueError, match="node 1 'v'.*view: size .* is not compatible"):
        prog(X.copy())


def test_view_of_a_wrong_size_is_still_an_error(tmp_path, doc, np_registry):
    doc = _permute_view_doc(doc)
    doc["nodes"][1]["args"][1] = [3, -1]
    doc["outputs"][0]["shape"] = [3, "4*batch"]
    prog = load(write(tmp_path / "g.nbx", doc), registry=np_registry)
    with pytest.raises(NbxValueError, match=r"aten::view: shape \(3, -1\) is invalid for input of size 8"):
        prog(X)


def test_view_copies_when_in_place_writes_touch_other_memory(tmp_path, doc, np_registry):
    doc = _permute_view_doc(doc)
    doc["nodes"] += [
        _node("m", "aten::mul.Tensor", [{"ref": "x"}, 2.0]),
        _node("m1", "aten::add_.Tensor", [{"ref": "m"}, 1.0]),
    ]
    doc["outputs"].append({"name": "m1", "dtype": "float32", "shape": ["batch", 4]})
    prog = load(write(tmp_path / "g.nbx", doc), registry=np_registry)
    v, m1 = prog(X)
    assert v.shape == (8,) and v.is_contiguous()
    if numeric():
        np.testing.assert_array_equal(v.numpy(), X.T.reshape(-1))
    np.testing.assert_array_equal(m1.numpy(), X * 2 + 1)


def test_copyable_views_follow_aliases_through_view_ops(tmp_path, doc):
    from nbx_core.graph import read_graph
    from nbx_core.graph.runner import copyable_views

    doc = _permute_view_doc(doc)
    doc["nodes"].append(_node("u", "aten::unsqueeze.default", [{"ref": "v"}, 0]))
    path = write(tmp_path / "g.nbx", doc)
    assert copyable_views(read_graph(path)) == {1}
    doc["nodes"].append(_node("u1", "aten::mul_.Tensor", [{"ref": "u"}, 3.0]))  # writes v's memory
    assert copyable_views(read_graph(write(tmp_path / "h.nbx", doc))) == set()
