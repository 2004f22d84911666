"""Checks that kernels make on the device, read by the host when it next waits for the device.

A kernel that validates the data it reads (an index out of range) cannot stop itself: it raises a
flag in device memory and carries on safely (a bad index reads element 0, nothing outside a
tensor is touched). Reading the flag right after the launch would make every such op wait for the
GPU, so on the cuda backend the read is deferred, as torch defers its device-side asserts:

- each launch takes a *slot* (:func:`slot`), two int64 ``[raised, value]`` in a per-device table,
  and registers the error it stands for (:func:`raise_later`);
- the table is read when the host waits for the device anyway: any copy to the host (``numpy()``,
  ``tolist()``, ``item()``), ``nbx_core.memory.cuda.synchronize``, :func:`verify`, and when the
  table is full;
- the earliest raised slot raises its error there. The results of that op (and of ops that
  consumed them) hold element 0 where an index was bad: discard them.

On the interpreter backends (cpu, aot) reading a flag costs nothing, so the op raises at once.
Ops that must know before they go on (an in-place write, a data-dependent size) read their slot
at once with :func:`read_now`. Slots taken during a CUDA-graph capture are kept apart for the
graph and re-armed at every replay (:func:`captured_checks`, :func:`rearm`); so are the slots of a
run recorded for an execution plan (:mod:`nbx_core.runtime.trace`), on every backend. Such slots are
held by a :class:`Reserved` that the plan or graph keeps: when it is dropped they return to the
table, so a process may make plans and graphs for as long as it runs.
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable

import numpy as np

from ..backend import current as _backend
from ..device import Device
from ..errors import NbxError
from ..memory import cuda as _cuda
from ..tensor import NBXTensor, tensor
from .trace import active as _recorder

SLOTS = 1024
"""Slots per device table; a full table is read (one host wait) and reused."""

MakeError = Callable[[int], NbxError]


class _Table:
    """One device's flag table: slots ``[0, next)`` in use since the last read; slots ``[top, SLOTS)``
    set apart for plans and captured graphs, of which ``free`` were given back."""

    def __init__(self, device: Device) -> None:
        self.flags = tensor(np.zeros(2 * SLOTS, np.int64), device=device)
        self.views: list[NBXTensor | None] = [None] * SLOTS
        self.next = 0
        self.top = SLOTS
        self.free: list[int] = []
        self.pending: list[tuple[int, MakeError]] = []

    def view(self, i: int) -> NBXTensor:
        v = self.views[i]
        if v is None:
            v = self.views[i] = NBXTensor(self.flags.storage, (2,), (1,), 2 * i, self.flags.dtype)
        return v


_tables: dict[Device, _Table] = {}
_captured: dict[int, list[tuple[Device, int, MakeError]]] = {}
_captured_slots: dict[int, Reserved] = {}
_reading = [False]


class Reserved:
    """Flag slots set apart for a recorded run or a captured graph, whose launches use them at every
    replay; they return to their tables when this object is dropped."""

    def __init__(self) -> None:
        self.slots: list[tuple[Device, int]] = []
        weakref.finalize(self, _give_back, self.slots)


def _give_back(slots: list[tuple[Device, int]]) -> None:
    for device, i in slots:
        t = _tables.get(device)
        if t is not None:
            t.free.append(i)
    slots.clear()


def _deferred() -> bool:
    # A recorded run (nbx_core.runtime.trace) defers its checks on every backend: its plan reads them
    # after each replay.
    return _backend() == "cuda" or _recorder() is not None


def _table(device: Device) -> _Table:
    t = _tables.get(device)
    if t is None:
        t = _tables[device] = _Table(device)
    return t


def slot(device: Device) -> NBXTensor:
    """A zeroed ``[raised, value]`` int64 flag on ``device`` for one launch's checks."""
    t = _table(device)
    recorder = _recorder()
    ident = _cuda.capture_id() if _backend() == "cuda" else None
    if recorder is not None or ident is not None:
        if not t.free and t.top <= t.next and ident is None:
            # Plans and graphs dropped in a reference cycle give their slots back. Not during a
            # capture, where freeing device memory would break it.
            gc.collect()
        if t.free:
            i = t.free.pop()
        elif t.top > t.next:
            t.top -= 1
            i = t.top
        else:
            raise NbxError(
                f"checks: plans and captured graphs alive hold all {SLOTS} flag slots of {device}: drop "
                "programs or captured graphs no longer used, or run with planning=False"
            )
        if recorder is not None:
            if recorder.trace.reserved is None:
                recorder.trace.reserved = Reserved()
            recorder.trace.reserved.slots.append((device, i))
        else:
            assert ident is not None
            _captured_slots.setdefault(ident, Reserved()).slots.append((device, i))
        return t.view(i)
    if t.next >= t.top:
        verify()
    t.next += 1
    return t.view(t.next - 1)


