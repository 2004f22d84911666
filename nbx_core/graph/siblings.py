"""Merging linear layers that read one input into one matrix product, when a program loads.

Attention computes its queries, keys and values with three ``linear`` calls on the same hidden
states. Each is a matrix product of the full input with a narrow weight: the keys and values of a
grouped-query model have a quarter of the queries' columns, and their products leave most of a
Hopper GPU idle. Stacking the weights makes one product whose columns are every layer's outputs;
each former result is then a column slice of it, a view.

A group of ``linear`` nodes is merged where:

- they read the same input, their weights have the same dtype and input features, and each weight
  (and bias) is a weight of the graph that only that node reads and no mutation updates;
- each result is read only by views (``view``, ``reshape``, ``transpose``, ``permute``,
  ``unsqueeze``), as attention heads are made, is not a graph output, and no view of it is
  written in place. A result that an elementwise op reads directly (a feed-forward gate, a scaled
  query) stays its own product, whose epilogue that op can join;
- no node between the first and the last of them writes in place.

A ``view`` of a merged result becomes a ``reshape``, which is the same view wherever the slice's
strides allow one (splitting heads off the last dim always does) and a copy where not. The stacked
weight and bias are built on the host; a member without a bias gets zeros, which leaves its values
unchanged (a product of exactly -0.0 becomes +0.0). ``Program(..., fusion=False)`` runs the graph
as written.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from .aliases import VIEW_OPS, is_in_place
from .format import Graph, Node, Ref, WeightSpec

_LINEAR = "aten::linear.default"
_SLICE = "aten::slice.Tensor"
_RESHAPE = "aten::reshape.default"
_STRICT_VIEWS = frozenset({"aten::view.default", "aten::_unsafe_view.default"})
_HEAD_VIEWS = _STRICT_VIEWS | {_RESHAPE, "aten::transpose.int", "aten::permute.default", "aten::unsqueeze.default"}


@dataclasses.dataclass
class _Member:
    node: Node
    out: str
    weight: WeightSpec
    bias: WeightSpec | None


def merge_sibling_linears(graph: Graph, weights: Mapping[str, Any]) -> tuple[Graph, dict[str, Any], int]:
    """``graph`` and ``weights`` with each group of mergeable ``linear`` nodes (see the module
    docstring) computed by one, and how many nodes were merged away."""
    specs = {w.name: w for w in graph.weights}
    mutated = {m.target for m in graph.mutations} | {m.value for m in graph.mutations}
    counts = graph.read_counts()
    kept = {o.name for o in graph.outputs} | mutated
    readers: dict[str, list[Node]] = {}
    for node in graph.nodes:
        for name in set(node.reads()):
            readers.setdefault(name, []).append(node)
    written = mutated | {
        n.args[0].name for n in graph.nodes if is_in_place(n.op) and n.args and isinstance(n.args[0], Ref)
    }

    def aliases(name: str) -> set[str]:
        """``name`` and every value that views its memory."""
        found, todo = {name}, [name]
        while todo:
            for node in readers.get(todo.pop(), ()):
                if node.op.partition(".")[0] in VIEW_OPS:
                    new = {o for o in node.outputs if o and o not in found}
                    found |= new
                    todo.extend(new)
        return found

    def own_weight(value: Any) -> WeightSpec | None:
        spec = specs.get(value.name) if isinstance(value, Ref) else None
        if spec is None or spec.name in mutated or counts.get(spec.name) != 1:
            return None
        return spec

    groups: dict[tuple[Any, ...], list[_Member]] = {}
    for node in graph.nodes:
        if node.op != _LINEAR or node.kwargs or not 2 <= len(node.args) <= 3 or not isinstance(node.args[0], Ref):
            continue
        weight = own_weight(node.args[1])
        bias_arg = node.args[2] if len(node.args) == 3 else None
        bias = own_weight(bias_arg) if bias_arg is not None else None
        out = node.outputs[0] if node.outputs else None
        if (
            weight is None
            or len(weight.shape) != 2
            or (bias_arg is not None and (bias is None or bias.dtype != weight.dtype))
            or out is None
            or out in kept
            or not all(_views(r, out) for r in readers.get(out, ()))
            or aliases(out) & written
        ):
            continue
        group = (node.args[0].name, weight.dtype, weight.shape[1])
        groups.setdefault(group, []).append(_Member(node, out, weight, bias))

    writes_at = [i for i, n in enumerate(graph.nodes) if is_in_place(n.op)]
    out_weights = dict(weights)
    fresh = graph.fresh_names()
    new_specs: list[WeightSpec] = []
    placed: dict[int, list[Node]] = {}  # first member's position -> the nodes that replace it
    dropped: set[int] = set()
    relaxed: set[int] = set()  # strict views of merged results, which become reshapes
    for members in groups.values():
        first, last = members[0].node.index, members[-1].node.index
        if len(members) < 2 or any(first < i < last for i in writes_at):
            continue
        lead = members[0].node
        stacked = fresh(f"{lead.name}_stacked_weight")
        key = f"nbx.stacked.{stacked}"
        out_weights[key] = np.concatenate([np.asarray(weights[m.weight.key]) for m in members], axis=0)
        spec = members[0].weight
        new_specs.append(WeightSpec(stacked, key, spec.kind, spec.dtype, tuple(out_weights[key].shape)))
        args: list[Any] = [lead.args[0], Ref(stacked)]
        if any(m.bias is not None for m in members):
            dtype = np.asarray(weights[spec.key]).dtype
            parts = [
                np.asarray(weights[m.bias.key]) if m.bias is not None else np.zeros(m.weight.shape[0], dtype)
                for m in members
            ]
            bias_name = fresh(f"{lead.name}_stacked_bias")
            bias_key = f"nbx.stacked.{bias_name}"
            out_weights[bias_key] = np.concatenate(parts).astype(dtype)
            new_specs.append(WeightSpec(bias_name, bias_key, spec.kind, spec.dtype, (len(out_weights[bias_key]),)))
            args.append(Ref(bias_name))
        result = fresh(f"{lead.name}_stacked")
        nodes = [Node(-1, f"{lead.name}_stacked", _LINEAR, tuple(args), {}, (result,))]
        start = 0
        for m in members:
            end = start + m.weight.shape[0]
            nodes.append(Node(-1, m.node.name, _SLICE, (Ref(result), -1, start, end), {}, m.node.outputs))
            start = end
        placed[first] = nodes
        dropped.update(m.node.index for m in members)
        outs = {Ref(m.out) for m in members}
        relaxed.update(n.index for n in graph.nodes if n.op in _STRICT_VIEWS and n.args[0] in outs)
    if not placed:
        return graph, dict(weights), 0
    out_nodes: list[Node] = []
    for node in graph.nodes:
        if node.index in placed:
            out_nodes.extend(placed[node.index])
        elif node.index in relaxed:
            out_nodes.append(dataclasses.replace(node, op=_RESHAPE))
        elif node.index not in dropped:
            out_nodes.append(node)
    return (*graph.with_nodes(out_nodes, out_weights, new_specs), len(dropped) - len(placed))


def _views(node: Node, value: str) -> bool:
    """Whether ``node`` reads ``value`` only as the tensor it views."""
    return node.op in _HEAD_VIEWS and node.args[0] == Ref(value) and Ref(value) not in node.args[1:]
