"""Reading and validating a graph directory.

The whole file is checked before anything runs: schema and version, every name defined before
use, the arity of ops whose result count is fixed, declared shapes and dtypes, and that
weights.safetensors holds every weight with its declared shape and dtype. Each problem is a
:class:`~nbx_core.errors.GraphError` subclass naming the file, the node (or input, weight) and
what would fix it.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from .. import dtypes as D
from .. import opnames
from ..errors import (
    GraphArityError,
    GraphFormatError,
    GraphReferenceError,
    GraphVersionError,
    GraphWeightsError,
    InvalidOpNameError,
    NbxTypeError,
)
from . import symbolic
from .format import (
    FORMAT,
    GRAPH_FILE,
    MUTATION_KINDS,
    NBX_DTYPES,
    RELATIONS,
    VERSION,
    WEIGHT_KINDS,
    WEIGHTS_FILE,
    ConstantInput,
    DeviceArg,
    Graph,
    Guard,
    Mutation,
    Node,
    Ref,
    Sym,
    SymbolSpec,
    TensorSpec,
    WeightSpec,
    current_path,
)

# Ops whose ATen schema returns a fixed number of results: a node declaring another count is
# caught here; every other op's count is checked when its kernel returns.
ARITY: dict[str, int] = {
    "aten::native_layer_norm": 3,
    "aten::native_group_norm": 3,
    "aten::native_batch_norm": 3,
    "aten::_native_batch_norm_legit": 3,
    "aten::_native_batch_norm_legit_no_training": 3,
    "aten::native_dropout": 2,
    "aten::max_pool2d_with_indices": 2,
    "aten::max_pool3d_with_indices": 2,
    "aten::sort": 2,
    "aten::topk": 2,
    "aten::_scaled_dot_product_flash_attention_for_cpu": 2,
    "aten::var_mean": 2,
    "aten::std_mean": 2,
    "aten::aminmax": 2,
}
_ARITY_OVERLOADS: dict[str, int] = {"aten::max.dim": 2, "aten::min.dim": 2}

_FLOATS = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}

# graph.json nests about 8 levels deep (document, nodes, node, args, list, tagged value, ...).
# Deeper documents are refused before the JSON parser or the validator recurse into them.
MAX_NESTING = 64
_TOP_LEVEL = (
    "format",
    "version",
    "producer",
    "symbols",
    "inputs",
    "constant_inputs",
    "weights",
    "nodes",
    "outputs",
    "mutations",
    "guards",
)


def _fail(cls: type[Exception], where: str, message: str) -> Exception:
    return cls(f"{where}: {message}")


def _get(obj: Any, key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if not isinstance(obj, dict):
        raise _fail(GraphFormatError, where, f"expected a JSON object, got {type(obj).__name__}")
    if key not in obj:
        raise _fail(GraphFormatError, where, f"missing key {key!r}")
    value = obj[key]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise _fail(GraphFormatError, where, f"{key!r} must be a JSON {names}, got {_show(value)}")
    return value


def _dtype(name: Any, where: str) -> str:
    if not isinstance(name, str):
        raise _fail(GraphFormatError, where, f"a dtype is named by a string, got {_show(name)}")
    try:
        return D.from_name(name).name
    except NbxTypeError as exc:
        raise _fail(GraphFormatError, where, str(exc)) from None


def _size(value: Any) -> bool:
    """Whether ``value`` is a literal size: an int in 0..2**62."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= symbolic.LIMIT


def _shape(raw: Any, where: str, symbols: Mapping[str, SymbolSpec] | None) -> tuple[int | symbolic.Expr, ...]:
    """A declared shape; ``symbols`` None allows ints only (weights)."""
    kinds = "ints in 0..2**62" if symbols is None else "ints in 0..2**62 and symbolic expressions"
    if not isinstance(raw, list):
        raise _fail(GraphFormatError, where, f"shape must be a list of {kinds}, got {_show(raw)}")
    dims: list[int | symbolic.Expr] = []
    for axis, dim in enumerate(raw):
        if _size(dim):
            dims.append(dim)
            continue
        if symbols is None or not isinstance(dim, str):
            raise _fail(GraphFormatError, where, f"shape {_show(raw)}: dim {axis} is {_show(dim)}, not one of {kinds}")
        expr = symbolic.parse(dim, f"{where}: dim {axis}")
        unknown = sorted(expr.symbols - symbols.keys())
        if unknown:
            raise _fail(
                GraphFormatError,
                where,
                f'shape {_show(raw)} uses undeclared symbols {unknown}: declare them under "symbols"',
            )
        dims.append(expr)
    return tuple(dims)


