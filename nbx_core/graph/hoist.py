"""Work a plan does once: launches whose results do not depend on the values of the inputs.

Language models build their attention masks, position ids and rotary tables from ``arange``,
comparisons and the weights: dozens of small launches whose results depend only on the input
shapes, which a plan fixes. :func:`fixed_nodes` finds those nodes in the graph; :func:`hoist` runs
their launches once, when the plan is made, into memory the plan keeps, and leaves the rest for
every run.

Both are conservative:

- a value written in place is fixed only if every write into its memory is, and every node reading
  that memory before the last write; a graph that updates buffers after its runs fixes nothing;
- a launch is hoisted only if every node it stands for is fixed (a fused launch that also computes
  a value from the inputs runs every time), and it touches no input or output of the run;
- memory a hoisted launch touches first must not be written by any launch that stays, and memory
  that a launch which stays touches first is not read by a hoisted one;
- the kept memory is bounded by :data:`HOISTED_MAX_BYTES`: above it nothing is hoisted, since the
  plan would hold it as long as it lives.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..memory import allocate
from ..opnames import base_name
from ..runtime.launch import BACKEND, launch
from ..runtime.trace import Launch, StorageInfo, Zero, bind, tensor_args
from .aliases import VIEW_OPS, is_in_place
from .format import Graph

HOISTED_MAX_BYTES = 256 << 20
"""The most memory a plan keeps for hoisted results; a plan that would keep more hoists nothing."""

# Ops that read only the shape, dtype and device of a tensor argument, not its values.
SHAPE_ONLY = frozenset(
    {
        "aten::new_ones.default",
        "aten::new_zeros.default",
        "aten::new_full.default",
        "aten::ones_like.default",
        "aten::zeros_like.default",
        "aten::full_like.default",
        "aten::sym_size.int",
        "aten::sym_numel.default",
    }
)


def fixed_nodes(graph: Graph) -> frozenset[int]:
    """The indices of the nodes whose values depend only on the weights and on the input shapes.

    A value written in place stays fixed only while every write into its memory (the value, the
    views of it and what it views) is fixed too and every node reading that memory before the last
    write is fixed: hoisted, the writes happen before any run. A graph that updates buffers or
    inputs after its runs fixes nothing."""
    if graph.mutations:
        return frozenset()
    memory = _memory_classes(graph)
    writers: dict[str, list[int]] = {}
    for node in graph.nodes:
        if is_in_place(node.op) and node.reads():
            writers.setdefault(memory(node.reads()[0]), []).append(node.index)
    tainted: set[str] = set()
    while True:
        fixed_values = {w.name for w in graph.weights if memory(w.name) not in tainted}
        fixed: set[int] = set()
        for node in graph.nodes:
            outputs = [name for name in node.outputs if name is not None]
            if any(memory(name) in tainted for name in outputs):
                continue
            if node.op in SHAPE_ONLY or all(name in fixed_values for name in node.reads()):
                fixed.add(node.index)
                fixed_values.update(outputs)
        newly = {
            cls
            for cls, nodes in writers.items()
            if cls not in tainted
            and (
                any(n not in fixed for n in nodes)
                or any(
                    node.index < max(nodes) and node.index not in fixed and any(memory(r) == cls for r in node.reads())
                    for node in graph.nodes
                )
            )
        }
        if not newly:
            return frozenset(fixed)
        tainted |= newly


def _memory_classes(graph: Graph) -> Callable[[str], str]:
    """A function from a value's name to a name shared by every value that may share its memory: a
    view op's or an in-place op's result with its first argument."""
    parent: dict[str, str] = {}

    def find(name: str) -> str:
        while parent.get(name, name) != name:
            parent[name] = parent.get(parent[name], parent[name])
            name = parent[name]
        return name

    for node in graph.nodes:
        reads = node.reads()
        if reads and (base_name(node.op) in VIEW_OPS or is_in_place(node.op)):
            root = find(reads[0])
            for name in node.outputs:
                if name is not None:
                    parent[find(name)] = root
    return find


@dataclass(frozen=True)
class Hoisted:
    """What :func:`hoist` did: the ops left for every run, the storages as the runs see them (hoisted
    results become constants), how many launches ran once, and the bytes the plan keeps for them."""

    ops: list[Launch | Zero]
    storages: list[StorageInfo]
    launches: int
    kept_bytes: int


def hoist(ops: Sequence[Launch | Zero], storages: Sequence[StorageInfo], fixed: frozenset[int], device: Any) -> Hoisted:
    """Run once the launches of ``ops`` that compute only fixed values (``fixed``: node indices, from
    :func:`fixed_nodes`), each into new memory; return the ops left and the storages with the
    results those ops read turned into constants."""
    unchanged = Hoisted(list(ops), list(storages), 0, 0)
    if not fixed:
        return unchanged
    touched = [_storages_of(op) for op in ops]
    first: dict[int, int] = {}  # storage -> position of the first launch touching it
    for pos, ss in enumerate(touched):
        if isinstance(ops[pos], Launch):
            for s in ss:
                first.setdefault(s, pos)
    chosen = {
        pos
        for pos, op in enumerate(ops)
        if isinstance(op, Launch)
        and op.nodes
        and all(n in fixed for n in op.nodes)
        and all(storages[s].kind in ("temp", "const") for s in touched[pos])
    }
    while True:
        drop = _unsafe(ops, storages, touched, first, chosen)
        if not drop:
            break
        chosen -= drop
    if not chosen:
        return unchanged
    made = {s for pos in chosen for s in touched[pos] if storages[s].kind == "temp"}
    read_later = {s for pos, ss in enumerate(touched) if pos not in chosen for s in ss if s in made}
    kept_bytes = sum(storages[s].nbytes for s in read_later)
    if kept_bytes > HOISTED_MAX_BYTES:
        return unchanged
    zeroed = {op.storage for op in ops if isinstance(op, Zero) and op.storage in made}
    memory = {s: allocate(storages[s].nbytes, device, zero=s in zeroed) for s in made}

    def storage(index: int) -> Any:
        return memory[index] if index in memory else storages[index].ref

    for pos in sorted(chosen):
        op = ops[pos]
        assert isinstance(op, Launch)
        launch(op.kernel, op.grid, *bind(op.args, storage), **op.kwargs)
    if BACKEND == "cuda":  # later runs may queue on another stream
        from ..memory import cuda

        cuda.synchronize(device)
    infos = list(storages)
    for s in read_later:
        infos[s] = dataclasses.replace(storages[s], kind="const", ref=memory[s])
    left = [op for pos, op in enumerate(ops) if pos not in chosen and not (isinstance(op, Zero) and op.storage in made)]
    return Hoisted(left, infos, len(chosen), kept_bytes)


def _storages_of(op: Launch | Zero) -> set[int]:
    if isinstance(op, Zero):
        return {op.storage}
    return {a.storage for a in tensor_args(op.args)}


def _unsafe(
    ops: Sequence[Launch | Zero],
    storages: Sequence[StorageInfo],
    touched: list[set[int]],
    first: dict[int, int],
    chosen: set[int],
) -> set[int]:
    """The chosen launches that may not run ahead: those that read a temporary which a launch that
    stays touches first (it makes it), and those sharing a temporary with a launch that stays and
    stands for one of their nodes (it may write into it)."""
    temps = [{s for s in ss if storages[s].kind == "temp"} for ss in touched]
    drop = {pos for pos in chosen if any(first[s] not in chosen for s in temps[pos])}
    nodes_over: dict[int, set[int]] = {}
    for pos in chosen:
        for s in temps[pos]:
            nodes_over.setdefault(s, set()).update(ops[pos].nodes)  # type: ignore[union-attr]
    for pos, op in enumerate(ops):
        if pos in chosen or not isinstance(op, Launch):
            continue
        shared = {s for s in temps[pos] if nodes_over.get(s, set()) & set(op.nodes)}
        drop.update(p for p in chosen if temps[p] & shared)
    return drop
