"""Rewriting a graph with fusion patterns (:mod:`nbx_core.patterns`).

Each match of a pattern becomes one node calling the pattern's op, at the place of the match's
last node, reading the values the pattern binds. A match is taken only when every value it computes
inside the subgraph has no reader outside it (and is not a graph output), so removing those nodes
loses nothing. Larger patterns are tried first; a node belongs to one match at most.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..registry.patterns import Arg, DTypeConst, Op, Pattern
from .format import Graph, Node, Ref


@dataclass(frozen=True)
class Fusion:
    """One match: the pattern, and the names of the nodes it replaced (in graph order)."""

    pattern: Pattern
    nodes: tuple[str, ...]


def rewrite(
    graph: Graph,
    patterns: Sequence[Pattern],
    usable: Callable[[Pattern], bool] = lambda p: True,
) -> tuple[Graph, list[Fusion]]:
    """``graph`` with every match of ``patterns`` replaced, and the matches; ``usable(p)`` says
    whether pattern ``p``'s op can run here (a pattern whose op nobody provides is skipped)."""
    candidates = sorted((p for p in patterns if usable(p)), key=lambda p: -p.size())
    if not candidates:
        return graph, []
    producer = {name: node for node in graph.nodes for name in node.outputs if name is not None}
    readers: dict[str, int] = {}
    for node in graph.nodes:
        for name in node.reads():
            readers[name] = readers.get(name, 0) + 1
    kept = {o.name for o in graph.outputs} | {m.value for m in graph.mutations} | {m.target for m in graph.mutations}
    taken: set[int] = set()
    replaced: dict[int, Node] = {}
    fusions: list[Fusion] = []
    for root in reversed(graph.nodes):
        if root.index in taken:
            continue
        for pattern in candidates:
            match = _Match(producer, taken)
            if not match.node(pattern.root, root):
                continue
            inner = match.nodes - {root.index}
            if not _closed(match, inner, readers, kept, producer):
                continue
            taken |= match.nodes
            args = tuple(match.bound[n] for n in pattern.call)
            replaced[root.index] = Node(root.index, root.name, pattern.name, args, dict(pattern.kwargs), root.outputs)
            names = tuple(n.name for n in graph.nodes if n.index in match.nodes)
            fusions.append(Fusion(pattern, names))
            break
    if not fusions:
        return graph, []
    nodes = [replaced.get(n.index, n) for n in graph.nodes if n.index not in taken or n.index in replaced]
    nodes = [dataclasses.replace(n, index=i) for i, n in enumerate(nodes)]
    return dataclasses.replace(graph, nodes=tuple(nodes)), fusions[::-1]


class _Match:
    def __init__(self, producer: dict[str, Node], taken: set[int]) -> None:
        self.producer = producer
        self.taken = taken
        self.bound: dict[str, Any] = {}
        self.nodes: set[int] = set()
        self.uses: dict[str, int] = {}  # uses of values computed inside the match, by matched nodes

    def node(self, pat: Op, node: Node) -> bool:
        if node.op != pat.name or node.index in self.taken or len(node.args) != len(pat.args):
            return False
        if sorted(node.kwargs) != [k for k, _ in pat.kwargs]:
            return False
        if len([o for o in node.outputs if o is not None]) != 1 or node.outputs[0] is None:
            return False
        self.nodes.add(node.index)
        return all(self.value(p, v) for p, v in zip(pat.args, node.args, strict=True)) and all(
            self.value(p, node.kwargs[k]) for k, p in pat.kwargs
        )

    def value(self, pat: Any, value: Any) -> bool:
        if isinstance(pat, Arg):
            if pat.name in self.bound:
                return self.bound[pat.name] == value
            self.bound[pat.name] = value
            return True
        if isinstance(pat, Op):
            if not isinstance(value, Ref) or value.name not in self.producer:
                return False
            self.uses[value.name] = self.uses.get(value.name, 0) + 1
            node = self.producer[value.name]
            if node.index in self.nodes:  # a shared subexpression, matched already
                return node.op == pat.name
            return self.node(pat, node)
        if isinstance(pat, DTypeConst):
            return type(value).__name__ == "DType" and value.name == pat.name
        if isinstance(pat, list | tuple):
            return (
                isinstance(value, list | tuple)
                and len(pat) == len(value)
                and all(self.value(p, v) for p, v in zip(pat, value, strict=True))
            )
        return type(pat) is not bool and type(value) is not bool and pat == value or pat is value


def _closed(match: _Match, inner: set[int], readers: dict[str, int], kept: set[str], producer: dict[str, Node]) -> bool:
    """Whether the values the matched nodes (other than the root) compute are read only inside the
    match, and no bound argument is one of them."""
    for name, node in producer.items():
        if node.index in inner and (name in kept or readers.get(name, 0) != match.uses.get(name, 0)):
            return False
    return not any(
        isinstance(v, Ref) and producer.get(v.name) is not None and producer[v.name].index in inner
        for v in match.bound.values()
    )
