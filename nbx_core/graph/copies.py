"""Dropping the copies a graph makes only for attention to read, when a program loads.

nbx-attention reads its operands through their strides and repeats key and value heads itself
(``enable_gqa``), so two kinds of copy change nothing but the time they take:

- Whisper's and BART's attention (as transformers writes it) split each of queries, keys and
  values into heads with ``view``, ``transpose`` and then ``contiguous``: a copy of the whole
  tensor, three per layer. A ``contiguous`` that only attention's query, key or value arguments
  read is dropped; they read its source.
- Grouped-query models (Llama, Qwen2, Mistral) repeat each key and value head for its group of
  query heads (transformers' ``repeat_kv``: ``unsqueeze``, ``expand``, ``reshape``): a copy as
  large as the queries, two per layer. Where attention alone reads the repeat, it reads the
  unrepeated heads instead, with ``enable_gqa=True``, which groups query heads the same way.

Only graphs that write nothing in place and update no buffer are changed: there, the source holds
the same values when attention reads it as when the copy was made. ``Program(..., fusion=False)``
runs the graph as written.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from .aliases import writes_in_place
from .format import Graph, Node, Ref

_CONTIGUOUS = "aten::contiguous.default"
_ATTENTION = "aten::scaled_dot_product_attention.default"
_UNSQUEEZE = "aten::unsqueeze.default"
_EXPAND = "aten::expand.default"
_RESHAPES = ("aten::reshape.default", "aten::view.default", "aten::_unsafe_view.default")


def drop_attention_copies(graph: Graph) -> tuple[Graph, int]:
    """``graph`` without the copies only attention reads (see the module docstring), and how many
    were dropped."""
    if writes_in_place(graph):
        return graph, 0
    outputs = {o.name for o in graph.outputs}
    readers: dict[str, list[tuple[int, bool]]] = {}  # value -> (reader, read only as q/k/v)
    for node in graph.nodes:
        for name in set(node.reads()):
            qkv = (
                node.op == _ATTENTION
                and Ref(name) in node.args[:3]
                and Ref(name) not in node.args[3:]
                and Ref(name) not in node.kwargs.values()
            )
            readers.setdefault(name, []).append((node.index, qkv))
    source: dict[str, str] = {}
    for node in graph.nodes:
        out = node.outputs[0] if len(node.outputs) == 1 else None
        if (
            node.op == _CONTIGUOUS
            and len(node.args) == 1
            and isinstance(node.args[0], Ref)
            and node.kwargs.get("memory_format") in (None, "contiguous_format")
            and out is not None
            and out not in outputs
            and readers.get(out)
            and all(qkv for _, qkv in readers[out])
        ):
            source[out] = node.args[0].name
    producer = {o: n for n in graph.nodes for o in n.outputs if o}
    dropped = {producer[name].index for name in source}
    gqa: dict[int, dict[int, str]] = {}  # attention node -> {argument position: unrepeated heads}
    for node in graph.nodes:
        if node.op != _ATTENTION or node.kwargs.get("enable_gqa"):
            continue
        for pos in (1, 2)[: max(0, len(node.args) - 1)]:  # key and value, where given by position
            chain = _repeated_heads(node.args[pos], producer, readers, outputs)
            if chain is not None:
                gqa.setdefault(node.index, {})[pos] = chain[0]
                dropped.update(chain[1])
    if not dropped:
        return graph, 0
    nodes: list[Node] = []
    for n in graph.nodes:
        if n.index in dropped:
            continue
        if n.index in gqa:
            args = list(n.args)
            for pos, heads in gqa[n.index].items():
                args[pos] = Ref(heads)
            n = dataclasses.replace(n, args=tuple(args), kwargs={**n.kwargs, "enable_gqa": True})
        nodes.append(dataclasses.replace(n.renamed(source, outputs=False), index=len(nodes)))
    return dataclasses.replace(graph, nodes=tuple(nodes)), len(source) + sum(map(len, gqa.values()))


def _repeated_heads(
    value: object, producer: Mapping[str, Node], readers: Mapping[str, list[tuple[int, bool]]], outputs: set[str]
) -> tuple[str, list[int]] | None:
    """Where ``value`` is ``repeat_kv(x)`` (``reshape(expand(unsqueeze(x, 2), [b, h, n, s, d]),
    [b, h * n, s, d])``) and attention alone reads it and its steps: ``x``'s name and the steps' nodes."""
    if not isinstance(value, Ref):
        return None
    reshape = producer.get(value.name)
    if reshape is None or reshape.op not in _RESHAPES or len(reshape.args) != 2:
        return None
    expand = _single_reader_source(reshape, _EXPAND, producer, readers, outputs)
    unsqueeze = _single_reader_source(expand, _UNSQUEEZE, producer, readers, outputs) if expand else None
    reads = readers.get(value.name, [])
    if expand is None or unsqueeze is None or unsqueeze.args[1:] not in ((2,), (-3,)):
        return None
    if len(reads) != 1 or not reads[0][1]:  # attention alone reads the repeat, as its key or value
        return None
    shape, sizes = reshape.args[1], expand.args[1]
    if not (
        isinstance(shape, list | tuple) and isinstance(sizes, list | tuple) and len(shape) == 4 and len(sizes) == 5
    ):
        return None
    heads, group = sizes[1], sizes[2]
    if not (type(heads) is int and type(group) is int and heads > 0 and shape[1] == heads * group):
        return None
    if value.name in outputs or not isinstance(unsqueeze.args[0], Ref):
        return None
    return unsqueeze.args[0].name, [reshape.index, expand.index, unsqueeze.index]


def _single_reader_source(
    node: Node, op: str, producer: Mapping[str, Node], readers: Mapping[str, list[tuple[int, bool]]], outputs: set[str]
) -> Node | None:
    """The node of ``op`` that made ``node``'s first argument, where ``node`` alone reads it."""
    src = node.args[0] if node.args else None
    if not isinstance(src, Ref):
        return None
    made = producer.get(src.name)
    if made is None or made.op != op or src.name in outputs or len(readers.get(src.name, ())) != 1:
        return None
    return made
