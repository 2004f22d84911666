"""Tiny numpy-backed kernels, registered as a test plugin, so the runner is tested without plugins.

Every tensor a kernel returns is tracked by weakref in :data:`PRODUCED`, and each call records
how many of them are alive in :data:`LIVE`, which is how the tests see intermediates freed.
"""

from __future__ import annotations

import weakref

import numpy as np

import nbx_core
from nbx_core import from_numpy

PRODUCED: list[weakref.ref] = []
LIVE: list[int] = []
CALLS: list[str] = []


def _out(array: np.ndarray):
    t = from_numpy(np.ascontiguousarray(array))
    PRODUCED.append(weakref.ref(t))
    return t


def _track(name: str) -> None:
    CALLS.append(name)
    LIVE.append(sum(r() is not None for r in PRODUCED))


def add(self, other, alpha=1):
    _track("add")
    return _out(self.numpy() + alpha * (other.numpy() if hasattr(other, "numpy") else other))


def mul(self, other):
    _track("mul")
    return _out(self.numpy() * (other.numpy() if hasattr(other, "numpy") else other))


def relu(self):
    _track("relu")
    return _out(np.maximum(self.numpy(), 0))


def add_(self, other, alpha=1):
    """In place: writes into ``self`` and returns it, as ATen's add_ does."""
    _track("add_")
    view = self.numpy()
    view += alpha * (other.numpy() if hasattr(other, "numpy") else other)
    return self


def two_halves(self):
    """Returns two results (a deliberately multi-output kernel)."""
    _track("two_halves")
    a = self.numpy()
    return _out(a[: len(a) // 2]), _out(a[len(a) // 2 :])


def full_like_shape(self, size, dtype=None, device=None):
    """``new_ones``-like: checks that symbolic sizes and devices arrive evaluated."""
    _track("sized_ones")
    assert all(isinstance(s, int) for s in size) and isinstance(device, nbx_core.Device)
    return _out(np.ones(size, (dtype or self.dtype).np))


@nbx_core.hookimpl
def nbx_register_kernels(registry) -> None:
    for name, fn in (
        ("aten::add", add),
        ("aten::mul", mul),
        ("aten::relu", relu),
        ("aten::add_", add_),
        ("test::two_halves", two_halves),
        ("test::sized_ones", full_like_shape),
    ):
        registry.register(name, fn)
