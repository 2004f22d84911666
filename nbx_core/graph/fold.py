"""Folding inference batch norm into the convolution before it, when a program loads.

A convolution ``conv(x, W, b)`` whose result only an inference batch norm reads,
``(y - mean) / sqrt(var + eps) * gamma + beta``, is one convolution with ``W' = W * s`` and
``b' = (b - mean) * s + beta``, where ``s = gamma / sqrt(var + eps)`` per output channel. The
program then runs one convolution where it ran a convolution and a normalisation pass over its
result, and the activation that usually follows becomes the convolution's epilogue. ``W'`` and
``b'`` are computed on the host in float64 from the graph's weights and stored in the weights'
dtype, so the results differ from the unfolded graph by that rounding (as in any runtime that folds
batch norm for inference). ``Program(..., fusion=False)`` runs the graph as written.

A pair is folded only where every operand of both is a weight of the graph that no mutation of the
graph updates, the convolution is not transposed, and no other node or output reads the
convolution's result (or the batch norm's statistics). Weights that only folded nodes read are
dropped from the program.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np

from .format import Graph, Node, Ref, WeightSpec

# Convolutions by op name: (position of the weight argument, of the bias argument, of ``transposed``
# or None where the op has no such argument).
_CONVOLUTIONS = {
    "aten::conv1d.default": (1, 2, None),
    "aten::conv2d.default": (1, 2, None),
    "aten::conv3d.default": (1, 2, None),
    "aten::convolution.default": (1, 2, 6),
}
# Inference batch norms by op name: position of ``training`` (must be false), or None, and of eps.
_BATCH_NORMS = {
    "aten::batch_norm.default": (5, 7),
    "aten::_native_batch_norm_legit_no_training.default": (None, 6),
}
_FLOATS = ("float16", "bfloat16", "float32", "float64")
_ARG_NAMES = {
    "aten::conv1d.default": ("input", "weight", "bias"),
    "aten::conv2d.default": ("input", "weight", "bias"),
    "aten::conv3d.default": ("input", "weight", "bias"),
    "aten::convolution.default": ("input", "weight", "bias", "stride", "padding", "dilation", "transposed"),
    "aten::batch_norm.default": (
        "input",
        "weight",
        "bias",
        "running_mean",
        "running_var",
        "training",
        "momentum",
        "eps",
    ),
    "aten::_native_batch_norm_legit_no_training.default": (
        "input",
        "weight",
        "bias",
        "running_mean",
        "running_var",
        "momentum",
        "eps",
    ),
}


def _arg(node: Node, pos: int) -> Any:
    """Argument ``pos`` of ``node``, given by position or by its schema name (None when absent)."""
    if pos < len(node.args):
        return node.args[pos]
    return node.kwargs.get(_ARG_NAMES[node.op][pos])


def _with_arg(node: Node, pos: int, value: Any) -> Node:
    name = _ARG_NAMES[node.op][pos]
    if pos < len(node.args) or name not in node.kwargs:
        args = list(node.args) + [None] * max(0, pos + 1 - len(node.args))
        args[pos] = value
        return dataclasses.replace(node, args=tuple(args))
    return dataclasses.replace(node, kwargs={**node.kwargs, name: value})


def fold_batch_norms(graph: Graph, weights: Mapping[str, Any]) -> tuple[Graph, dict[str, Any], int]:
    """``graph`` and ``weights`` (by key) with each foldable convolution -> batch norm pair folded
    (see the module docstring), and how many pairs were folded."""
    specs = {w.name: w for w in graph.weights}
    mutated = {m.target for m in graph.mutations} | {m.value for m in graph.mutations}
    producer = {name: node for node in graph.nodes for name in node.outputs if name is not None}
    readers = graph.read_counts()
    kept = {o.name for o in graph.outputs} | mutated
    fresh = graph.fresh_names()

    def weight(value: Any) -> WeightSpec | None:
        spec = specs.get(value.name) if isinstance(value, Ref) else None
        return spec if spec is not None and spec.name not in mutated else None

    out_weights = dict(weights)
    new_specs: list[WeightSpec] = []
    replaced: dict[int, Node] = {}
    dropped: set[int] = set()
    for bn in graph.nodes:
        if bn.op not in _BATCH_NORMS:
            continue
        training_at, eps_at = _BATCH_NORMS[bn.op]
        src = _arg(bn, 0)
        conv = producer.get(src.name) if isinstance(src, Ref) else None
        if conv is None or conv.op not in _CONVOLUTIONS or conv.index in replaced or conv.index in dropped:
            continue
        w_at, b_at, transposed_at = _CONVOLUTIONS[conv.op]
        training = training_at is not None and _arg(bn, training_at)
        if training or (transposed_at is not None and _arg(conv, transposed_at)):
            continue
        if (
            readers.get(src.name, 0) != 1
            or src.name in kept
            or any(o is not None and (readers.get(o, 0) or o in kept) for o in bn.outputs[1:])
        ):
            continue
        b, gamma, beta, mean, var = _arg(conv, b_at), *(_arg(bn, i) for i in (1, 2, 3, 4))
        w = weight(_arg(conv, w_at))
        optional = [v for v in (b, gamma, beta) if v is not None]
        operands = [weight(v) for v in (mean, var, *optional)]
        if w is None or w.dtype not in _FLOATS or any(spec is None for spec in operands):
            continue
        value = {spec.name: np.asarray(weights[spec.key], dtype=np.float64) for spec in (w, *operands) if spec}
        scale = 1.0 / np.sqrt(value[var.name] + float(_arg(bn, eps_at)))
        if gamma is not None:
            scale = scale * value[gamma.name]
        shift = (value[b.name] if b is not None else 0.0) - value[mean.name]
        shift = shift * scale + (value[beta.name] if beta is not None else 0.0)
        folded_w = value[w.name] * scale.reshape((-1,) + (1,) * (len(w.shape) - 1))
        dtype = np.asarray(weights[w.key]).dtype
        names = []
        for what, array in (("weight", folded_w), ("bias", shift)):
            name = fresh(f"{conv.name}_folded_{what}")
            key = f"nbx.folded.{name}"
            out_weights[key] = array.astype(dtype)
            new_specs.append(WeightSpec(name, key, "constant", w.dtype, tuple(array.shape)))
            names.append(name)
        node = _with_arg(_with_arg(conv, w_at, Ref(names[0])), b_at, Ref(names[1]))
        replaced[conv.index] = dataclasses.replace(node, outputs=(bn.outputs[0],))
        dropped.add(bn.index)
    if not dropped:
        return graph, dict(weights), 0
    nodes = [replaced.get(n.index, n) for n in graph.nodes if n.index not in dropped]
    return (*graph.with_nodes(nodes, out_weights, new_specs), len(dropped))
