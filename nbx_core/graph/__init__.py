"""NBX graphs: the ``name.nbx/`` format, its validator, the runner, and the torch.export importer.

::

    prog = nbx_core.graph.load("model.nbx")        # validate, resolve every op, plan
    y = prog(x, src_key_padding_mask=mask)         # NBXTensor(s)
    nbx_core.graph.required_ops("model.nbx")       # {"aten::linear.default": 4, ...}

:mod:`nbx_core.graph.export` turns a ``torch.export.ExportedProgram`` into a graph; it is the one
module here that imports torch, and it is imported only when asked for. The format is described
in docs/graph-format.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..backend import current
from ..device import Device
from ..registry import Registry
from .format import FORMAT, VERSION, Graph, TensorSpec
from .runner import Program
from .validate import load_weights, read_graph
from .writer import save

__all__ = ["FORMAT", "VERSION", "Graph", "Program", "TensorSpec", "load", "read_graph", "required_ops", "save"]


def load(path: str | Path, *, device: str | Device | None = None, registry: Registry | None = None,
         planning: bool = True, fusion: bool = True, cuda_graphs: bool | None = None) -> Program:
    """Load the graph directory ``path`` as a callable :class:`Program`.

    Validates graph.json and weights.safetensors, rewrites it with the registry's fusion patterns
    (``fusion``), resolves every op through ``registry`` (default: the process-wide one) and moves
    the weights to ``device`` (default: the backend's device). Raises a GraphError subclass for a
    malformed graph and one UnresolvedOpError listing every op no installed plugin provides.

    ``planning``: replay each input signature's recorded plan after its first run
    (:mod:`nbx_core.graph.plan`); ``fusion``: fold inference batch norms into convolutions
    (:mod:`nbx_core.graph.fold`) and fuse through the registry's patterns and the plan's elementwise
    chains; ``cuda_graphs``: replay plans as CUDA graphs (default: on the cuda backend,
    for graphs without symbolic dims).

    On the cuda backend, a graph with a kernel bundle (``kernels/``, made by ``nbx compile``) launches
    the bundled binaries instead of compiling them: see docs/bundles.md. A corrupt bundle is a
    BundleError; one built for another GPU or Triton is ignored with a BundleWarning.
    """
    graph = read_graph(path)
    options: dict[str, Any] = {"device": device, "registry": registry, "planning": planning, "fusion": fusion,
                               "cuda_graphs": cuda_graphs}
    if current() == "cuda":  # a kernel bundle (nbx compile) serves the GPU: checked now, before anything runs
        from .bundled import BundledProgram, open_bundle

        bundle = open_bundle(graph)
        if bundle is not None:
            return BundledProgram(bundle, graph, load_weights(graph), **options)
    return Program(graph, load_weights(graph), **options)


def required_ops(path: str | Path) -> dict[str, int]:
    """Op name -> number of nodes that call it, from graph.json alone (no weights, no kernels)."""
    return read_graph(path).op_counts()
