"""Where a recorder listens to memory traffic: allocations, host writes, host reads, exports.

A thread may have one observer (:mod:`nbx_core.runtime.trace`'s recorder). Storage and tensor code
call the ``on_*`` functions below; each costs one thread-local lookup when nothing observes.
"""

from __future__ import annotations

import threading
from typing import Any, Protocol


class Observer(Protocol):
    def allocated(self, storage: Any, zero: bool) -> None: ...

    def host_wrote(self, storage: Any) -> None: ...

    def host_read(self, storage: Any, what: str) -> None: ...

    def exported(self, storage: Any) -> None: ...

    def launched(self, kernel: Any, grid: tuple[int, ...], args: tuple[Any, ...], kwargs: dict[str, Any]) -> None: ...


_local = threading.local()


def observer() -> Observer | None:
    """The observer of this thread's memory traffic, or None."""
    return getattr(_local, "value", None)


def set_observer(value: Observer | None) -> None:
    _local.value = value


def _notify(event: str, *args: Any) -> None:
    obs = getattr(_local, "value", None)
    if obs is not None:
        getattr(obs, event)(*args)


def on_allocate(storage: Any, zero: bool) -> None:
    """A new storage (``zero``: filled with zero bytes)."""
    _notify("allocated", storage, zero)


def on_host_write(storage: Any) -> None:
    """The host wrote bytes into ``storage`` (a copy from host memory, a tensor made from host data)."""
    _notify("host_wrote", storage)


def on_host_read(storage: Any, what: str) -> None:
    """The host read ``storage``'s bytes (``what``: how, for messages)."""
    _notify("host_read", storage, what)


def on_export(storage: Any) -> None:
    """Memory handed to other code (DLPack), which may read and write it unseen."""
    _notify("exported", storage)
