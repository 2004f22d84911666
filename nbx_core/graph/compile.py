"""Building a graph's kernel bundle on the aot backend: what ``nbx compile`` runs.

For each requested input signature, the program :func:`nbx_core.graph.load` would make is planned
with :meth:`Program.check_compiles` on zero-filled inputs of those sizes: the node-by-node run a
GPU's first call makes, then the plan later calls replay with its fused kernels, every launch
compiling for the target. Every variant compiled on the way is collected
(:func:`nbx_core.runtime.prebuilt.collect`) and written as the graph's bundle for the target
(:func:`nbx_core.graph.bundle.write`).

Fused kernels are Python source that fusion generates from the plan (:mod:`nbx_core.runtime.fusion`):
the same plan gives the same source, so a GPU regenerates it and finds its binary in the bundle
under the same hash; the bundle holds no code.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .. import backend
from .. import dtypes as D
from ..device import CPU
from ..errors import BackendError
from ..runtime import prebuilt
from ..tensor import empty_tensor
from . import bundle as _bundle
from .format import Graph
from .runner import Program
from .validate import load_weights, read_graph


def _inputs(graph: Graph, dims: dict[str, int]) -> dict[str, Any]:
    """Zero-filled inputs of the declared dtypes at these sizes (the aot backend computes nothing)."""
    return {
        spec.name: empty_tensor(
            [d if isinstance(d, int) else d(dims) for d in spec.shape], D.from_name(spec.dtype), CPU, zero=True
        )
        for spec in graph.inputs
    }


def build(
    path: str | Path,
    target: str,
    sizes: Mapping[str, Sequence[int]] | None = None,
    *,
    on_signature: Callable[[int, dict[str, int]], None] | None = None,
    on_kernel: Callable[[prebuilt.Variant], None] | None = None,
) -> _bundle.Bundle:
    """Compile every kernel the plans of ``path`` launch for each signature
    (:func:`~nbx_core.graph.bundle.signatures` of ``sizes``) and write them as the graph's bundle for
    ``target``; returns the bundle written.

    Needs this process to run the aot backend for ``target`` (``NBX_BACKEND=aot``,
    ``NBX_AOT_TARGET``), which ``nbx compile`` arranges. ``on_signature(i, dims)`` is called before
    each signature, ``on_kernel(variant)`` after each new variant (progress).
    """
    if backend.current() != "aot" or prebuilt.current_target() != target:
        raise BackendError(
            f"building a bundle for {target} needs the aot backend for it (NBX_BACKEND=aot, "
            f"NBX_AOT_TARGET={target}); this process runs {backend.current()}: use nbx compile"
        )
    graph = read_graph(path)
    dims_list = _bundle.signatures(graph, sizes or {})
    program = Program(graph, load_weights(graph))  # what load() makes: planning and fusion on
    with prebuilt.collect(on_kernel) as found:
        for i, dims in enumerate(dims_list):
            if on_signature is not None:
                on_signature(i, dims)
            program.check_compiles(**_inputs(graph, dims))
    kernels = {digest: (_entry(v), v.files) for digest, v in found.items()}
    return _bundle.write(
        graph.path,
        target,
        prebuilt.triton_version(),
        [_bundle.signature_record(graph, dims) for dims in dims_list],
        kernels,
    )


def _entry(variant: prebuilt.Variant) -> dict[str, Any]:
    return {
        "kernel": variant.kernel,
        "source": variant.source,
        "params": variant.params,
        "signature": variant.signature,
        "constexprs": variant.constexprs,
        "attrs": variant.attrs,
        "num_warps": variant.num_warps,
        "num_stages": variant.num_stages,
        "num_ctas": variant.num_ctas,
        "shared": variant.shared,
    }
