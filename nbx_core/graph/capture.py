"""CUDA-graph capture of a Program for fixed input shapes, and its replay.

``captured = capture(program, x=..., mask=...)`` runs the program once to warm up, then records
one run on a private stream into a CUDA graph. ``captured(x=..., mask=...)`` copies the new inputs
into the captured input buffers, replays the graph and returns the output tensors, which are the
same tensors at every replay (each replay overwrites them: copy what you keep).

A program whose ops read device values back on the host during the run (data-dependent sizes,
``item()``, in-place index writes that check their indices first) cannot be captured; capture
fails with a GraphError naming the cause. Device-side checks of the captured ops (out-of-range
indices, :mod:`nbx_core.runtime.checks`) are re-armed at every replay and raise at the next host wait.
Shapes, dtypes and devices of later inputs must equal the captured ones.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

from ..errors import DeviceError, GraphError, GraphInputError
from ..memory import cuda as _cuda
from ..ops.copy import copy_
from ..runtime import checks
from ..tensor import NBXTensor

_ids = itertools.count(1)


class CapturedProgram:
    """A Program recorded as one CUDA graph; call it like the Program (keywords or positions)."""

    def __init__(
        self,
        program: Any,
        inputs: dict[str, NBXTensor],
        outputs: dict[str, NBXTensor],
        graph: Any,
        exec_: Any,
        stream: Any,
        device_checks: tuple[list[Any], Any],
    ) -> None:
        self.program = program
        self._inputs = inputs
        self._outputs = outputs
        self._graph = graph
        self._exec = exec_
        self._stream = stream
        self._checks, self._reserved = device_checks  # the checks and their flag slots

    def run(self, inputs: Mapping[str, Any]) -> dict[str, NBXTensor]:
        """Replay with ``inputs`` (name -> tensor); returns the captured output tensors."""
        file = self.program.graph.file
        if set(inputs) != set(self._inputs):
            raise GraphInputError(
                f"{file}: a captured program takes exactly its inputs "
                f"({', '.join(self._inputs)}), got {', '.join(sorted(inputs))}"
            )
        for name, value in inputs.items():
            static = self._inputs[name]
            value = self.program._as_input(next(s for s in self.program.inputs if s.name == name), value)
            if value.shape != static.shape or value.dtype is not static.dtype:
                raise GraphInputError(
                    f"{file}: input {name!r} was captured as {static.dtype} {static.shape}, got {value.dtype} "
                    f"{value.shape}: capture again for new shapes"
                )
            if value.data_ptr() != static.data_ptr():
                copy_(static, value)
        _cuda.check(_cuda._driver().cuGraphLaunch(self._exec, _cuda.current_stream()), "cuGraphLaunch")
        checks.rearm(self._checks)
        return dict(self._outputs)

    def __call__(self, *args: Any, **kwargs: Any) -> NBXTensor | tuple[NBXTensor, ...]:
        names = [s.name for s in self.program.inputs]
        given = dict(zip(names, args, strict=False))
        given.update(kwargs)
        results = self.run(given)
        values = tuple(results[o.name] for o in self.program.outputs)
        return values[0] if len(values) == 1 else values


def capture(program: Any, *args: Any, **kwargs: Any) -> CapturedProgram:
    """Record one run of ``program`` (a :class:`~nbx_core.graph.runner.Program`, whose module imports
    this one) on these inputs as a CUDA graph (cuda backend only)."""
    from ..backend import current

    if current() != "cuda" or program.device.type != "cuda":
        raise DeviceError("capture: CUDA graphs need the cuda backend and a program on a cuda device")
    names = [s.name for s in program.inputs]
    given = dict(zip(names, args, strict=False))
    given.update(kwargs)
    missing = [n for n in names if n not in given]
    if missing:
        raise GraphInputError(f"{program.graph.file}: capture needs every input; missing {missing}")
    static = {s.name: program._as_input(s, given[s.name]).clone() for s in program.inputs}
    program.run(static, planned=False)  # compile every kernel and settle lazily built state outside the capture
    _cuda.synchronize(program.device)
    driver = _cuda._driver()
    stream = _cuda.check(driver.cuStreamCreate(1), "cuStreamCreate")  # 1: non-blocking
    mode = driver.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
    ident = next(_ids)
    with _cuda.use_stream(int(stream)):
        _cuda.check(driver.cuStreamBeginCapture(stream, mode), "cuStreamBeginCapture")
        _cuda.set_capture_id(ident)
        try:
            outputs = program.run(static, planned=False)
        except Exception as e:
            driver.cuStreamEndCapture(stream)
            checks.captured_checks(ident)
            raise GraphError(
                f"{program.graph.file}: cannot capture as a CUDA graph: an op synchronises with the host or "
                f"uses the default stream during the run ({type(e).__name__}: {e}); run it uncaptured"
            ) from e
        finally:
            _cuda.set_capture_id(None)
        graph = _cuda.check(driver.cuStreamEndCapture(stream), "cuStreamEndCapture")
    flags = driver.CUgraphInstantiate_flags.CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH
    # CUDA 12 folded cuGraphInstantiateWithFlags into cuGraphInstantiate; bindings have one or both.
    instantiate = getattr(driver, "cuGraphInstantiateWithFlags", None) or driver.cuGraphInstantiate
    exec_ = _cuda.check(instantiate(graph, flags), "cuGraphInstantiate")
    return CapturedProgram(program, static, outputs, graph, exec_, stream, checks.captured_checks(ident))
