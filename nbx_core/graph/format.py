"""The on-disk graph: ``name.nbx/`` = ``graph.json`` + ``weights.safetensors``.

Documented in docs/graph-format.md. This module holds the schema's constants, the in-memory
form the validator produces (:class:`Graph`) and the JSON codec for node arguments; writing a
graph is :mod:`nbx_core.graph.writer`. Nothing here imports torch, and nothing is ever pickled.
"""

from __future__ import annotations

import dataclasses
import math
import operator
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .symbolic import Expr

FORMAT = "nbx-graph"
VERSION = 1
GRAPH_FILE = "graph.json"
WEIGHTS_FILE = "weights.safetensors"
KERNELS_DIR = "kernels"  # the kernel bundle nbx compile adds (nbx_core.graph.bundle)

# NBX dtype name -> safetensors dtype code, and back.
SAFETENSORS_DTYPES: dict[str, str] = {
    "bool": "BOOL",
    "uint8": "U8",
    "int8": "I8",
    "int16": "I16",
    "int32": "I32",
    "int64": "I64",
    "float16": "F16",
    "bfloat16": "BF16",
    "float32": "F32",
    "float64": "F64",
    "complex64": "C64",
    "float8_e4m3fn": "F8_E4M3",
    "float8_e5m2": "F8_E5M2",
}
NBX_DTYPES: dict[str, str] = {code: name for name, code in SAFETENSORS_DTYPES.items()}

WEIGHT_KINDS = ("parameter", "buffer", "constant")
MUTATION_KINDS = ("buffer", "user_input")


# -- argument values ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ref:
    """An argument that names a value: a graph input, a weight or an earlier node's output."""

    name: str


@dataclass(frozen=True)
class Sym:
    """A symbolic int argument, evaluated from the bound input dims at run time."""

    expr: Expr


@dataclass(frozen=True)
class DeviceArg:
    """A device argument (``arange(..., device=cpu)``): the program's run device replaces it."""

    name: str


def ref(name: str) -> dict[str, str]:
    return {"ref": name}


def sym(text: str) -> dict[str, str]:
    return {"sym": text}


def scalar(value: bool | int | float | complex) -> Any:
    """A Python scalar as JSON: non-finite floats and complex numbers are tagged objects."""
    if isinstance(value, complex):
        return {"complex": [scalar(value.real), scalar(value.imag)]}
    if isinstance(value, float) and not math.isfinite(value):
        return {"float": "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")}
    return value


# -- the validated graph -------------------------------------------------------------------------------


@dataclass(frozen=True)
class SymbolSpec:
    """A symbolic dim: its inclusive range (None: unbounded) and the size the export traced with.

    An input dim binds it, or, for a size read from data (nonzero's count, an ``item()``), a node's
    result: ``source`` names that value and ``dim`` its dim (None: the value itself, a scalar).
    """

    name: str
    min: int
    max: int | None
    example: int | None
    source: str | None = None
    dim: int | None = None

    def admits(self, size: int) -> bool:
        """Whether ``size`` lies in the symbol's range."""
        return self.min <= size and (self.max is None or size <= self.max)

    @property
    def range_text(self) -> str:
        return f"{self.min}..{'' if self.max is None else self.max}"


@dataclass(frozen=True)
class TensorSpec:
    """A declared graph input or output: dtype name and shape (ints and symbolic expressions); an
    output also carries the memory format torch gave it (``channels_last``, ``channels_last_3d``,
    else ``contiguous_format``)."""

    name: str
    dtype: str
    shape: tuple[int | Expr, ...]
    memory_format: str = "contiguous_format"


@dataclass(frozen=True)
class WeightSpec:
    """A value stored in weights.safetensors under ``key``."""

    name: str
    key: str
    kind: str
    dtype: str
    shape: tuple[int, ...]


@dataclass(frozen=True)
class Node:
    """One op call. ``outputs`` names the op's results in order (None: a result nobody reads)."""

    index: int
    name: str
    op: str
    args: tuple[Any, ...]
    kwargs: Mapping[str, Any]
    outputs: tuple[str | None, ...]

    def reads(self) -> list[str]:
        """The names of the values this node reads, in argument order (once per reference)."""
        names: list[str] = []
        _collect_refs((self.args, tuple(self.kwargs.values())), names)
        return names

    def where(self, file: str | Path) -> str:
        return f"{file}: node {self.index} {self.name!r} ({self.op})"

    def renamed(self, names: Mapping[str, str], outputs: bool = True) -> Node:
        """This node with the values of ``names`` (old -> new) renamed where it reads them, and
        where it writes them when ``outputs``."""

        def sub(value: Any) -> Any:
            if isinstance(value, Ref):
                return Ref(names.get(value.name, value.name))
            if isinstance(value, list | tuple):
                return type(value)(sub(v) for v in value)
            return value

        return dataclasses.replace(
            self,
            args=sub(self.args),
            kwargs={k: sub(v) for k, v in self.kwargs.items()},
            outputs=tuple(names.get(o, o) if o and outputs else o for o in self.outputs),
        )


