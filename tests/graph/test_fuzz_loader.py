"""Fuzzing the loader: malformed graph.json documents, safetensors headers and symbolic expressions.

The only outcomes allowed are a successful load (or value) and an NbxError subclass, each within
:data:`SECONDS` and :data:`MEGABYTES` (Python allocations, by tracemalloc) per example. Documents
are mutated from real ones (the test graph and the committed example), so the fuzz reaches the
checks behind the first. Example counts are set here, not by the hypothesis profile, and the
runs are derandomized: CI runs the same 1,200 examples every time.
"""

from __future__ import annotations

import copy
import json
import signal
import struct
import tempfile
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nbx_core.errors import GraphSymbolError, NbxError
from nbx_core.graph import read_graph
from nbx_core.graph.runner import Program
from nbx_core.graph.symbolic import LIMIT, parse
from nbx_core.graph.validate import load_weights
from nbx_core.registry import get_registry

from .conftest import base_doc, base_weights, write

SECONDS = 5.0
MEGABYTES = 64
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "encoder_block.nbx"


def fuzz(examples: int) -> settings:
    """Settings of a fuzz test: its own example count, whatever the profile, and reproducible."""
    return settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        database=None,
        print_blob=False,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


class _TooSlow(Exception):
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise _TooSlow("an example ran too long")


@contextmanager
def bounded(seconds: float = SECONDS) -> Iterator[None]:
    """Fail unless the body ends within ``seconds`` and MEGABYTES, by returning or raising an NbxError."""
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    tracemalloc.start()
    try:
        yield
    except NbxError:
        pass
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert peak < MEGABYTES << 20, f"peak Python allocation {peak >> 20} MiB"


# -- mutating JSON -------------------------------------------------------------------------------------

NAMES = ["x", "w", "b", "mul", "add", "relu", "src", "linear", "seq", "batch", "lin.w", "norm1.weight", ""]
WORDS = [
    "nbx-graph",
    "float32",
    "bool",
    "bfloat16",
    "int64",
    "parameter",
    "buffer",
    "constant",
    "user_input",
    "aten::relu.default",
    "aten::view.default",
    "aten::add.Tensor",
    "test::sized_ones.default",
    "::",
    "a::b.c.d",
    "inf",
    "nan",
    "-inf",
    "cpu",
    "strided",
    "F32",
    "I64",
    "BOOL",
    "F8_E4M3",
    "U16",
    "__metadata__",
]
EXPRS = [
    "seq",
    "batch",
    "2*seq",
    "seq**seq**seq**seq",
    "-" * 5000 + "seq",
    "seq//(seq-seq)",
    "seq**-1",
    "max(seq)",
    "(" * 70 + "seq" + ")" * 70,
    "seq % 0",
    "2**62 + 1",
    "seq*" * 900 + "seq",
    "seq\n",
    "1_000",
    "nope",
]
INTS = [0, 1, -1, 2, 3, 8, 2**31, 2**53 + 1, 2**62, 2**62 + 1, 2**63, 2**64, -(2**63), 10**30]

leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.sampled_from(INTS),
    st.integers(-100, 100),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
    st.sampled_from(NAMES + WORDS + EXPRS),
    st.builds(
        lambda tag, body: {tag: body},
        st.sampled_from(["ref", "sym", "dtype", "device", "layout", "memory_format", "float", "complex"]),
        st.one_of(st.sampled_from(NAMES + WORDS + EXPRS), st.sampled_from(INTS), st.lists(st.integers(), max_size=3)),
    ),
)
values = st.recursive(
    leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(NAMES + WORDS), inner, max_size=4)
    ),
    max_leaves=12,
)


def _slots(doc: Any) -> list[tuple[Any, Any]]:
    """Every (container, key or index) in ``doc``, the root's children last (hypothesis draws small
    indices most, and the root's first keys, format and version, are the checks fuzzed least)."""
    slots, stack = [], [doc]
    while stack:
        node = stack.pop()
        keys = list(node) if isinstance(node, dict) else range(len(node)) if isinstance(node, list) else []
        for key in keys:
            slots.append((node, key))
            stack.append(node[key])
    return slots[::-1]


def mutate(doc: Any, data: st.DataObject) -> Any:
    """``doc`` with one to four random edits: a value replaced, removed, wrapped, duplicated or renamed."""
    doc = copy.deepcopy(doc)
    for _ in range(data.draw(st.integers(1, 4), label="edits")):
        slots = _slots(doc)
        if not slots:
            return data.draw(values)
        container, key = slots[data.draw(st.integers(0, len(slots) - 1), label="slot")]
        edit = data.draw(st.sampled_from(["replace", "replace", "remove", "wrap", "duplicate", "rename"]), label="edit")
        if edit == "replace":
            container[key] = data.draw(values, label="value")
        elif edit == "remove":
            del container[key]
        elif edit == "wrap":
            container[key] = data.draw(
                st.sampled_from(
                    [[container[key]], {"ref": container[key]}, {"sym": container[key]}, str(container[key])]
                )
            )
        elif edit == "duplicate" and isinstance(container, list):
            container.insert(key, copy.deepcopy(container[key]))
        elif edit == "rename" and isinstance(container, dict):
            container[data.draw(st.sampled_from(NAMES + WORDS))] = container.pop(key)
    return doc


