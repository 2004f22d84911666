"""Recording what a run does to the device, so that it can be replayed without the host work.

While a :class:`Recorder` is active on a thread, every kernel launch (through
:mod:`nbx_core.launch`), every allocation and every host access to memory is noted. What comes out
(:class:`Trace`) is the run as the device saw it: a list of launches and zero-fills over storages,
each storage classed by where it came from (an input, memory allocated during the run and freed
before it ended, memory that outlived it, memory the host wrote). Whatever the host computed to
get there (argument checks, broadcasting, type promotion, tile choices) is not in it: a replay
binds new storages and launches.

A run that the host steers by device values (it reads a kernel's output, or an input, back) cannot
be replayed: the recorder keeps the first such event as :attr:`Trace.unreplayable`.
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..memory import events
from ..tensor import NBXTensor


@dataclass(frozen=True)
class TensorArg:
    """A tensor argument of a launch: ``storage`` (an index into :attr:`Trace.storages`) and the view."""

    storage: int
    offset: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    dtype: Any


def tensor_args(value: Any) -> list[TensorArg]:
    """Every TensorArg in a launch argument (tuples are walked: kernels take tensors inside them)."""
    if type(value) is TensorArg:
        return [value]
    if type(value) is tuple:
        return [a for v in value for a in tensor_args(v)]
    return []


def bind(value: Any, storage: Any) -> Any:
    """``value`` with each TensorArg replaced by an NBXTensor over ``storage(index)``."""
    if type(value) is TensorArg:
        return NBXTensor(storage(value.storage), value.shape, value.strides, value.offset, value.dtype)
    if type(value) is tuple:
        return tuple(bind(v, storage) for v in value)
    return value


@dataclass
class Launch:
    kernel: Any
    grid: tuple[int, ...]
    args: tuple[Any, ...]  # TensorArg where the run passed a tensor
    kwargs: dict[str, Any]
    where: int = -1  # the graph node that launched it (Recorder.where at the time)
    nodes: tuple[int, ...] = ()  # for a fused launch, every node it stands for


@dataclass
class Zero:
    """Fill storage ``storage`` with zero bytes (an allocation asked for zeroed memory)."""

    storage: int


@dataclass
class StorageInfo:
    """One storage a run touched. ``kind``: "input" (``index``: which input), "temp" (allocated in the
    run and freed in it, alive over op positions [start, end)), "kept" (allocated in the run and alive
    after it), "const" (anything else: weights, host-written memory, caches made before the run)."""

    kind: str
    nbytes: int
    device: Any
    index: int = -1
    start: int = 0
    end: int = -1
    zero: bool = False
    ref: Any = None  # the storage itself, for "const" and "kept"


@dataclass
class Trace:
    ops: list[Launch | Zero] = field(default_factory=list)
    storages: list[StorageInfo] = field(default_factory=list)
    checks: list[Any] = field(default_factory=list)
    reserved: Any = None  # the flag slots of its checks (nbx_core.runtime.checks.Reserved)
    unreplayable: str | None = None


class Recorder:
    """Records one run on this thread: ``with Recorder(inputs) as rec: ...; trace = rec.trace``."""

    def __init__(self, inputs: list[Any], known: Iterable[Any] = ()) -> None:
        self.trace = Trace()
        self._ids: dict[int, int] = {}  # id(storage) -> index, for storages alive or held
        self._hold: list[Any] = []  # strong refs to storages classed "const" (their ids stay valid)
        self._live_temps: dict[int, Any] = {}  # index -> weakref of an allocation made in the run
        self._touched: set[int] = set()
        for i, st in enumerate(inputs):
            if id(st) not in self._ids:
                self._new(st, StorageInfo("input", st.nbytes, st.device, index=i))
                self._hold.append(st)
        for st in known:  # memory the program holds (its weights): read-only constants of the run
            self._index(st)
        self._prev: Any = None
        self.where = -1

    # -- context -----------------------------------------------------------------------------
    def __enter__(self) -> Recorder:
        self._prev = events.observer()
        events.set_observer(self)
        return self

    def __exit__(self, *exc: object) -> None:
        # Triton's interpreter leaves each launch's storages in a reference cycle: collect them before
        # classing storages as kept. A GPU run leaves none, and a full collection costs it time.
        from .traits import TRAITS  # here: importing it chooses the backend, which a recording has done

        if TRAITS.interpreted:
            gc.collect()
        events.set_observer(self._prev)
        end = len(self.trace.ops)
        for index, ref in self._live_temps.items():
            st = ref()
            info = self.trace.storages[index]
            if st is not None:  # outlived the run: an output, or kept by a cache
                info.kind, info.ref = "kept", st
            info.end = end
        self._live_temps.clear()

    # -- events from memory --------------------------------------------------------------------
    def _new(self, st: Any, info: StorageInfo) -> int:
        index = len(self.trace.storages)
        self.trace.storages.append(info)
        self._ids[id(st)] = index
        return index

    def allocated(self, storage: Any, zero: bool) -> None:
        if storage.nbytes == 0:
            return
        index = self._new(
            storage, StorageInfo("temp", storage.nbytes, storage.device, start=len(self.trace.ops), zero=zero)
        )
        key = id(storage)
        self._live_temps[index] = weakref.ref(storage, lambda _: self._freed(index, key))
        if zero:
            self.trace.ops.append(Zero(index))

    def _freed(self, index: int, key: int) -> None:
        if self._live_temps.pop(index, None) is not None:
            self.trace.storages[index].end = len(self.trace.ops)
            if self._ids.get(key) == index:
                del self._ids[key]

    def host_wrote(self, storage: Any) -> None:
        index = self._index(storage)
        info = self.trace.storages[index]
        if info.kind == "input":
            self._unreplayable("the host wrote into an input")
        elif info.kind != "const":
            # Memory the host fills during the run (a table the launcher uploads) holds the same bytes
            # at every replay of the same shapes: keep it.
            self._live_temps.pop(index, None)
            info.kind, info.ref = "const", storage
            self._hold.append(storage)

    def host_read(self, storage: Any, what: str) -> None:
        index = self._ids.get(id(storage))
        if index is not None and (index in self._touched or self.trace.storages[index].kind == "input"):
            self._unreplayable(f"the host read device values back ({what})")

    def exported(self, storage: Any) -> None:
        self._unreplayable("a kernel handed memory to other code through DLPack")

    def check_results(self, values: Any, where: str) -> None:
        """A node's results must lie in memory the run knows: allocated through NBX, filled by the
        host, or the program's own; memory from elsewhere (another library's) is not replayable."""
        if isinstance(values, NBXTensor):
            if id(values._storage) not in self._ids:
                self._unreplayable(f"{where} returned memory NBX did not allocate")
        elif isinstance(values, list | tuple):
            for v in values:
                self.check_results(v, where)

    def _unreplayable(self, reason: str) -> None:
        if self.trace.unreplayable is None:
            self.trace.unreplayable = reason

    # -- events from the launcher ----------------------------------------------------------------
    def _index(self, storage: Any) -> int:
        index = self._ids.get(id(storage))
        if index is None:  # memory made before the run (weights, caches) or by the host in it
            index = self._new(storage, StorageInfo("const", storage.nbytes, storage.device, ref=storage))
            self._hold.append(storage)
        return index

    def launched(self, kernel: Any, grid: tuple[int, ...], args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        out = tuple(self._arg(a) for a in args)
        self.trace.ops.append(Launch(kernel, grid, out, dict(kwargs), self.where, (self.where,)))

    def _arg(self, a: Any) -> Any:
        if type(a) is NBXTensor:
            index = self._index(a._storage)
            self._touched.add(index)
            return TensorArg(index, a._offset, a._shape, a._strides, a.dtype)
        if type(a) is tuple:
            return tuple(self._arg(v) for v in a)
        return a

    def tensor_ref(self, t: NBXTensor) -> TensorArg:
        """Where ``t`` lies, in the trace's terms (for a run's outputs)."""
        return TensorArg(self._index(t._storage), t._offset, t._shape, t._strides, t.dtype)


def active() -> Recorder | None:
    """The recorder of this thread, if one is recording."""
    obs = events.observer()
    return obs if isinstance(obs, Recorder) else None
