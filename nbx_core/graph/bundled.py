"""Running a graph with its kernel bundle: what :func:`nbx_core.graph.load` does on the cuda backend.

:func:`open_bundle` decides, when the graph loads and before anything runs, whether the bundle for
this process's target can serve its kernels:

- a corrupt or truncated bundle (:func:`nbx_core.graph.bundle.read`) is a BundleError;
- a bundle built for another target, another Triton or another graph.json cannot serve anything:
  a BundleWarning says so and the kernels compile at run time, as without a bundle;
- with ``NBX_REQUIRE_BUNDLE=1`` (a deployment that must never compile), a graph with no usable bundle
  is a BundleError instead.

A usable bundle's kernels are handed to Triton (:func:`nbx_core.runtime.prebuilt.serve`) and the
program is a :class:`BundledProgram`, whose runs report each kernel Triton still has to compile.
Making one starts building its kernels' host launchers in the background
(:func:`nbx_core.runtime.launchers.warm`); its first run waits for them.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import Any

from ..errors import BundleError
from ..runtime import launchers, prebuilt
from . import bundle as _bundle
from .format import Graph
from .runner import Program


class BundledProgram(Program):
    """A :class:`Program` whose graph ships its kernels: a variant its bundle holds is launched from
    the stored binary; one it lacks is compiled by Triton after a BundleWarning that names it (a
    BundleError with ``NBX_REQUIRE_BUNDLE=1``)."""

    def __init__(self, bundle: _bundle.Bundle, graph: Graph, weights: Mapping[str, Any], **options: Any) -> None:
        self._launchers = launchers.warm(list(bundle.kernels.values()))  # while the weights move to the device
        super().__init__(graph, weights, **options)
        self.bundle = bundle

    def run(self, inputs: Mapping[str, Any], *, planned: bool = True) -> dict[str, Any]:
        self._launchers.wait()
        with self._scope(inputs):
            return super().run(inputs, planned=planned)

    def check_compiles(self, *args: Any, **kwargs: Any) -> None:
        self._launchers.wait()
        with self._scope(self._named(args, kwargs)):
            super().check_compiles(*args, **kwargs)

    def _scope(self, inputs: Mapping[str, Any]) -> AbstractContextManager[None]:
        return prebuilt.scope(str(self.graph.path), _shapes(inputs), self.bundle.target)


def _shapes(inputs: Mapping[str, Any]) -> str:
    return ", ".join(f"{name} {list(getattr(value, 'shape', ()))}" for name, value in inputs.items()) or "no inputs"


def open_bundle(graph: Graph, target: str | None = None) -> _bundle.Bundle | None:
    """The verified bundle that will serve ``graph``'s kernels for ``target`` (default: this process's
    target), already handed to Triton; None when there is none to use (see the module docstring)."""
    target = target or prebuilt.current_target()
    strict = prebuilt.require()
    where = graph.path
    fix = f"run nbx compile {where} --target {target} with the Triton and NBX of this process"
    if not _bundle.has_bundle(where):
        if strict:
            raise BundleError(
                f"{where}: has no kernel bundle (kernels/), and NBX_REQUIRE_BUNDLE=1 forbids compiling "
                f"kernels at run time: {fix}"
            )
        return None
    found = _bundle.read(where, target)
    if found is None:
        have = ", ".join(_bundle.targets(where)) or "none"
        problem = f"its kernel bundle has no kernels for this GPU's {target} (it has: {have})"
    elif found.triton != prebuilt.triton_version():
        problem = (
            f"its kernel bundle for {target} was built with Triton {found.triton}, this process runs Triton "
            f"{prebuilt.triton_version()}"
        )
    elif found.graph_sha256 != _bundle.graph_sha256(where):
        problem = "its kernel bundle was built for another version of graph.json"
    else:
        prebuilt.serve(found.groups())
        return found
    if strict:
        raise BundleError(f"{where}: {problem}, and NBX_REQUIRE_BUNDLE=1 forbids compiling kernels at run time: {fix}")
    warnings.warn(
        f"{where}: {problem}, so its kernels compile at run time: {fix}", prebuilt.BundleWarning, stacklevel=3
    )
    return None
