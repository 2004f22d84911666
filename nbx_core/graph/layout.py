"""Channels-last activations for convolutional graphs, chosen when a program loads.

NBX's convolution reads a channels-last input with contiguous channel rows, its fast path; an
NCHW input makes every row gather across planes. torch.export records a model as it ran in
torch, usually NCHW. This pass lets a program run its convolutions channels-last:

- each 2-D or 3-D convolution's input goes through ``nbx::channels_last``, which copies only
  what is not channels-last yet. Convolutions, pooling and elementwise ops give results in their
  input's layout (torch's rules), so in a CNN the first such node copies the image and the rest
  pass their input through;
- a convolution weight that only that convolution reads and that has taps and 16 or more
  channels per group is stored channels-last (its array transposed on the host, the graph
  reading it through a ``permute`` view), so the convolution does not rearrange it on every run;
- each 4-D or 5-D graph output that a converted value reaches comes back in the memory format
  the export recorded (``contiguous_format`` when none), through ``aten::contiguous``, so
  callers see the layout torch gave them.

Values do not change: only where elements sit in memory. ``Program(..., fusion=False)`` runs the
graph as written.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from .aliases import is_in_place
from .format import Graph, Node, Ref, TensorSpec, WeightSpec

CHANNELS_LAST = "nbx::channels_last"
# Convolutions by op name: (position of the weight, rank of the input, position of ``transposed``).
# A None rank is the weight's.
_CONVOLUTIONS = {
    "aten::conv2d.default": (1, 4, None),
    "aten::conv3d.default": (1, 5, None),
    "aten::convolution.default": (1, None, 6),
}
_PERMUTE = "aten::permute.default"
_CONTIGUOUS = "aten::contiguous.default"


def channels_last_convolutions(graph: Graph, weights: Mapping[str, Any]) -> tuple[Graph, dict[str, Any], int]:
    """``graph`` and ``weights`` with every 2-D and 3-D convolution reading channels-last inputs
    (see the module docstring), and how many convolutions were given them."""
    specs = {w.name: w for w in graph.weights}
    mutated = {m.target for m in graph.mutations} | {m.value for m in graph.mutations}
    readers = graph.read_counts()
    fresh = graph.fresh_names()

    # Values in-place ops or mutations write keep their readers: a copy would not see the writes.
    written = mutated | {
        n.args[0].name for n in graph.nodes if is_in_place(n.op) and n.args and isinstance(n.args[0], Ref)
    }
    out_weights = dict(weights)
    new_specs: dict[str, WeightSpec] = {}
    nodes: list[Node] = []
    alias: dict[str, str] = {}  # a converted value -> its channels-last copy, which later nodes read
    converted: set[str] = set()
    count = 0
    for node in graph.nodes:
        node = node.renamed(alias, outputs=False) if alias else node
        plan = _CONVOLUTIONS.get(node.op)
        src = node.args[0] if node.args else None
        w_at, rank, transposed_at = plan if plan else (0, None, None)
        w = node.args[w_at] if plan and len(node.args) > w_at else None
        wspec = specs.get(w.name) if isinstance(w, Ref) else None
        rank = rank or (len(wspec.shape) if wspec else None)
        if plan is None or not isinstance(src, Ref) or rank not in (4, 5):
            nodes.append(node)
            continue
        transposed = transposed_at is not None and len(node.args) > transposed_at and bool(node.args[transposed_at])
        args = list(node.args)
        if src.name not in converted:
            cl = fresh(f"{src.name}_channels_last")
            nodes.append(Node(-1, f"{node.name}_input_channels_last", CHANNELS_LAST, (src,), {}, (cl,)))
            converted.add(cl)
            args[0] = Ref(cl)
            if src.name not in written:
                alias[src.name] = cl
        if (
            wspec is not None
            and not transposed
            and wspec.name not in mutated
            and readers.get(wspec.name) == 1
            and len(wspec.shape) == rank
            and wspec.shape[1] >= 16
            and any(k > 1 for k in wspec.shape[2:])
        ):
            physical = fresh(f"{wspec.name}_channels_last")
            key = f"nbx.layout.{physical}"
            order = (0, *range(2, rank), 1)
            out_weights[key] = np.ascontiguousarray(np.transpose(np.asarray(weights[wspec.key]), order))
            new_specs[wspec.name] = WeightSpec(
                physical, key, wspec.kind, wspec.dtype, tuple(wspec.shape[d] for d in order)
            )
            view = fresh(f"{wspec.name}_view")
            nodes.append(
                Node(
                    -1,
                    f"{node.name}_weight_channels_last",
                    _PERMUTE,
                    (Ref(physical), [0, rank - 1, *range(1, rank - 1)]),
                    {},
                    (view,),
                )
            )
            args[w_at] = Ref(view)
        nodes.append(dataclasses.replace(node, args=tuple(args)))
        count += 1
    # Everything a converted value reaches may now be channels-last.
    for node in nodes:
        if any(name in converted for name in node.reads()):
            converted.update(o for o in node.outputs if o)
    outputs: list[TensorSpec] = []
    renamed: dict[str, str] = {}
    tail: list[Node] = []
    for spec in graph.outputs:
        restore = spec.name in converted and len(spec.shape) in (4, 5)
        if restore and spec.name not in mutated and spec.name not in renamed:
            inner = fresh(f"{spec.name}_channels_last")
            renamed[spec.name] = inner
            tail.append(
                Node(
                    -1,
                    f"{spec.name}_memory_format",
                    _CONTIGUOUS,
                    (Ref(inner),),
                    {"memory_format": spec.memory_format},
                    (spec.name,),
                )
            )
        outputs.append(spec)
    if renamed:
        nodes = [n.renamed(renamed) for n in nodes]
    nodes = [dataclasses.replace(n, index=i) for i, n in enumerate(nodes + tail)]
    specs_after = [w for w in graph.weights if w.name not in new_specs] + list(new_specs.values())
    keys = {w.key for w in specs_after}
    return (
        dataclasses.replace(graph, nodes=tuple(nodes), weights=tuple(specs_after), outputs=tuple(outputs)),
        {k: v for k, v in out_weights.items() if k in keys},
        count,
    )
