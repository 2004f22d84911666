"""Shared helpers for the nbx-conv conformance tests."""

from __future__ import annotations

import pytest

from nbx_core.device import Device
from nbx_core.tensor import NBXTensor


class _FakeDeviceStorage:
    """A storage that claims to live on cuda:0: enough for device checks, which run before any launch."""

    def __init__(self, nbytes: int) -> None:
        self.device = Device("cuda", 0)
        self.ptr = 0
        self.nbytes = nbytes


@pytest.fixture
def on_cuda():
    """Turn an NBXTensor into one that reports cuda:0 (its data is never read)."""

    def convert(t: NBXTensor) -> NBXTensor:
        return NBXTensor(_FakeDeviceStorage(t.storage.nbytes), t.shape, t.stride(), t.storage_offset(), t.dtype)

    return convert
