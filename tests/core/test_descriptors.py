"""nbx_core.runtime.kernels.descriptors: when the copy engine can read a tensor, and whose memory it uses."""

from __future__ import annotations

import pytest

from nbx_core import dtypes as D
from nbx_core.device import Device
from nbx_core.runtime.kernels import descriptors
from nbx_core.tensor import empty_tensor

# isort: split
from triton.runtime import _allocation  # after nbx_core, which chooses how Triton runs


def test_tma_readable():
    t = empty_tensor((4, 64), D.bfloat16, Device("cpu"))
    assert descriptors.tma_readable(t, 1, 64, (256, 0))
    assert not descriptors.tma_readable(t, 2, 64)  # contiguous dim not dense
    assert not descriptors.tma_readable(t, 1, 9)  # rows 18 bytes apart
    assert not descriptors.tma_readable(t, 1, 0)  # rows not apart (broadcast)
    assert not descriptors.tma_readable(t, 1, 64, (100,))  # a batch 200 bytes apart
    assert descriptors.tma_readable(empty_tensor((4, 4), D.float32, Device("cpu")), 1, 4)


def test_descriptor_memory_is_scoped(monkeypatch):
    # Set only inside the block, on the cuda backend, and the caller's allocator is back afterwards,
    # also when the block raises.
    def users(size, alignment, stream):
        raise AssertionError("unused")

    token = _allocation._allocator.set(users)
    try:
        monkeypatch.setattr(descriptors, "BACKEND", "cpu")
        with descriptors.descriptor_memory(Device("cpu")):
            assert _allocation._allocator.get() is users  # the interpreter needs none
        monkeypatch.setattr(descriptors, "BACKEND", "cuda")
        with pytest.raises(RuntimeError, match="launch failed"):
            with descriptors.descriptor_memory(Device("cpu")):
                inside = _allocation._allocator.get()
                raise RuntimeError("launch failed")
        assert inside is not users and _allocation._allocator.get() is users
    finally:
        _allocation._allocator.reset(token)


def test_kept_descriptor_memory_is_allocated_once_per_size(monkeypatch):
    # A plan's launches (and the CUDA graph captured from them) get the same block for a size every
    # time: memory allocated during a capture is not addressable when Triton checks the pointer.
    made = []
    monkeypatch.setattr(descriptors, "BACKEND", "cuda")
    monkeypatch.setattr(descriptors, "allocate", lambda size, device: made.append(size) or object())
    kept: dict = {}
    with descriptors.descriptor_memory(Device("cpu"), kept):
        first = _allocation._allocator.get()(4096, 128, None)
        assert _allocation._allocator.get()(4096, 128, 7) is first
        other = _allocation._allocator.get()(8192, 128, None)
    with descriptors.descriptor_memory(Device("cpu"), kept):
        assert _allocation._allocator.get()(4096, 128, None) is first
    assert made == [4096, 8192] and other is not first and kept == {4096: first, 8192: other}
    with descriptors.descriptor_memory(Device("cpu")):  # without kept: a new block each launch
        _allocation._allocator.get()(4096, 128, None)
        _allocation._allocator.get()(4096, 128, None)
    assert made == [4096, 8192, 4096, 4096]