def _show(value: Any) -> str:
    """``repr`` cut to a readable length: hostile documents hold megabyte values."""
    text = repr(value)
    return text if len(text) <= 120 else f"{text[:100]}... ({len(text)} characters)"


class _Decoder:
    """Decodes node arguments, checking each reference against the values defined so far."""

    def __init__(
        self, file: Path, defined: dict[str, str], later: Mapping[str, int], symbols: Mapping[str, SymbolSpec]
    ) -> None:
        self.file, self.defined, self.later, self.symbols = file, defined, later, symbols

    def value(self, obj: Any, where: str, depth: int = 0) -> Any:
        if obj is None or isinstance(obj, bool | int | float | str):
            return obj
        if depth >= MAX_NESTING:
            raise _fail(GraphFormatError, where, f"argument nested deeper than {MAX_NESTING} levels")
        if isinstance(obj, list):
            return [self.value(v, where, depth + 1) for v in obj]
        if not isinstance(obj, dict) or len(obj) != 1:
            raise _fail(
                GraphFormatError,
                where,
                f"argument {_show(obj)} is not a value of the format "
                "(null, bool, number, string, list, or one of {ref|sym|dtype|device|layout|"
                "memory_format|float|complex: ...})",
            )
        ((tag, body),) = obj.items()
        if tag == "ref":
            return self.reference(body, where)
        if tag == "sym":
            expr = symbolic.parse(body, where)
            unknown = sorted(expr.symbols - self.symbols.keys())
            if unknown:
                raise _fail(GraphFormatError, where, f"symbolic int {_show(body)} uses undeclared symbols {unknown}")
            for name in sorted(expr.symbols):
                source = self.symbols[name].source
                if source is not None and not _node_output(self.defined, source):
                    raise _fail(
                        GraphReferenceError,
                        where,
                        f"symbolic int {_show(body)} uses {name}, which the result {source!r} binds: no earlier "
                        "node returns that result; nodes must be in execution order",
                    )
            return Sym(expr)
        if tag == "dtype":
            return D.from_name(_dtype(body, where))
        if tag == "device" and isinstance(body, str):
            return DeviceArg(body)
        if tag in ("layout", "memory_format") and isinstance(body, str):
            return body  # kernels read these by name ("strided", "contiguous_format")
        if tag == "float" and isinstance(body, str) and body in _FLOATS:
            return _FLOATS[body]
        if tag == "complex" and isinstance(body, list) and len(body) == 2:
            parts = [self.value(v, where, depth + 1) for v in body]
            if all(isinstance(p, int | float) and not isinstance(p, bool) for p in parts):
                return complex(*parts)
        raise _fail(GraphFormatError, where, f"argument {_show(obj)} has an unknown tag or a malformed body")

    def reference(self, name: Any, where: str) -> Ref:
        if not isinstance(name, str):
            raise _fail(GraphFormatError, where, f"a ref names a value by string, got {_show(name)}")
        if name not in self.defined:
            if name in self.later:
                hint = f"it is defined later, by node {self.later[name]}: nodes must be in execution order"
            else:
                hint = "no input, weight or earlier node output has that name"
            raise _fail(GraphReferenceError, where, f"refers to undefined value {_show(name)}; {hint}")
        return Ref(name)


_NODE_OUTPUT = "an output of node"
"""How ``defined`` describes a node's result."""


def _node_output(defined: Mapping[str, str], name: str) -> bool:
    """Whether ``name`` is defined as a node's result (not an input or a weight)."""
    return defined.get(name, "").startswith(_NODE_OUTPUT)


def _define(defined: dict[str, str], name: Any, what: str, where: str) -> str:
    if not isinstance(name, str) or not name:
        raise _fail(GraphFormatError, where, f"a value name must be a non-empty string, got {_show(name)}")
    if name in defined:
        raise _fail(
            GraphFormatError,
            where,
            f"value {name!r} is defined twice (first as {defined[name]}); every value name must be unique",
        )
    defined[name] = what
    return name


