"""Storage: a block of bytes on one device, owned by whoever keeps the storage alive."""

from __future__ import annotations

from ..device import Device
from .host import HostStorage

__all__ = ["HostStorage", "Storage", "allocate"]

Storage = HostStorage  # the protocol every storage follows; CudaStorage lives in memory.cuda


def allocate(nbytes: int, device: Device, zero: bool = False):
    """A new storage of ``nbytes`` on ``device``; ``zero`` fills it with zero bytes."""
    if device.type == "cpu":
        return HostStorage.allocate(nbytes, zero=zero)
    from .cuda import CudaStorage

    return CudaStorage.allocate(nbytes, device, zero=zero)
