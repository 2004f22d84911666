"""Host storage backed by a numpy byte array."""

from __future__ import annotations

import numpy as np

from ..device import CPU, Device
from ..errors import OutOfMemoryError

# Triton specializes pointers on 16-byte alignment; numpy's allocator guarantees only 16 on most
# platforms, so over-allocate and align by hand to be certain.
_ALIGN = 64


class HostStorage:
    """``nbytes`` of host memory. ``array`` keeps the memory alive; ``ptr`` is its address."""

    __slots__ = ("array", "ptr", "nbytes", "__weakref__")
    device: Device = CPU

    def __init__(self, array: np.ndarray) -> None:
        self.array = array
        self.ptr = int(array.ctypes.data) if array.size else 0
        self.nbytes = array.nbytes

    @classmethod
    def allocate(cls, nbytes: int, zero: bool = False) -> HostStorage:
        try:
            raw = (np.zeros if zero else np.empty)(nbytes + _ALIGN, dtype=np.uint8)
        except MemoryError as e:
            raise OutOfMemoryError(f"cannot allocate {nbytes} bytes of host memory") from e
        start = (-raw.ctypes.data) % _ALIGN
        return cls(raw[start : start + nbytes])

    @classmethod
    def wrap(cls, array: np.ndarray) -> HostStorage:
        """Share a numpy array's memory (no copy); the array must be C-contiguous bytes-viewable."""
        flat = array.reshape(-1) if array.flags.c_contiguous else array
        return cls(flat.view(np.uint8))

    def data_ptr(self) -> int:
        return self.ptr

    # The Triton interpreter copies each storage "to the host" and back around a launch.
    # Host storage already is there, so both directions are no-ops.
    def cpu(self) -> HostStorage:
        return self

    def copy_(self, other: HostStorage) -> HostStorage:
        if other is not self:
            np.copyto(self.array, other.array)
        return self