def _symbols(raw: Any, file: Path) -> dict[str, SymbolSpec]:
    if not isinstance(raw, dict):
        raise _fail(GraphFormatError, f"{file}: symbols", "must be an object of name -> {min, max, example[, from]}")
    symbols = {}
    for name, spec in raw.items():
        where = f"{file}: symbol {_show(name)}"
        if not isinstance(name, str) or not name.isidentifier():
            raise _fail(GraphFormatError, where, "a symbol name must be an identifier")
        if not isinstance(spec, dict):
            raise _fail(GraphFormatError, where, "must be an object {min, max, example}")
        bounds = {k: spec.get(k) for k in ("min", "max", "example")}
        for key, value in bounds.items():
            if value is not None and not _size(value):
                raise _fail(GraphFormatError, where, f"{key} must be an int in 0..2**62 or null, got {_show(value)}")
        low = bounds["min"] or 0
        if bounds["max"] is not None and bounds["max"] < low:
            raise _fail(GraphFormatError, where, f"max {bounds['max']} is below min {low}")
        source, dim = None, None
        if "from" in spec:
            origin = spec["from"]
            if (
                not isinstance(origin, dict)
                or not isinstance(origin.get("value"), str)
                or not (origin.get("dim") is None or _size(origin["dim"]))
            ):
                raise _fail(
                    GraphFormatError,
                    where,
                    f'"from" must be {{"value": a node result\'s name, "dim": a dim or null}}, got {_show(origin)}',
                )
            source, dim = origin["value"], origin.get("dim")
        symbols[name] = SymbolSpec(name, low, bounds["max"], bounds["example"], source, dim)
    return symbols


def _tensor_specs(raw: Any, key: str, file: Path, symbols: Mapping[str, SymbolSpec]) -> list[tuple[str, Any, Any]]:
    out = []
    for i, spec in enumerate(raw):
        where = f"{file}: {key}[{i}]"
        name = _get(spec, "name", str, where)
        where = f"{file}: {key[:-1]} {_show(name)}"
        out.append(
            (
                name,
                _dtype(_get(spec, "dtype", str, where), where),
                _shape(_get(spec, "shape", list, where), where, symbols),
            )
        )
    return out


_OUTPUT_FORMATS = {"contiguous_format": None, "channels_last": 4, "channels_last_3d": 5}


def _memory_format(spec: Mapping[str, Any], rank: int, where: str) -> str:
    """An output's optional ``memory_format``: one of :data:`_OUTPUT_FORMATS`, for its rank."""
    fmt = spec.get("memory_format", "contiguous_format")
    if fmt not in _OUTPUT_FORMATS:
        raise _fail(GraphFormatError, where, f"memory_format {_show(fmt)} is not one of {', '.join(_OUTPUT_FORMATS)}")
    if _OUTPUT_FORMATS[fmt] not in (None, rank):
        raise _fail(
            GraphFormatError,
            where,
            f"memory_format {fmt!r} needs a rank-{_OUTPUT_FORMATS[fmt]} output, this one has rank {rank}",
        )
    return fmt


