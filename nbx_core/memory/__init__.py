"""Storage: a block of bytes on one device, owned by whoever keeps the storage alive."""

from __future__ import annotations

from ..device import Device
from . import events
from .host import HostStorage

__all__ = ["HostStorage", "Storage", "allocate"]

Storage = HostStorage  # the protocol every storage follows; CudaStorage lives in memory.cuda


def allocate(nbytes: int, device: Device, zero: bool = False):
    """A new storage of ``nbytes`` on ``device``; ``zero`` fills it with zero bytes."""
    if device.type == "cpu":
        st = HostStorage.allocate(nbytes, zero=zero)
    else:
        from .cuda import CudaStorage

        st = CudaStorage.allocate(nbytes, device, zero=zero)
    events.on_allocate(st, zero)
    return st
