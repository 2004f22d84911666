"""Dropping the copies a graph makes only for attention to read, when a program loads.

Whisper's and BART's attention (as transformers writes it) split each of queries, keys and values
into heads with ``view``, ``transpose`` and then ``contiguous``: a copy of the whole tensor, three
per layer. nbx-attention reads its operands through their strides, so a copy that only attention's
query, key or value arguments read changes nothing but the time it takes; the pass makes those
readers read the copy's source instead.

Only graphs that write nothing in place and update no buffer are changed: there, the source holds
the same values when attention reads it as when the copy was made. ``Program(..., fusion=False)``
runs the graph as written.
"""

from __future__ import annotations

import dataclasses

from .aliases import is_in_place
from .format import Graph, Ref

_CONTIGUOUS = "aten::contiguous.default"
_ATTENTION = "aten::scaled_dot_product_attention.default"


def drop_attention_copies(graph: Graph) -> tuple[Graph, int]:
    """``graph`` with each ``contiguous`` copy that only attention's query, key and value read
    replaced by its source (see the module docstring), and how many were dropped."""
    if graph.mutations or any(is_in_place(n.op) for n in graph.nodes):
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
    if not source:
        return graph, 0
    kept = [n for n in graph.nodes if not (n.op == _CONTIGUOUS and n.outputs[0] in source)]
    nodes = [dataclasses.replace(n.renamed(source, outputs=False), index=i) for i, n in enumerate(kept)]
    return dataclasses.replace(graph, nodes=tuple(nodes)), len(source)
