"""Execution plans: a Program's run for one input signature, replayed as launches over fixed memory.

The first run of a signature (dtypes, shapes, strides, offsets and alignment of the inputs) runs
node by node under a :class:`~nbx_core.trace.Recorder`. What it records becomes a :class:`Plan`:

- every launch with its arguments bound: the host work that chose them (argument checks,
  broadcasting, type promotion, tile choices, views) is not repeated;
- the temporary buffers placed in one arena from their lifetimes (:mod:`nbx_core.arena`), or in
  the bytes of an output that is written after they die;
- the outputs allocated fresh at every run, so a caller may keep them (a CUDA graph's run lends
  them the graph's memory until the next run: :mod:`nbx_core.graph.cudagraph`).

A later run of the signature binds the inputs and launches. On the cuda backend the launches go
straight to the compiled kernels, or replay as one CUDA graph (:meth:`Plan.use_cuda_graph`). A
run the host steers by device values (data-dependent sizes, ``item()``), that draws random
numbers or that mutates the program's buffers is not planned; the program then runs node by node
and :attr:`Unplanned.reason` says why.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..device import Device
from ..errors import GraphError
from ..memory import allocate
from ..runtime import arena as _arena
from ..runtime import checks
from ..runtime.launch import BACKEND, launch
from ..runtime.trace import Launch, TensorArg, Trace, Zero, bind, tensor_args
from ..tensor import NBXTensor
from .bound import BoundOps
from .cudagraph import PlanGraph
from .hoist import hoist

HOSTED_MIN_BYTES = 8 << 20
"""The arena bytes a run must save before outputs host temporaries (:meth:`Plan._hosted_in_outputs`)."""


def signature(tensors: Sequence[NBXTensor]) -> tuple:
    """What a plan depends on of its inputs: per input its dtype, shape, strides, offset, device and
    16-byte alignment (kernels specialise on it), and which inputs share a storage."""
    first: dict[int, int] = {}
    return tuple(
        (
            t.dtype,
            t._shape,
            t._strides,
            t._offset,
            t._storage.device,
            t._data_ptr() % 16 == 0,
            first.setdefault(id(t._storage), i),
        )
        for i, t in enumerate(tensors)
    )


_RANDOM_OPS = frozenset(
    f"aten::{name}"
    for name in (
        "rand",
        "rand_like",
        "randn",
        "randn_like",
        "randint",
        "randint_like",
        "randperm",
        "bernoulli",
        "normal",
        "uniform",
        "multinomial",
        "native_dropout",
        "rrelu",
        "rrelu_with_noise",
        "exponential",
        "geometric",
        "log_normal",
        "cauchy",
        "random",
    )
)


def draws_random(op: str) -> bool:
    """Whether ATen op ``op`` draws from the random stream, whose position moves at every call (a
    replay would repeat the recorded draws)."""
    return op.split(".")[0].rstrip("_") in _RANDOM_OPS


@dataclass(frozen=True)
class Unplanned:
    """A signature whose runs go node by node, and why."""

    reason: str


class Plan:
    """Launches over fixed memory for one input signature; see the module docstring."""

    def __init__(
        self,
        trace: Trace,
        outputs: Sequence[TensorArg],
        device: Device,
        fused: dict[str, int] | None = None,
        fixed: frozenset[int] = frozenset(),
    ) -> None:
        self.device = device
        self.fused = fused or {}
        self.graph_reason: str | None = None  # why the plan is not replayed as a CUDA graph, if it was tried
        # Launches of nodes that only the input shapes determine run here, once (nbx_core.graph.hoist).
        hoisted = hoist(trace.ops, trace.storages, fixed, device)
        storages = hoisted.storages
        self.hoisted_launches, self.hoisted_bytes = hoisted.launches, hoisted.kept_bytes
        self.ops: list[Launch | Zero] = [
            op for op in hoisted.ops if isinstance(op, Launch) or storages[op.storage].kind != "const"
        ]
        self.outputs = tuple(outputs)
        self.checks = trace.checks
        self._reserved = trace.reserved  # the checks' flag slots: given back when the plan goes
        used = {a.storage for op in self.ops if isinstance(op, Launch) for a in tensor_args(op.args)}
        used |= {op.storage for op in self.ops if isinstance(op, Zero)}
        out_storages = {o.storage for o in self.outputs}
        self.inputs: list[tuple[int, int]] = []  # (storage index, input position)
        self.fresh: list[tuple[int, int, bool]] = []  # (storage index, bytes, zeroed): allocated per run
        self.const: dict[int, Any] = {}
        temps: list[int] = []
        for index, info in enumerate(storages):
            if info.kind == "input":
                self.inputs.append((index, info.index))
            elif info.kind == "kept" and index in out_storages:
                self.fresh.append((index, info.nbytes, info.zero))
            elif info.kind == "temp" and index in used:
                temps.append(index)
            elif info.ref is not None:
                self.const[index] = info.ref
        # A temporary lives from the first op that touches it to the last: fusion moves launches, so
        # the lifetimes are those of the final op list, not the recorded allocation and free.
        first: dict[int, int] = {}
        last: dict[int, int] = {}
        for pos, op in enumerate(self.ops):
            for s in tensor_args(op.args) if isinstance(op, Launch) else ():
                first.setdefault(s.storage, pos)
                last[s.storage] = pos
            if isinstance(op, Zero):
                first.setdefault(op.storage, pos)
                last[op.storage] = pos
        self._lifetimes = {i: (first[i], last[i] + 1) for i in temps}
        self._lifetimes.update({i: (first.get(i, 0), len(self.ops)) for i, _, _ in self.fresh})
        self._nbytes = {i: storages[i].nbytes for i in self._lifetimes}
        self.hosted = self._hosted_in_outputs(temps, first)
        in_arena = [i for i in temps if i not in self.hosted]
        offsets, self.arena_bytes = _arena.place(
            [self._nbytes[i] for i in in_arena], [self._lifetimes[i] for i in in_arena]
        )
        self.slots = {index: (off, self._nbytes[index]) for index, off in zip(in_arena, offsets, strict=True)}
        self._fresh_zeroed = frozenset(index for index, _, zero in self.fresh if zero)
        self.nstorages = len(storages)
        self._memory: dict[Any, _Memory] = {}
        self._lock = threading.Lock()
        self.descriptor_blocks: dict[int, Any] = {}  # tensor-descriptor memory of the launches, by size
        self.cuda_graph: Any = None
        self.graph_bytes = 0  # the CUDA graph's block (temporaries and outputs), once captured

    def _hosted_in_outputs(self, temps: list[int], first: dict[int, int]) -> dict[int, tuple[int, int]]:
        """Temporaries that live in an output's bytes: temporary -> (output storage, offset).

        A run allocates its outputs before launching, and a language model's logits are written
        last: the temporaries that die before an output's first write can use its bytes, so the
        run's peak is not the arena plus the logits. Such temporaries change address with every
        run (each run's outputs are new), which costs a pointer patch per launch that reads them;
        the outputs host them only where that shrinks the arena by :data:`HOSTED_MIN_BYTES`.
        Outputs that must start zeroed host nothing."""
        hosted: dict[int, tuple[int, int]] = {}
        for out, nbytes, zero in sorted(self.fresh, key=lambda f: -f[1]):
            start = first.get(out)
            if zero or start is None:
                continue
            guests = [t for t in temps if t not in hosted and self._lifetimes[t][1] <= start]
            if not guests:
                continue
            offsets, _ = _arena.place([self._nbytes[t] for t in guests], [self._lifetimes[t] for t in guests])
            hosted.update(
                {t: (out, off) for t, off in zip(guests, offsets, strict=True) if off + self._nbytes[t] <= nbytes}
            )
        if not hosted:
            return {}
        size = _arena.place([self._nbytes[t] for t in temps], [self._lifetimes[t] for t in temps])[1]
        rest = [t for t in temps if t not in hosted]
        smaller = _arena.place([self._nbytes[t] for t in rest], [self._lifetimes[t] for t in rest])[1]
        return hosted if size - smaller >= HOSTED_MIN_BYTES else {}

    # -- running -------------------------------------------------------------------------------------
    def run(self, inputs: Sequence[NBXTensor]) -> list[NBXTensor]:
        """Launch the plan on ``inputs`` (tensors of the planned signature); the outputs, fresh or
        (a CUDA graph's) lent the graph's memory until the next run."""
        with self._lock:
            graph = self.cuda_graph is not None
            mem = None if graph else self._memory_here()
            st = [None] * self.nstorages if mem is None else list(mem.storages)
            for index, pos in self.inputs:
                st[index] = inputs[pos]._storage
            if not graph:  # a graph lends its outputs its own bytes
                for index, nbytes, zero in self.fresh:
                    st[index] = allocate(nbytes, self.device, zero=zero)
                for index, (out, off) in self.hosted.items():
                    st[index] = _sub_storage(st[out], off, self._nbytes[index])
            if mem is None:
                self.cuda_graph.replay(st)
            elif BACKEND == "cuda":
                from ..runtime.kernels.descriptors import descriptor_memory

                with descriptor_memory(self.device, self.descriptor_blocks):
                    mem.bound(self, st).launch(st)
            else:
                self._launch_each(st)
            outs = [NBXTensor(st[o.storage], o.shape, o.strides, o.offset, o.dtype) for o in self.outputs]
        if self.checks:
            checks.rearm(self.checks)
            if BACKEND != "cuda":
                checks.verify()
        return outs

    def _launch_each(self, st: list[Any]) -> None:
        for op in self.ops:
            if isinstance(op, Zero):
                if op.storage not in self._fresh_zeroed:
                    _zero(st[op.storage])
                continue
            launch(op.kernel, op.grid, *bind(op.args, st.__getitem__), **op.kwargs)

    def use_cuda_graph(self, inputs: Sequence[NBXTensor]) -> None:
        """Replay the plan as one CUDA graph from now on (cuda backend): captured on copies of
        ``inputs``; each run then copies its inputs in, and its outputs borrow the graph's memory
        until the next run (:mod:`nbx_core.graph.cudagraph`)."""
        if BACKEND != "cuda":
            raise GraphError("CUDA graphs need the cuda backend")
        with self._lock:
            self.cuda_graph = PlanGraph(self, inputs, self._graph_storages())

    def _graph_storages(self) -> list[Any]:
        """The storages a CUDA graph of the plan runs on: the weights, and one block holding the
        temporaries and the outputs. An output lives from its first write to the end of the run,
        so temporaries that die before that reuse its bytes (a language model's logits hold most of
        the run's temporaries before the last matrix product writes them)."""
        indices = list(self._lifetimes)
        offsets, self.graph_bytes = _arena.place(
            [self._nbytes[i] for i in indices], [self._lifetimes[i] for i in indices]
        )
        block = allocate(max(self.graph_bytes, 1), self.device)
        storages: list[Any] = [None] * self.nstorages
        for index, off in zip(indices, offsets, strict=True):
            storages[index] = _sub_storage(block, off, self._nbytes[index])
        for index, ref in self.const.items():
            storages[index] = ref
        return storages

    def _memory_here(self) -> _Memory:
        key = _stream_key()
        mem = self._memory.get(key)
        if mem is None:
            mem = self._memory[key] = _Memory(self)
        return mem

    def describe(self) -> dict[str, Any]:
        """What the plan launches (kernels by name, fusions), and the memory it holds."""
        kernels: dict[str, int] = {}
        for op in self.ops:
            if isinstance(op, Launch):
                name = kernel_name(op.kernel)
                kernels[name] = kernels.get(name, 0) + 1
        return {
            "launches": sum(kernels.values()),
            "zero_fills": sum(isinstance(op, Zero) for op in self.ops),
            "kernels": dict(sorted(kernels.items(), key=lambda kv: -kv[1])),
            "fused": self.fused,
            "hoisted_launches": self.hoisted_launches,
            "hoisted_bytes": self.hoisted_bytes,
            "arena_bytes": self.arena_bytes,
            "temporaries": len(self.slots) + len(self.hosted),
            "temporaries_in_outputs": len(self.hosted),
            "cuda_graph": self.cuda_graph is not None,
            **({"cuda_graph_bytes": self.graph_bytes} if self.cuda_graph is not None else {}),
            **({"cuda_graph_reason": self.graph_reason} if self.graph_reason else {}),
        }


def kernel_name(kernel: Any) -> str:
    return getattr(kernel, "__name__", None) or kernel.fn.__name__


class _Memory:
    """A plan's arena for one stream (two streams must not share temporaries), with the storages
    of every storage index that does not change between runs, and on cuda the bound launches."""

    def __init__(self, plan: Plan) -> None:
        self.block = allocate(max(plan.arena_bytes, 1), plan.device)
        self.storages: list[Any] = [None] * plan.nstorages
        for index, (off, nbytes) in plan.slots.items():
            self.storages[index] = _sub_storage(self.block, off, nbytes)
        for index, ref in plan.const.items():
            self.storages[index] = ref
        self._bound: BoundOps | None = None

    def bound(self, plan: Plan, st: list[Any]) -> BoundOps:
        """The bound launches, compiled from the storages of the first run (``st``): later runs bind
        inputs and outputs of the same alignment, which the signature guarantees."""
        if self._bound is None:
            self._bound = BoundOps(plan, st)
        return self._bound


def _stream_key() -> Any:
    if BACKEND == "cuda":
        from ..memory import cuda

        return cuda.current_stream()
    return None


def _sub_storage(block: Any, offset: int, nbytes: int) -> Any:
    if block.device.type == "cpu":
        from ..memory.host import HostStorage

        return HostStorage(block.array[offset : offset + nbytes])
    from ..memory.cuda import CudaStorage

    return CudaStorage(block.ptr + offset, nbytes, block.device, owner=block)


def _zero(storage: Any) -> None:
    if storage.device.type == "cpu":
        storage.array.fill(0)
        return
    from ..memory import cuda

    cuda.check(cuda._driver().cuMemsetD8Async(storage.ptr, 0, storage.nbytes, cuda.current_stream()), "cuMemsetD8Async")