def parse_document(doc: Any, path: Path) -> Graph:
    """Validate a parsed graph.json (``path`` is the graph directory, named in errors)."""
    file = path / GRAPH_FILE
    if not isinstance(doc, dict):
        raise _fail(GraphFormatError, str(file), f"expected a JSON object, got {type(doc).__name__}")
    if doc.get("format") != FORMAT:
        raise _fail(
            GraphVersionError,
            str(file),
            f"format is {_show(doc.get('format'))}, not {FORMAT!r}: this is not an NBX graph",
        )
    version = doc.get("version")
    if version != VERSION or isinstance(version, bool | float):
        raise _fail(
            GraphVersionError,
            str(file),
            f"schema version {_show(version)} is not supported: this NBX "
            f"reads version {VERSION}; re-export the graph with this NBX, or upgrade nbx-core",
        )
    unknown = [key for key in doc if key not in _TOP_LEVEL]
    if unknown:
        raise _fail(
            GraphFormatError,
            str(file),
            f"unknown keys {_show(unknown)}: a version {VERSION} graph holds {', '.join(_TOP_LEVEL)}",
        )
    producer = doc.get("producer", {})
    if not isinstance(producer, dict) or not all(
        isinstance(k, str) and (v is None or isinstance(v, bool | int | float | str)) for k, v in producer.items()
    ):
        raise _fail(
            GraphFormatError,
            f"{file}: producer",
            f"must be an object of names to strings or numbers, got {_show(producer)}",
        )
    symbols = _symbols(doc.get("symbols", {}), file)
    defined: dict[str, str] = {}
    inputs = []
    for name, dtype, shape in _tensor_specs(_get(doc, "inputs", list, str(file)), "inputs", file, symbols):
        inputs.append(TensorSpec(_define(defined, name, "an input", f"{file}: input {name!r}"), dtype, shape))
        _no_data_symbols(shape, symbols, f"{file}: input {name!r}", "an input's dims")
    weights = []
    for i, spec in enumerate(_get(doc, "weights", list, str(file))):
        where = f"{file}: weights[{i}]"
        name = _define(defined, _get(spec, "name", str, where), "a weight", where)
        where = f"{file}: weight {name!r}"
        kind = _get(spec, "kind", str, where)
        if kind not in WEIGHT_KINDS:
            raise _fail(GraphFormatError, where, f"kind {kind!r} is not one of {', '.join(WEIGHT_KINDS)}")
        shape = _shape(_get(spec, "shape", list, where), where, None)
        key, dtype = _get(spec, "key", str, where), _dtype(_get(spec, "dtype", str, where), where)
        weights.append(WeightSpec(name, key, kind, dtype, shape))  # type: ignore[arg-type]

    raw_nodes = _get(doc, "nodes", list, str(file))
    later: dict[str, int] = {}
    for i, raw in enumerate(raw_nodes):
        for out in raw.get("outputs", []) if isinstance(raw, dict) and isinstance(raw.get("outputs"), list) else []:
            if isinstance(out, str):
                later.setdefault(out, i)
    decoder = _Decoder(file, defined, later, symbols)
    nodes = []
    for i, raw in enumerate(raw_nodes):
        name = _get(raw, "name", str, f"{file}: node {i}")
        op = _get(raw, "op", str, f"{file}: node {i} {_show(name)}")
        where = f"{file}: node {i} {_show(name)} ({op if len(op) <= 120 else op[:100] + '...'})"
        try:
            opnames.split_op_name(op, where)
        except InvalidOpNameError as exc:
            raise GraphFormatError(str(exc)) from None
        args = tuple(decoder.value(a, f"{where}: arg {j}") for j, a in enumerate(_get(raw, "args", list, where)))
        raw_kwargs = _get(raw, "kwargs", dict, where)
        kwargs = {}
        for key, value in raw_kwargs.items():
            if not isinstance(key, str) or not key.isidentifier():
                raise _fail(GraphFormatError, where, f"kwarg name {_show(key)} is not an identifier")
            kwargs[key] = decoder.value(value, f"{where}: kwarg {key!r}")
        outputs = _get(raw, "outputs", list, where)
        expected = _ARITY_OVERLOADS.get(op, ARITY.get(opnames.base_name(op)))
        if expected is not None and len(outputs) != expected:
            raise _fail(
                GraphArityError,
                where,
                f"declares {len(outputs)} outputs but {op} returns {expected}; list one name (or null) per result",
            )
        if not outputs:
            raise _fail(GraphArityError, where, "declares no outputs: list one name (or null) per result")
        names = tuple(None if o is None else _define(defined, o, f"{_NODE_OUTPUT} {i}", where) for o in outputs)
        nodes.append(Node(i, name, op, args, kwargs, names))

    outputs = []
    raw_outputs = _get(doc, "outputs", list, str(file))
    for raw, (name, dtype, shape) in zip(
        raw_outputs, _tensor_specs(raw_outputs, "outputs", file, symbols), strict=True
    ):
        decoder.reference(name, f"{file}: output {name!r}")
        outputs.append(TensorSpec(name, dtype, shape, _memory_format(raw, len(shape), f"{file}: output {name!r}")))
    mutations = []
    buffers = {w.key for w in weights if w.kind == "buffer"}
    input_names = {s.name for s in inputs}
    for i, raw in enumerate(_get(doc, "mutations", list, str(file)) if "mutations" in doc else []):
        where = f"{file}: mutations[{i}]"
        value = decoder.reference(_get(raw, "value", str, where), where).name
        kind, target = _get(raw, "kind", str, where), _get(raw, "target", str, where)
        if kind not in MUTATION_KINDS:
            raise _fail(GraphFormatError, where, f"kind {kind!r} is not one of {', '.join(MUTATION_KINDS)}")
        if target not in (buffers if kind == "buffer" else input_names):
            raise _fail(GraphReferenceError, where, f"target {target!r} is not a {kind.replace('_', ' ')} of the graph")
        mutations.append(Mutation(value, kind, target))
    for symbol in symbols.values():
        if symbol.source is not None and not _node_output(defined, symbol.source):
            raise _fail(
                GraphReferenceError,
                f"{file}: symbol {symbol.name!r}",
                f"is bound by {symbol.source!r}, which no node returns (it is "
                f"{defined.get(symbol.source, 'not defined')}); name a node's result",
            )
    constants = _constant_inputs(doc, file, input_names)
    guards = _guards(doc, file, symbols)
    parts = (tuple(inputs), tuple(weights), tuple(nodes), tuple(outputs), tuple(mutations))
    return Graph(path, symbols, *parts, doc, constants, guards)