def _collect_refs(value: Any, names: list[str]) -> None:
    if isinstance(value, Ref):
        names.append(value.name)
    elif isinstance(value, list | tuple):
        for item in value:
            _collect_refs(item, names)


@dataclass(frozen=True)
class ConstantInput:
    """An argument of the exported call that was not a tensor (None, a number, a string): the graph
    holds its value. ``index`` is its place among all the call's arguments, tensor inputs included,
    in the order torch.export flattened them (positional, then keyword)."""

    name: str
    index: int
    value: None | bool | int | float | str


RELATIONS: dict[str, Callable[[int, int], bool]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}
"""The relations a guard may state between two symbolic ints."""


@dataclass(frozen=True)
class Guard:
    """A condition on sizes that torch.export recorded (``left op right``): the graph is valid only
    where it holds, and a run that breaks it is refused. Over input dims, it is checked when the
    inputs are bound; over a size read from data (a ``torch._check`` on it), when that is bound."""

    left: Expr
    op: str
    right: Expr

    @property
    def text(self) -> str:
        return f"{self.left.text} {self.op} {self.right.text}"

    def holds(self, dims: Mapping[str, int]) -> bool:
        return RELATIONS[self.op](self.left(dims), self.right(dims))

    def bound_text(self, dims: Mapping[str, int]) -> str:
        """The values ``dims`` gives the guard's symbols (``n=6, u0=7``), for messages."""
        return ", ".join(f"{s}={dims[s]}" for s in sorted(self.left.symbols | self.right.symbols))


@dataclass(frozen=True)
class Mutation:
    """After a run, value ``value`` becomes the new state of buffer (or user input) ``target``."""

    value: str
    kind: str
    target: str


@dataclass(frozen=True)
class Graph:
    """A validated graph.json. ``document`` is the JSON it came from."""

    path: Path
    symbols: Mapping[str, SymbolSpec]
    inputs: tuple[TensorSpec, ...]
    weights: tuple[WeightSpec, ...]
    nodes: tuple[Node, ...]
    outputs: tuple[TensorSpec, ...]
    mutations: tuple[Mutation, ...]
    document: Mapping[str, Any] = field(repr=False)
    constant_inputs: tuple[ConstantInput, ...] = ()
    guards: tuple[Guard, ...] = ()

    def call_names(self) -> list[str]:
        """The names of the exported call's arguments in order: tensor inputs and constant ones."""
        names = [s.name for s in self.inputs]
        for c in sorted(self.constant_inputs, key=lambda c: c.index):
            names.insert(c.index, c.name)
        return names

    @property
    def file(self) -> Path:
        return self.path / GRAPH_FILE

    def read_counts(self) -> dict[str, int]:
        """Value name -> how many references the nodes make to it."""
        counts: dict[str, int] = {}
        for node in self.nodes:
            for name in node.reads():
                counts[name] = counts.get(name, 0) + 1
        return counts

    def fresh_names(self) -> Callable[[str], str]:
        """A function that names new values, for passes that add nodes or weights: ``base``, else
        ``base_1``, ``base_2``..., never a name the graph has or the function gave before."""
        taken = {w.name for w in self.weights} | {s.name for s in self.inputs}
        taken |= {n for node in self.nodes for n in node.outputs if n}

        def fresh(base: str) -> str:
            name, i = base, 1
            while name in taken:
                name, i = f"{base}_{i}", i + 1
            taken.add(name)
            return name

        return fresh

    def with_nodes(
        self, nodes: list[Node], weights: Mapping[str, Any], added: list[WeightSpec]
    ) -> tuple[Graph, dict[str, Any]]:
        """For passes that rewrite nodes: the graph running ``nodes`` (renumbered in order), with the
        weights they, the outputs or the mutations still read plus ``added``, and ``weights`` (by
        key) narrowed to those."""
        nodes = [dataclasses.replace(n, index=i) for i, n in enumerate(nodes)]
        used = {name for node in nodes for name in node.reads()} | {o.name for o in self.outputs}
        used |= {m.target for m in self.mutations} | {m.value for m in self.mutations}
        specs = [w for w in self.weights if w.name in used] + added
        keys = {w.key for w in specs}
        graph = dataclasses.replace(self, nodes=tuple(nodes), weights=tuple(specs))
        return graph, {k: v for k, v in weights.items() if k in keys}

    def op_counts(self) -> dict[str, int]:
        """How many nodes call each op name, in order of first use."""
        counts: dict[str, int] = {}
        for node in self.nodes:
            counts[node.op] = counts.get(node.op, 0) + 1
        return counts


# -- where a graph lives while it is saved ------------------------------------------------------------


def backup_path(path: Path) -> Path:
    """Where :func:`save` keeps the previous graph at ``path`` while it swaps in the new one."""
    return path.with_name(f".{path.name}.old")


def current_path(path: Path) -> Path:
    """The directory that holds the graph saved at ``path``: ``path``, or its backup when a save was
    interrupted between moving the old graph aside and moving the new one in."""
    if os.path.lexists(path) or not path.name:
        return path
    backup = backup_path(path)
    return backup if backup.is_dir() else path
