"""NBXTensor: storage + shape + strides + offset + dtype, on the host or a CUDA device.

The tensor layer imports no op and no kernel module. Op methods (view, permute, clone …) and
operators come from :class:`~nbx_core.tensor.methods.TensorMethods`, which calls the registry by
ATen name; ``to()`` is ``aten::_to_copy``; Python indexing (``x[...]``, ``x[...] = v``), at the end
of this module, is composed of registry calls too. Reading values on the host (``numpy()``,
``item()``) and putting new data on a device copy bytes through the storage (nbx_core.memory).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import backend as _backend
from .. import dtypes as D
from ..device import CPU, Device, as_device
from ..errors import IndexOutOfRangeError, NbxTypeError, NbxValueError
from ..memory import allocate, events, settle
from ..memory.host import HostStorage
from ..shape import contiguous_strides, is_contiguous, numel
from . import dlpack, printing
from .methods import TensorMethods, call

# The aot backend runs no kernel, so new memory would stay whatever it was: it is zeroed there to
# keep data-dependent host logic (sizes read back from a result) bounded.
ZERO_NEW = _backend.requested() == "aot"


class NBXTensor(TensorMethods):
    """A strided view of a storage. Build one with :func:`nbx_core.tensor` or a creation op."""

    __slots__ = ("_storage", "_shape", "_strides", "_offset", "dtype", "__weakref__")
    __array_priority__ = 1000

    def __init__(self, storage: Any, shape: Sequence[int], strides: Sequence[int], offset: int, dtype: D.DType) -> None:
        self._storage = storage
        self._shape = tuple(shape)
        self._strides = tuple(strides)
        self._offset = offset
        self.dtype = dtype

    # -- metadata ---------------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return self._shape

    @property
    def ndim(self) -> int:
        return len(self._shape)

    def dim(self) -> int:
        return len(self._shape)

    def size(self, dim: int | None = None):
        if dim is None:
            return self._shape
        from ..shape import wrap_dim

        return self._shape[wrap_dim("size", dim, self.ndim)] if self.ndim else 1

    def stride(self, dim: int | None = None):
        if dim is None:
            return self._strides
        from ..shape import wrap_dim

        return self._strides[wrap_dim("stride", dim, self.ndim)] if self.ndim else 1

    def storage_offset(self) -> int:
        return self._offset

    def numel(self) -> int:
        return numel(self._shape)

    def element_size(self) -> int:
        return self.dtype.itemsize

    @property
    def device(self) -> Device:
        return self._storage.device

    @property
    def storage(self) -> Any:
        return self._storage

    def data_ptr(self) -> int:
        """The address of the first element, valid while the tensor lives. A CUDA graph's output
        moves to memory of its own first (:func:`nbx_core.memory.settle`)."""
        settle(self._storage)
        return self._storage.ptr + self._offset * self.dtype.itemsize

    def _data_ptr(self) -> int:
        """The address of the first element now, for a launch (a graph's output may move later)."""
        return self._storage.ptr + self._offset * self.dtype.itemsize

    def is_contiguous(self) -> bool:
        return is_contiguous(self._shape, self._strides)

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    def __len__(self) -> int:
        if not self._shape:
            raise NbxTypeError("len() of a 0-dim tensor")
        return self._shape[0]

    # -- data movement ----------------------------------------------------------------------------
    def numpy(self) -> np.ndarray:
        """The values as a numpy array: a view of host memory when possible, a copy otherwise.

        Device tensors are copied to the host. bfloat16 and float8 come back as ml_dtypes arrays.
        """
        if self.device.type != "cpu":
            return self._to_host().numpy()
        if self.numel() == 0:
            return np.empty(self._shape, self.dtype.np)
        events.on_host_read(self._storage, "numpy()")
        item = self.dtype.itemsize
        lo = self._offset + sum(min(0, st * (s - 1)) for s, st in zip(self._shape, self._strides, strict=True))
        hi = self._offset + sum(max(0, st * (s - 1)) for s, st in zip(self._shape, self._strides, strict=True))
        if lo < 0 or (hi + 1) * item > self._storage.nbytes:
            raise NbxValueError(
                f"tensor view (offset {self._offset}, strides {self._strides}) lies outside "
                f"its storage of {self._storage.nbytes} bytes"
            )
        # as_strided goes through __array_interface__, which cannot spell ml_dtypes' float8 types:
        # stride a same-width integer view, then reinterpret.
        raw = self._storage.array[: self._storage.nbytes].view(f"u{item}")
        out = np.lib.stride_tricks.as_strided(
            raw[self._offset :],
            shape=self._shape,
            strides=tuple(s * item for s in self._strides),
            writeable=True,
        )
        return out.view(self.dtype.np)

    def tolist(self) -> Any:
        return self.numpy().tolist() if self.dtype.np.kind != "V" else self.numpy().astype(np.float32).tolist()

    def item(self) -> bool | int | float | complex:
        """The single value of a one-element tensor as a Python scalar."""
        if self.numel() != 1:
            raise NbxValueError(f"item: a tensor with {self.numel()} elements cannot be converted to a scalar")
        value = self.numpy().reshape(()).item()
        if self.dtype.is_floating_point and not isinstance(value, float):
            value = float(value)
        return value

    def _to_host(self) -> NBXTensor:
        """A host copy of this device tensor: its bytes, after ``contiguous()`` (a kernel) when it is strided."""
        src = self if self.is_contiguous() else self.contiguous()
        out = empty_tensor(src._shape, src.dtype)
        item = src.dtype.itemsize
        src._storage.copy_to_host(src._offset * item, out._storage.ptr, src.numel() * item)
        return out

    def to(self, *args: Any, **kwargs: Any) -> NBXTensor:
        """torch's ``to``: ``to(device, dtype)``, ``to(dtype)``, ``to(tensor)``, with ``non_blocking``,
        ``copy`` and ``memory_format``; returns self when nothing changes (an int is a CUDA index)."""
        if args and type(args[0]) is int:  # Python's x.to(0); to the ATen op an int is a dtype code
            args = (Device("cuda", args[0]), *args[1:])
        return call("aten::to", self, *args, **kwargs)

    def cpu(self) -> NBXTensor:
        return self.to(CPU)

    def cuda(self, index: int = 0) -> NBXTensor:
        return self.to(Device("cuda", index))

    # -- DLPack -----------------------------------------------------------------------------------
    def __dlpack_device__(self) -> tuple[int, int]:
        return dlpack.dlpack_device(self)

    def __dlpack__(
        self, *, stream: Any = None, max_version: Any = None, dl_device: Any = None, copy: Any = None
    ) -> Any:
        events.on_export(self._storage)
        return dlpack.to_dlpack(self, stream=stream, max_version=max_version)

    # -- printing ---------------------------------------------------------------------------------
    def __repr__(self) -> str:
        return printing.tensor_repr(self)

    __str__ = __repr__

    def __bool__(self) -> bool:
        if self.numel() != 1:
            raise NbxValueError(
                f"the truth value of a tensor with {self.numel()} elements is ambiguous: reduce it first"
            )
        return bool(self.item())

    def __int__(self) -> int:
        return int(self._real_item("int"))

    def __float__(self) -> float:
        return float(self._real_item("float"))

    def __index__(self) -> int:
        if not self.dtype.is_integral or self.numel() != 1:
            raise NbxTypeError("only one-element integer tensors can be used as an index")
        return int(self._real_item("an index"))

    def _real_item(self, to: str) -> bool | int | float:
        value = self.item()
        if isinstance(value, complex):
            raise NbxTypeError(f"a {self.dtype} tensor cannot be converted to {to}: take its real part or abs first")
        return value

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        arr = self.numpy()
        return arr.astype(dtype) if dtype is not None else arr

    def __iter__(self):
        if not self._shape:
            raise NbxTypeError("iteration over a 0-dim tensor")
        return iter(self.unbind(0))

    # -- Python indexing --------------------------------------------------------------------------
    def __getitem__(self, key: Any) -> NBXTensor:
        """Basic indexing (ints, slices, None, Ellipsis) as views; tensor or list indices via aten::index."""
        view, advanced = _basic(self, key)
        if advanced is None:
            return view if view is not self else call("aten::alias", self)
        return call("aten::index.Tensor", view, _index_list(advanced))

    def __setitem__(self, key: Any, value: Any) -> None:
        view, advanced = _basic(self, key)
        if advanced is None:
            if isinstance(value, NBXTensor):
                call("aten::copy_", view, value)
            else:
                call("aten::fill_.Scalar", view, value)
            return
        if not isinstance(value, NBXTensor):
            value = tensor(value, dtype=self.dtype, device=self.device)
        call("aten::index_put_", view, _index_list(advanced), value)


def empty_tensor(shape: Sequence[int], dtype: D.DType, device: Device | None = None, zero: bool = False) -> NBXTensor:
    """A new contiguous tensor with unspecified values (zeros when ``zero``)."""
    dev = device if device is not None else CPU
    shape = tuple(shape)
    return NBXTensor(new_storage(numel(shape) * dtype.itemsize, dev, zero), shape, contiguous_strides(shape), 0, dtype)


def new_storage(nbytes: int, device: Device, zero: bool = False) -> Any:
    """A new storage for a tensor: :func:`~nbx_core.memory.allocate`, zeroed too on the aot backend.

    The aot backend's zeroing is not the run's request, so a recorder sees the allocation as the
    cuda backend's: a plan recorded on aot then zero-fills and fuses what one recorded on cuda does.
    """
    storage = allocate(nbytes, device, zero=zero)
    if ZERO_NEW and not zero and isinstance(storage, HostStorage):  # aot tensors live on the host
        storage.array.fill(0)
    return storage


def _host_from_numpy(arr: np.ndarray, dtype: D.DType) -> NBXTensor:
    """Share a numpy array's memory as a host tensor (no copy) when its strides allow it."""
    item = arr.itemsize
    if arr.size == 0 or arr.flags.c_contiguous or any(s < 0 or s % item for s in arr.strides):
        arr = arr if arr.flags.c_contiguous else arr.copy(order="C")
        storage = HostStorage.wrap(arr)
        events.on_host_write(storage)
        return NBXTensor(storage, arr.shape, contiguous_strides(arr.shape), 0, dtype)
    extent = sum(st * (n - 1) for n, st in zip(arr.shape, arr.strides, strict=True)) + item
    first = arr[(slice(0, 1),) * arr.ndim].reshape(1).view(np.uint8)
    # as_strided keeps ``arr`` alive through the view's base chain.
    raw = np.lib.stride_tricks.as_strided(first, shape=(extent,), strides=(1,))
    storage = HostStorage(raw)
    events.on_host_write(storage)
    return NBXTensor(storage, arr.shape, tuple(s // item for s in arr.strides), 0, dtype)


def tensor(data: Any, dtype: Any = None, device: Any = None) -> NBXTensor:
    """A new tensor holding a copy of ``data`` (nested lists, scalars, numpy arrays, NBXTensors).

    Python floats give the default float dtype (float32) and ints int64, like ``torch.tensor``.
    """
    dt = D.as_dtype(dtype) if dtype is not None else None
    if isinstance(data, NBXTensor):
        out = data.to(device=device if device is not None else data.device, dtype=dt or data.dtype, copy=True)
        return out
    if type(data).__module__.startswith("torch"):
        raise NbxTypeError("tensor: pass torch tensors through nbx_core.from_dlpack (zero-copy) instead")
    if isinstance(data, np.ndarray):
        arr = data
        if dt is None:
            dt = D.from_numpy(arr.dtype)
    else:
        arr = np.asarray(data)
        if dt is None:
            if arr.dtype.kind == "f":
                dt = D.default_float
            elif arr.dtype.kind == "c":
                dt = D.complex64
            elif arr.dtype.kind in "iu":
                dt = D.int64 if arr.dtype.kind == "i" or arr.dtype.itemsize < 8 else D.from_numpy(arr.dtype)
            elif arr.dtype.kind == "b":
                dt = D.bool_
            else:
                raise NbxTypeError(f"tensor: cannot build a tensor from {type(data).__name__} data")
    arr = np.array(arr, dtype=dt.np, copy=True, order="C")
    dev = as_device(device) if device is not None else CPU
    if dev.type == "cpu":
        return _host_from_numpy(arr, dt)
    out = empty_tensor(arr.shape, dt, dev)
    out._storage.copy_from_host(0, arr.ctypes.data, arr.nbytes)
    return out


def from_numpy(arr: np.ndarray) -> NBXTensor:
    """A host tensor sharing ``arr``'s memory (no copy)."""
    if not isinstance(arr, np.ndarray):
        raise NbxTypeError(f"from_numpy: expected a numpy array, got {type(arr).__name__}")
    return _host_from_numpy(arr, D.from_numpy(arr.dtype))


def from_dlpack(obj: Any) -> NBXTensor:
    """An NBXTensor sharing the memory of any DLPack producer (numpy, torch, CuPy, JAX …)."""
    if isinstance(obj, NBXTensor):
        return obj
    storage, shape, strides, dtype = dlpack.unpack(obj)
    return NBXTensor(storage, shape, strides, 0, dtype)


# -- Python indexing: ints, slices, None and Ellipsis are views (select, slice, unsqueeze); tensor,
# list or bool indices are advanced indexing, aten::index / aten::index_put_ (nbx-index provides them).


def _expand_key(self: NBXTensor, key: Any) -> list[Any]:
    items = list(key) if isinstance(key, tuple) else [key]
    consumed = sum(
        0 if (k is None or k is Ellipsis) else (k.ndim if isinstance(k, NBXTensor) and k.dtype is D.bool_ else 1)
        for k in items
    )
    if sum(1 for k in items if k is Ellipsis) > 1:
        raise IndexOutOfRangeError("an index can only have a single ellipsis ('...')")
    if consumed > self.ndim:
        raise IndexOutOfRangeError(f"too many indices for a tensor of dimension {self.ndim}")
    if Ellipsis in [k for k in items if not isinstance(k, NBXTensor)]:
        i = next(i for i, k in enumerate(items) if k is Ellipsis)
        items[i : i + 1] = [slice(None)] * (self.ndim - consumed)
    else:
        items += [slice(None)] * (self.ndim - consumed)
    return items


def _basic(self: NBXTensor, key: Any) -> tuple[NBXTensor, list[Any] | None]:
    """Apply the view part of ``key``; return the view and the advanced indices per dim (or None)."""
    out = self
    dim = 0
    advanced: list[Any] = []
    has_adv = False
    for k in _expand_key(self, key):
        if k is None:
            out = call("aten::unsqueeze", out, dim)
            advanced.append(None)
            dim += 1
        elif isinstance(k, slice):
            out = call("aten::slice.Tensor", out, dim, k.start, k.stop, 1 if k.step is None else k.step)
            advanced.append(None)
            dim += 1
        elif isinstance(k, bool):
            out = call("aten::unsqueeze", out, dim)
            advanced.append(tensor([k], device=self.device))
            has_adv = True
            dim += 1
        elif isinstance(k, int) or (
            isinstance(k, NBXTensor) and k.ndim == 0 and k.dtype.kind in "iu" and k.device.type == "cpu"
        ):
            out = call("aten::select.int", out, dim, int(k))
        elif isinstance(k, NBXTensor | list | tuple):
            t = k if isinstance(k, NBXTensor) else tensor(k, device=self.device)
            if t.dtype is D.bool_:
                advanced.append(t)
                advanced.extend([None] * (t.ndim - 1))
                dim += t.ndim
            else:
                if t.dtype.kind not in "iu":
                    raise NbxTypeError(f"tensors used as indices must be long, int or bool, got {t.dtype}")
                advanced.append(t)
                dim += 1
            has_adv = True
        else:
            raise NbxTypeError(
                f"cannot index a tensor with {type(k).__name__}: use ints, slices, None, Ellipsis, lists or tensors"
            )
    return out, (advanced if has_adv else None)


def _index_list(advanced: list[Any]) -> list[Any]:
    # A bool mask spans several dims in the key; aten::index takes it in its first dim's slot.
    out, skip = [], 0
    for a in advanced:
        if skip:
            skip -= 1
            continue
        out.append(a)
        if isinstance(a, NBXTensor) and a.dtype is D.bool_:
            skip = a.ndim - 1
    while out and out[-1] is None:
        out.pop()
    return out