def _no_data_symbols(shape: Any, symbols: Mapping[str, SymbolSpec], where: str, what: str) -> None:
    """Refuse symbols a node's result binds where only the inputs bind sizes (before any node runs)."""
    for dim in shape:
        for name in sorted(dim.symbols if isinstance(dim, symbolic.Expr) else ()):
            if symbols[name].source is not None:
                raise _fail(
                    GraphFormatError,
                    where,
                    f"uses {name}, a size read from data by {symbols[name].source!r}: {what} can use only the "
                    "symbols input dims bind",
                )


def _guards(doc: Mapping[str, Any], file: Path, symbols: Mapping[str, SymbolSpec]) -> tuple[Guard, ...]:
    """The optional "guards": conditions on sizes (input dims, and sizes read from data), each
    {"left", "op", "right"}."""
    found = []
    for i, raw in enumerate(_get(doc, "guards", list, str(file)) if "guards" in doc else []):
        where = f"{file}: guards[{i}]"
        op = _get(raw, "op", str, where)
        if op not in RELATIONS:
            raise _fail(GraphFormatError, where, f"op {_show(op)} is not one of {' '.join(RELATIONS)}")
        sides = []
        for key in ("left", "right"):
            value = raw.get(key)
            literal = isinstance(value, int) and not isinstance(value, bool) and abs(value) <= symbolic.LIMIT
            text = str(value) if literal else value
            expr = symbolic.parse(text, f"{where} {key}")
            unknown = sorted(expr.symbols - symbols.keys())
            if unknown:
                declare = f'uses undeclared symbols {unknown}: declare them under "symbols"'
                raise _fail(GraphFormatError, f"{where} {key}", declare)
            sides.append(expr)
        found.append(Guard(sides[0], op, sides[1]))
    return tuple(found)


def _constant_inputs(doc: Mapping[str, Any], file: Path, input_names: set[str]) -> tuple[ConstantInput, ...]:
    """The optional "constant_inputs": arguments of the exported call whose values the graph holds."""
    found: list[ConstantInput] = []
    raw_list = _get(doc, "constant_inputs", list, str(file)) if "constant_inputs" in doc else []
    total = len(input_names) + len(raw_list)
    for i, raw in enumerate(raw_list):
        where = f"{file}: constant_inputs[{i}]"
        name, index = _get(raw, "name", str, where), _get(raw, "index", int, where)
        if "value" not in raw:
            raise _fail(GraphFormatError, where, "missing key 'value' (null for an argument that was None)")
        value = raw["value"]
        if not name.isidentifier() or name in input_names or any(c.name == name for c in found):
            raise _fail(GraphFormatError, where, f"name {name!r} must be an identifier no other input has")
        if not 0 <= index < total or any(c.index == index for c in found):
            raise _fail(GraphFormatError, where, f"index {_show(index)} must be a free place in 0..{total - 1}")
        if not (value is None or isinstance(value, bool | int | float | str)):
            raise _fail(GraphFormatError, where, f"value {_show(value)} must be null, a boolean, a number or a string")
        found.append(ConstantInput(name, index, value))
    return tuple(found)