def damage(text: bytes, data: st.DataObject) -> bytes:
    """``text`` as written, or truncated, with a byte changed, or with a deep nest inserted."""
    how = data.draw(st.sampled_from(["none", "none", "none", "truncate", "byte", "nest"]), label="damage")
    if how == "none" or not text:
        return text
    at = data.draw(st.integers(0, len(text) - 1), label="at")
    if how == "truncate":
        return text[:at]
    if how == "byte":
        return text[:at] + bytes([data.draw(st.integers(0, 255))]) + text[at + 1 :]
    depth = data.draw(st.sampled_from([63, 64, 65, 900, 100_000]), label="depth")
    return text[:at] + b"[" * depth + b"]" * depth + text[at:]


def _dump(doc: Any) -> bytes:
    try:
        return json.dumps(doc).encode()
    except ValueError:  # an int past Python's 4300-digit conversion limit
        return b"{}"


# -- the documents -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sources() -> Iterator[dict[str, Any]]:
    """The two real graphs (document, weights file bytes, registry) and a scratch directory."""
    from nbx_core.ops import plugin as core_plugin
    from nbx_core.registry import Registry

    from . import np_kernels

    with tempfile.TemporaryDirectory() as tmp:
        registry = Registry()
        registry.add_plugin("core", core_plugin)
        registry.add_plugin("nptest", np_kernels)
        small = write(Path(tmp) / "small.nbx", base_doc(), base_weights())
        example = json.loads((EXAMPLE / "graph.json").read_text())
        Program(read_graph(EXAMPLE), load_weights(read_graph(EXAMPLE)), device="cpu")  # imports every kernel now
        yield {
            "small": (base_doc(), (small / "weights.safetensors").read_bytes(), registry),
            "example": (example, (EXAMPLE / "weights.safetensors").read_bytes(), get_registry()),
            "scratch": Path(tmp) / "fuzz.nbx",
        }


def _load(path: Path, registry: Any) -> None:
    graph = read_graph(path)
    weights = load_weights(graph)
    for spec in graph.weights:  # what loaded is what was declared
        assert weights[spec.key].shape == spec.shape and weights[spec.key].dtype.itemsize > 0
    Program(graph, weights, device="cpu", registry=registry)


@fuzz(450)
@given(data=st.data())
def test_fuzzed_graph_json_loads_or_raises_an_nbx_error(sources, data):
    doc, weights, registry = sources[data.draw(st.sampled_from(["small", "example"]), label="source")]
    path = sources["scratch"]
    path.mkdir(exist_ok=True)
    (path / "graph.json").write_bytes(damage(_dump(mutate(doc, data)), data))
    (path / "weights.safetensors").write_bytes(weights)
    with bounded():
        _load(path, registry)


def _header(blob: bytes) -> tuple[Any, bytes]:
    (length,) = struct.unpack("<Q", blob[:8])
    return json.loads(blob[8 : 8 + length]), blob[8 + length :]


CODES = [
    "BOOL",
    "U8",
    "I8",
    "I16",
    "I32",
    "I64",
    "F16",
    "BF16",
    "F32",
    "F64",
    "C64",
    "F8_E4M3",
    "F8_E5M2",
    "U16",
    "F8_E8M0",
    "F4",
]


def edit_entry(header: dict[str, Any], data: st.DataObject) -> dict[str, Any]:
    """A safetensors header with one tensor entry plausibly wrong: its dtype, shape, offsets or key,
    or its bytes reinterpreted (a header safetensors accepts, with the weight NBX declared changed)."""
    keys = sorted(k for k in header if k != "__metadata__")
    key = keys[data.draw(st.integers(0, len(keys) - 1), label="tensor")]
    entry = header[key]
    start, end = entry["data_offsets"]
    field = data.draw(st.sampled_from(["dtype", "shape", "data_offsets", "key", "bytes"]), label="field")
    if field == "dtype":
        entry["dtype"] = data.draw(st.sampled_from(CODES))
    elif field == "shape":
        entry["shape"] = data.draw(st.lists(st.sampled_from([0, 1, 2, 3, 4, 32, 2**31, 2**62, 2**64 - 1]), max_size=4))
    elif field == "data_offsets":
        entry["data_offsets"] = [start + data.draw(st.integers(-8, 8)), end + data.draw(st.integers(-8, 8))]
    elif field == "key":
        header[data.draw(st.sampled_from(NAMES + WORDS))] = header.pop(key)
    else:
        entry.update(dtype="U8", shape=[end - start])
    return header


