"""A plan replayed as one CUDA graph.

The graph is captured over memory of its own: copies of the inputs' bytes, and one block for the
temporaries and the outputs' storages (:meth:`Plan._graph_storages`). A run copies each input into
that memory and launches the graph. Its outputs are lent the graph's bytes
(:class:`~nbx_core.memory.cuda.LentStorage`): the next run first moves every output still alive to
memory of its own, so callers may keep what a run returns, and an output dropped before then
costs no copy. Everything is queued on the current stream; the graph's private capture stream is
used only while capturing.
"""

from __future__ import annotations

import itertools
import weakref
from collections.abc import Sequence
from typing import Any

from ..memory import allocate
from ..memory import cuda as _cuda
from ..runtime.kernels.descriptors import descriptor_memory
from ..tensor import NBXTensor
from .bound import BoundOps

_ids = itertools.count(1 << 30)


class PlanGraph:
    """``plan`` captured as a CUDA graph on copies of ``inputs``, its temporaries, weights and
    outputs in ``storages`` (by storage index); :meth:`replay` runs it."""

    def __init__(self, plan: Any, inputs: Sequence[NBXTensor], storages: Sequence[Any]) -> None:
        driver = _cuda._driver()
        self.plan = plan
        self.static: list[Any] = list(storages)
        self.copies_in: list[tuple[int, int, int]] = []  # (storage index, first byte, bytes)
        for index, pos in plan.inputs:
            t = inputs[pos]
            lo = t._offset * t.dtype.itemsize
            extent = (
                (1 + sum((n - 1) * s for n, s in zip(t._shape, t._strides, strict=True))) * t.dtype.itemsize
                if t.numel()
                else 0
            )
            self.static[index] = allocate(lo + extent, plan.device)
            self.copies_in.append((index, lo, extent))
        self.outputs = [(index, nbytes) for index, nbytes, _ in plan.fresh]
        self._lent: list[weakref.ref[_cuda.LentStorage]] = []  # the last run's outputs
        stream = _cuda.check(driver.cuStreamCreate(1), "cuStreamCreate")  # 1: non-blocking
        mode = driver.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
        ops = BoundOps(plan, self.static, skip_zero=frozenset())  # the graph zeroes its outputs itself
        # The launch before the capture reads the inputs' values: indices that kernels check and follow
        # must be these, not whatever the new buffers held. The inputs come from the current stream.
        _cuda.check(driver.cuStreamSynchronize(_cuda.current_stream()), "cuStreamSynchronize")
        for (index, lo, nbytes), (_, pos) in zip(self.copies_in, plan.inputs, strict=True):
            if nbytes:
                _cuda.check(
                    driver.cuMemcpyDtoDAsync(
                        self.static[index].ptr + lo, inputs[pos]._storage.ptr + lo, nbytes, stream
                    ),
                    "cuMemcpyDtoDAsync",
                )
        with _cuda.use_stream(int(stream)), descriptor_memory(plan.device, plan.descriptor_blocks):
            ops.launch(self.static)  # loads every kernel before the capture
            _cuda.check(driver.cuStreamSynchronize(stream), "cuStreamSynchronize")
            _cuda.check(driver.cuStreamBeginCapture(stream, mode), "cuStreamBeginCapture")
            _cuda.set_capture_id(next(_ids))
            try:
                ops.launch(self.static)
            except Exception:
                driver.cuStreamEndCapture(stream)
                raise
            finally:
                _cuda.set_capture_id(None)
            graph = _cuda.check(driver.cuStreamEndCapture(stream), "cuStreamEndCapture")
        flags = driver.CUgraphInstantiate_flags.CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH
        instantiate = getattr(driver, "cuGraphInstantiateWithFlags", None) or driver.cuGraphInstantiate
        self.exec = _cuda.check(instantiate(graph, flags), "cuGraphInstantiate")
        self.graph, self.stream = graph, stream

    def replay(self, st: list[Any]) -> None:
        """Run the graph for the storages ``st`` of one run (inputs bound); sets its outputs' storages."""
        driver = _cuda._driver()
        stream = _cuda.current_stream()
        for ref in self._lent:  # before anything reads an input: the last run's output may be one
            kept = ref()
            if kept is not None:
                kept.settle()
        for index, lo, nbytes in self.copies_in:
            if nbytes:
                _cuda.check(
                    driver.cuMemcpyDtoDAsync(self.static[index].ptr + lo, st[index].ptr + lo, nbytes, stream),
                    "cuMemcpyDtoDAsync",
                )
        _cuda.check(driver.cuGraphLaunch(self.exec, stream), "cuGraphLaunch")
        lent = []
        for index, nbytes in self.outputs:
            static = self.static[index]
            st[index] = out = _cuda.LentStorage(static.ptr, nbytes, static.device, owner=static)
            lent.append(weakref.ref(out))
        self._lent = lent
