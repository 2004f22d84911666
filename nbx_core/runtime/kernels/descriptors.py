"""Tensor descriptors built inside kernels (``tl.make_tensor_descriptor``, Hopper's copy engine).

A kernel that loads tiles through descriptors needs two things from its caller: operands whose
layout the copy engine can read (:func:`tma_readable`), and global memory for the descriptors
themselves, which Triton asks of the allocator in its context at launch
(:func:`descriptor_memory`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

from triton.runtime import _allocation

from ...device import Device
from ...memory import allocate
from ...tensor import NBXTensor
from ..launch import BACKEND


def tma_readable(t: NBXTensor, inner_stride: int, row_stride: int, batch_strides: Iterable[int] = ()) -> bool:
    """Whether the copy engine can read 2-D tiles of ``t`` whose contiguous dim has stride
    ``inner_stride`` and whose rows are ``row_stride`` apart, from a base the kernel offsets by
    ``batch_strides``: the contiguous dim dense, the rows apart, every stride and the base 16-byte
    aligned."""
    size = t.dtype.itemsize
    return (
        inner_stride == 1
        and row_stride > 0
        and t._data_ptr() % 16 == 0
        and all((s * size) % 16 == 0 for s in (row_stride, *batch_strides))
    )


@cache
def _allocator(device: Device) -> Callable[[int, int, int | None], Any]:
    # NBX's stream-ordered device memory, aligned to at least 256 bytes: held through the launch,
    # its block is reused only by later work on the same stream.
    return lambda size, alignment, stream: allocate(size, device)


def _reusing(device: Device, kept: dict[int, Any]) -> Callable[[int, int, int | None], Any]:
    # One block per size, allocated at its first request and served again after: the launches of
    # one stream run one after another, and a CUDA graph captures the pointer it was given.
    def allocator(size: int, alignment: int, stream: int | None) -> Any:
        block = kept.get(size)
        if block is None:
            block = kept[size] = allocate(size, device)
        return block

    return allocator


@contextmanager
def descriptor_memory(device: Device, kept: dict[int, Any] | None = None) -> Iterator[None]:
    """Serve the descriptors of the launches inside this block from NBX's memory on ``device``.

    Set in Triton's context only for the block, so a caller's own allocator (torch code sets one)
    is back in place afterwards, also when a launch raises. The interpreter needs none. With
    ``kept`` (a dict the caller holds for as long as its launches may run), each size is allocated
    once and reused: what a plan's launches need, since memory allocated while a CUDA graph is being
    captured is not yet addressable when Triton's launcher checks its pointer.
    """
    if BACKEND != "cuda":
        yield
        return
    token = _allocation._allocator.set(_allocator(device) if kept is None else _reusing(device, kept))
    try:
        yield
    finally:
        _allocation._allocator.reset(token)
