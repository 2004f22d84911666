"""The tensor layer reaches its ops by ATen name through the registry, and reads device bytes
through the storage (docs/architecture.md)."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

import nbx_core
from nbx_core import dtypes as D
from nbx_core import hookimpl
from nbx_core.device import Device
from nbx_core.registry import Registry, reset_registry, set_registry
from nbx_core.tensor import NBXTensor

# Exact keys: a lookup by another overload of these names would find nothing here.
SPIED = [
    "aten::view",
    "aten::expand",
    "aten::permute",
    "aten::transpose",
    "aten::contiguous",
    "aten::to",
    "aten::add",
    "aten::sub",
    "aten::eq",
    "aten::neg",
    "aten::select.int",
    "aten::slice.Tensor",
    "aten::unsqueeze",
    "aten::alias",
    "aten::index.Tensor",
    "aten::index_put_",
    "aten::copy_",
    "aten::fill_.Scalar",
]


class Spy:
    """A plugin whose every kernel records its call and returns a new tensor object viewing the
    first tensor it was given."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    @hookimpl
    def nbx_register_kernels(self, registry) -> None:
        for name in SPIED:
            registry.register(name, lambda *args, _name=name, **kwargs: self._record(_name, args, kwargs))

    def _record(self, name: str, args: tuple, kwargs: dict) -> object:
        self.calls.append((name, args, kwargs))
        t = next(a for a in args if isinstance(a, NBXTensor))
        return NBXTensor(t.storage, t.shape, t.stride(), t.storage_offset(), t.dtype)


@pytest.fixture
def spy():
    plugin = Spy()
    registry = Registry()
    registry.add_plugin("spy", plugin)
    set_registry(registry)
    yield plugin
    reset_registry()


def test_methods_and_operators_call_the_registry_by_aten_name(spy):
    x = nbx_core.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    x.view(3, 2)
    x.broadcast_to((4, 2, 3))
    _ = x.T, x.mT
    x.contiguous(memory_format="contiguous_format")
    x.to(D.float64)
    _ = x + 1, 2 - x, x == x, -x
    assert spy.calls == [
        ("aten::view", (x, 3, 2), {}),
        ("aten::expand", (x, (4, 2, 3)), {}),
        ("aten::permute", (x, [1, 0]), {}),
        ("aten::transpose", (x, -2, -1), {}),
        ("aten::contiguous", (x,), {"memory_format": "contiguous_format"}),
        ("aten::to", (x, D.float64), {}),
        ("aten::add", (x, 1), {}),
        ("aten::sub", (2, x), {}),
        ("aten::eq", (x, x), {}),
        ("aten::neg", (x,), {}),
    ]


def _names(spy: Spy) -> list[str]:
    names = [name for name, _, _ in spy.calls]
    spy.calls.clear()
    return names


def test_python_indexing_is_composed_of_registry_calls(spy):
    x = nbx_core.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    x[1, 1:]
    assert [(name, args[1:]) for name, args, _ in spy.calls] == [
        ("aten::select.int", (0, 1)),
        ("aten::slice.Tensor", (0, 1, None, 1)),
    ]
    spy.calls.clear()
    x[None]
    assert _names(spy) == ["aten::unsqueeze", "aten::slice.Tensor", "aten::slice.Tensor"]
    nbx_core.tensor(3.0)[...]
    assert _names(spy) == ["aten::alias"]
    x[[1, 0]]
    assert _names(spy) == ["aten::slice.Tensor", "aten::index.Tensor"]
    x[0] = 7.0
    assert _names(spy) == ["aten::select.int", "aten::slice.Tensor", "aten::fill_.Scalar"]
    x[:, 0] = x
    assert _names(spy) == ["aten::slice.Tensor", "aten::select.int", "aten::copy_"]
    x[[1, 0]] = 0.5
    _, (_, index, value), _ = spy.calls[-1]
    assert _names(spy) == ["aten::slice.Tensor", "aten::index_put_"]
    assert index[0].tolist() == [1, 0] and value.dtype is D.float32 and value.item() == 0.5


class DeviceBytes:
    """Stand-in for device memory: bytes the host reaches only by copying them, as on a GPU."""

    def __init__(self, array: np.ndarray) -> None:
        self._bytes = np.ascontiguousarray(array).view(np.uint8).reshape(-1)
        self.nbytes = self._bytes.nbytes
        self.device = Device("cuda", 0)
        self.ptr = 0

    def copy_to_host(self, src_offset: int, dst_ptr: int, nbytes: int) -> None:
        ctypes.memmove(dst_ptr, self._bytes.ctypes.data + src_offset, nbytes)


def test_numpy_and_item_of_a_device_tensor_copy_its_bytes():
    values = np.random.default_rng(0).standard_normal(10).astype(np.float32)
    t = NBXTensor(DeviceBytes(values), (2, 3), (3, 1), 2, D.float32)
    np.testing.assert_array_equal(t.numpy(), values[2:8].reshape(2, 3))
    one = NBXTensor(DeviceBytes(values), (), (), 7, D.float32)
    assert one.item() == float(values[7]) and "device='cuda:0'" in repr(t)