def _index(flag: NBXTensor) -> int:
    return flag.storage_offset() // 2


def raise_later(flag: NBXTensor, make_error: MakeError) -> None:
    """Raise ``make_error(value)`` once the host sees that a kernel raised ``flag``.

    Deferred to the next host wait on the cuda backend; at once elsewhere.
    """
    if not _deferred():
        raised, value = read_now(flag)
        if raised:
            raise make_error(value)
        return
    recorder = _recorder()
    if recorder is not None:
        recorder.trace.checks.append((flag.device, _index(flag), make_error))
        return
    ident = _cuda.capture_id()
    if ident is not None:
        _captured.setdefault(ident, []).append((flag.device, _index(flag), make_error))
    else:
        _table(flag.device).pending.append((_index(flag), make_error))


def read_now(flag: NBXTensor) -> tuple[bool, int]:
    """Wait for the device and read ``flag``: (raised, one offending value); a raised flag is reset."""
    _reading[0] = True
    try:
        raised, value = flag.tolist()
        if raised:
            _reset(flag)
    finally:
        _reading[0] = False
    return bool(raised), int(value)


def _reset(flags: NBXTensor) -> None:
    if flags.device.type == "cpu":
        flags.numpy().fill(0)
        return
    zeros = np.zeros(flags.numel(), np.int64)
    flags.storage.copy_from_host(flags.storage_offset() * 8, zeros.ctypes.data, zeros.nbytes)


def verify() -> None:
    """Read every pending check now (waiting for the devices) and raise the earliest error."""
    if _reading[0]:
        return
    first: NbxError | None = None
    for t in _tables.values():
        if not t.pending:
            t.next = 0
            continue
        _reading[0] = True
        try:
            values = t.flags.numpy().reshape(SLOTS, 2).copy()  # a host view on the cpu backend
            if values[:, 0].any():
                _reset(t.flags)
        finally:
            _reading[0] = False
        raised = [(i, make) for i, make in t.pending if values[i, 0]]
        if raised and first is None:
            i, make_error = raised[0]  # pending is in launch order: the earliest op's error
            first = make_error(int(values[i, 1]))
        t.pending.clear()
        t.next = 0
    if first is not None:
        raise first


def captured_checks(ident: int) -> tuple[list[tuple[Device, int, MakeError]], Reserved]:
    """The checks registered during the capture ``ident`` and the slots it took, handed to the
    captured graph (which keeps them while it lives)."""
    return _captured.pop(ident, []), _captured_slots.pop(ident, None) or Reserved()


def rearm(checks: list[tuple[Device, int, MakeError]]) -> None:
    """Register a replayed graph's checks as pending again."""
    for device, i, make_error in checks:
        _table(device).pending.append((i, make_error))


def _after_host_wait() -> None:
    if _tables and not _reading[0]:
        verify()


def install() -> None:
    """Read pending checks whenever the host waits for a device (idempotent)."""
    if _after_host_wait not in _cuda.host_wait_hooks:
        _cuda.host_wait_hooks.append(_after_host_wait)


install()