@fuzz(350)
@given(data=st.data())
def test_fuzzed_safetensors_header_loads_or_raises_an_nbx_error(sources, data):
    doc, weights, registry = sources[data.draw(st.sampled_from(["small", "example"]), label="source")]
    header, body = _header(weights)
    how = data.draw(st.sampled_from(["plausible", "plausible", "json", "bytes"]), label="how")
    encoded = _dump(edit_entry(header, data) if how == "plausible" else mutate(header, data))
    length = len(encoded)
    if how == "bytes":
        encoded = damage(encoded, data)
        length = data.draw(st.sampled_from([0, 1, 7, len(encoded), len(encoded) + 1, 2**32, 2**63]), label="length")
        body = body[: data.draw(st.integers(0, len(body)), label="body")]
    path = sources["scratch"]
    path.mkdir(exist_ok=True)
    (path / "graph.json").write_text(json.dumps(doc))
    (path / "weights.safetensors").write_bytes(struct.pack("<Q", length) + encoded + body)
    with bounded():
        _load(path, registry)


TOKENS = [
    "seq",
    "batch",
    "n",
    "0",
    "1",
    "2",
    "7",
    "62",
    "63",
    "64",
    "65",
    "4611686018427387904",
    "+",
    "-",
    "*",
    "//",
    "%",
    "**",
    "(",
    ")",
    ",",
    "max(",
    "min(",
    " ",
    "\t",
    "/",
    ".",
    "e",
    "_",
    "if",
    "None",
    "é",
    "\n",
    "0x1",
]
grammatical = st.recursive(
    st.one_of(st.sampled_from(["seq", "batch", "n"]), st.integers(0, 2**62).map(str), st.integers(0, 9).map(str)),
    lambda inner: st.one_of(
        st.tuples(inner, st.sampled_from([" + ", "-", "*", "//", " % "]), inner).map("".join),
        inner.map(lambda e: f"-{e}"),
        inner.map(lambda e: f"({e})"),
        st.tuples(inner, st.integers(0, 64)).map(lambda p: f"({p[0]})**{p[1]}"),
        st.tuples(st.sampled_from(["max", "min"]), st.lists(inner, min_size=2, max_size=3)).map(
            lambda p: f"{p[0]}({', '.join(p[1])})"
        ),
    ),
    max_leaves=8,
)
expressions = st.one_of(
    grammatical,
    grammatical,
    st.lists(st.sampled_from(TOKENS), max_size=40).map("".join),
    st.text(max_size=40),
    st.sampled_from(EXPRS),
    st.tuples(st.sampled_from(["-", "(", "max(1,", "seq**2*", "seq+"]), st.integers(1, 6000)).map(
        lambda p: p[0] * p[1] + "seq" + (")" * p[1] if "(" in p[0] else "")
    ),
)
sizes = st.one_of(st.integers(0, 70), st.integers(0, 2**62))
dims = st.one_of(
    st.fixed_dictionaries({name: sizes for name in ("seq", "batch", "n")}),
    st.fixed_dictionaries({}, optional={name: sizes for name in ("seq", "batch", "n")}),
)


def _python(text: str, bound: dict[str, int]) -> int:
    return eval(text, {"__builtins__": {}, "max": max, "min": min}, dict(bound))  # noqa: S307


@fuzz(400)
@given(text=expressions, bound=dims)
def test_fuzzed_symbolic_expressions_parse_and_evaluate_or_raise_an_nbx_error(text, bound):
    value: list[int] = []
    with bounded():
        expr = parse(text, "fuzz.nbx/graph.json: node 0 'v' (aten::view.default): arg 1")
        try:
            value.append(expr(bound))
        except GraphSymbolError as exc:
            assert str(exc).startswith("fuzz.nbx/graph.json: node 0 'v' (aten::view.default): arg 1: "), exc
            raise
    if value:  # in range, so Python computes it as cheaply: the grammar means what Python means
        assert type(value[0]) is int and -LIMIT <= value[0] <= LIMIT
        assert value[0] == _python(text, bound)


def test_bounded_catches_a_slow_or_large_example():
    with pytest.raises(_TooSlow):
        with bounded(seconds=0.1):
            while True:
                pass
    with pytest.raises(AssertionError, match="peak Python allocation"):
        with bounded():
            bytearray(MEGABYTES << 20)
    with pytest.raises(ZeroDivisionError):
        with bounded():
            _ = 1 // 0
