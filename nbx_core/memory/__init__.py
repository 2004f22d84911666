"""Storage: a block of bytes on one device, owned by whoever keeps the storage alive."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..device import Device
from . import events
from .host import HostStorage

if TYPE_CHECKING:
    from .cuda import CudaStorage

__all__ = ["HostStorage", "Storage", "allocate", "settle"]

Storage = HostStorage  # the protocol every storage follows; CudaStorage lives in memory.cuda


def allocate(nbytes: int, device: Device, zero: bool = False) -> HostStorage | CudaStorage:
    """A new storage of ``nbytes`` on ``device``; ``zero`` fills it with zero bytes."""
    st: HostStorage | CudaStorage
    if device.type == "cpu":
        st = HostStorage.allocate(nbytes, zero=zero)
    else:
        from .cuda import CudaStorage

        st = CudaStorage.allocate(nbytes, device, zero=zero)
    events.on_allocate(st, zero)
    return st


def settle(storage: object) -> None:
    """Give ``storage`` memory of its own before its address leaves NBX: a CUDA graph's output
    lives in the graph's memory until the next run (:class:`~nbx_core.memory.cuda.LentStorage`)."""
    own = getattr(storage, "settle", None)
    if own is not None:
        own()
