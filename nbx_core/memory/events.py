"""Where a recorder listens to memory traffic: allocations, host writes and host reads.

A thread may have one observer (:mod:`nbx_core.runtime.trace`'s recorder). Storage code calls the
``on_*`` functions below; they cost one thread-local lookup when nothing observes.
"""

from __future__ import annotations

import threading
from typing import Any, Protocol


class Observer(Protocol):
    def allocated(self, storage: Any, zero: bool) -> None: ...

    def host_wrote(self, storage: Any) -> None: ...

    def host_read(self, storage: Any, what: str) -> None: ...

    def exported(self, storage: Any) -> None: ...


_local = threading.local()


def observer() -> Observer | None:
    """The observer of this thread's memory traffic, or None."""
    return getattr(_local, "value", None)


def set_observer(value: Observer | None) -> None:
    _local.value = value


def on_allocate(storage: Any, zero: bool) -> None:
    obs = getattr(_local, "value", None)
    if obs is not None:
        obs.allocated(storage, zero)


def on_host_write(storage: Any) -> None:
    obs = getattr(_local, "value", None)
    if obs is not None:
        obs.host_wrote(storage)


def on_host_read(storage: Any, what: str) -> None:
    obs = getattr(_local, "value", None)
    if obs is not None:
        obs.host_read(storage, what)


def on_export(storage: Any) -> None:
    """Memory handed to other code (DLPack), which may read and write it unseen."""
    obs = getattr(_local, "value", None)
    if obs is not None:
        obs.exported(storage)