def read_graph(path: str | Path) -> Graph:
    """Read and validate ``path``/graph.json (weights are checked by :func:`load_weights`).

    When a save was killed after moving the old graph aside, ``path`` is absent and the old graph
    is read from its backup (:func:`~nbx_core.graph.format.current_path`).
    """
    path = current_path(Path(path))
    if not (path / GRAPH_FILE).is_file():  # not a directory, or a directory that holds no graph
        raise GraphFormatError(
            f"{path}: not a graph directory (expected {path}/{GRAPH_FILE} and {path}/{WEIGHTS_FILE})"
        )
    return parse_document(read_json(path / GRAPH_FILE), path)


def read_json(file: Path) -> Any:
    """Parse ``file`` as JSON, refusing what the parsers would recurse on without bound."""
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise GraphFormatError(f"{file}: cannot read it: {exc}") from None
    depth = _nesting(text)
    if depth > MAX_NESTING:
        raise GraphFormatError(
            f"{file}: nested {depth} levels deep; a graph nests at most {MAX_NESTING} levels: this "
            "is not an NBX graph, or a damaged one: re-export the graph"
        )
    try:
        return json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)
    except (json.JSONDecodeError, ValueError, RecursionError) as exc:
        raise GraphFormatError(f"{file}: not valid JSON: {exc}; re-export the graph") from None


def is_graph_file(file: Path) -> bool:
    """Whether ``file`` is JSON that declares the nbx-graph format (valid or not otherwise)."""
    try:
        doc = read_json(file)
    except GraphFormatError:
        return False
    return isinstance(doc, dict) and doc.get("format") == FORMAT


_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


def _nesting(text: str) -> int:
    """The deepest nesting of arrays and objects in JSON ``text`` (brackets inside strings skipped)."""
    brackets = np.frombuffer(_NOT_BRACKET.sub("", _STRING.sub("", text)).encode(), np.uint8)
    opens = (brackets == ord("[")) | (brackets == ord("{"))
    return int(np.cumsum(np.where(opens, 1, -1)).max(initial=0))


def _reject_constant(name: str) -> None:
    raise ValueError(f'{name} is not JSON (non-finite floats are written {{"float": "inf"}})')


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f'{text} is beyond float64 (non-finite floats are written {{"float": "inf"}})')
    return value


def _first_user(graph: Graph, value: str) -> str:
    for node in graph.nodes:
        if value in node.reads():
            return f"first used by node {node.index} {node.name!r} ({node.op})"
    return "used by no node"


def check_weights(graph: Graph, found: Mapping[str, tuple[str, tuple[int, ...]]], source: str) -> None:
    """Check that ``found`` (key -> (dtype name, shape)) holds every weight as declared."""
    for weight in graph.weights:
        where = f"{source}: weight {weight.name!r} (key {weight.key!r}, {_first_user(graph, weight.name)})"
        if weight.key not in found:
            raise GraphWeightsError(
                f"{where}: missing; re-export the graph (weights.safetensors and graph.json "
                "must come from the same export)"
            )
        dtype, shape = found[weight.key]
        if dtype != weight.dtype or tuple(shape) != weight.shape:
            raise GraphWeightsError(
                f"{where}: holds {dtype} {list(shape)} but graph.json declares "
                f"{weight.dtype} {list(weight.shape)}; re-export the graph"
            )


def load_weights(graph: Graph) -> dict[str, np.ndarray]:
    """Read weights.safetensors, check it against the graph, and return key -> host array."""
    import safetensors

    file = graph.path / WEIGHTS_FILE
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise GraphWeightsError(f"{file}: cannot read it: {exc}") from None
    try:
        entries = safetensors.deserialize(data)
    except Exception as exc:  # SafetensorError, or whatever a truncated header provokes
        raise GraphWeightsError(f"{file}: corrupt safetensors file ({exc}); re-export the graph") from None
    found: dict[str, tuple[str, tuple[int, ...]]] = {}
    raw: dict[str, Any] = {}
    for key, entry in entries:
        code = entry["dtype"]
        found[key] = (NBX_DTYPES.get(code, code), tuple(entry["shape"]))
        raw[key] = entry["data"]
    check_weights(graph, found, str(file))
    arrays = {}
    for weight in graph.weights:
        if weight.key not in arrays:  # weights may share a key (tied parameters)
            # bytearray: frombuffer gives a writable array, which buffer mutations need.
            arrays[weight.key] = np.frombuffer(raw[weight.key], D.from_name(weight.dtype).np).reshape(weight.shape)
    return arrays
