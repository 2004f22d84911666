"""DLPack exchange both ways, zero-copy: ``NBXTensor.__dlpack__`` and ``from_dlpack`` (whose
tensor :mod:`nbx_core.tensor.core` builds from :func:`unpack`, this module sitting below the class).

Capsules follow the unversioned DLPack ABI (``DLManagedTensor``, capsule name "dltensor"), which
numpy, torch, CuPy and JAX all read and write.
"""

from __future__ import annotations

import ctypes
from typing import Any

from .. import dtypes as D
from ..device import CPU, Device
from ..errors import DeviceError, NbxTypeError

_CPU, _CUDA = 1, 2
_CODES = {  # DLDataTypeCode per NBX dtype
    "bool": 6, "uint8": 1, "int8": 0, "int16": 0, "int32": 0, "int64": 0,
    "float16": 2, "bfloat16": 4, "float32": 2, "float64": 2, "complex64": 5,
    "float8_e4m3fn": 10, "float8_e5m2": 12,
}
_FROM_CODE = {(code, D.from_name(name).itemsize * 8): D.from_name(name) for name, code in _CODES.items()}


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int), ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class _DLManagedTensor(ctypes.Structure):
    pass


_Deleter = ctypes.CFUNCTYPE(None, ctypes.POINTER(_DLManagedTensor))
_DLManagedTensor._fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _Deleter)]

_api = ctypes.pythonapi
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_IsValid.restype = ctypes.c_int

# Exported tensors stay alive until their consumer calls the deleter.
_exported: dict[int, tuple] = {}


@_Deleter
def _release(ptr: Any) -> None:
    _exported.pop(ctypes.cast(ptr, ctypes.c_void_p).value, None)


_CapsuleDestructor = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


@_CapsuleDestructor
def _capsule_destructor(capsule: int) -> None:
    # An unconsumed capsule still owns its tensor; a consumed one was renamed "used_dltensor".
    obj = ctypes.cast(capsule, ctypes.py_object)
    if _api.PyCapsule_IsValid(obj, b"dltensor"):
        ptr = _api.PyCapsule_GetPointer(obj, b"dltensor")
        _exported.pop(ptr, None)


def dlpack_device(t: Any) -> tuple[int, int]:
    return (_CUDA, t.device.index) if t.device.type == "cuda" else (_CPU, 0)


def to_dlpack(t: Any, stream: Any = None, max_version: Any = None) -> Any:
    """A "dltensor" capsule viewing the memory of NBXTensor ``t``; NBX work is on the default stream already."""
    if t.device.type == "cuda":
        from ..memory.cuda import synchronize

        if stream not in (None, 1, 2):
            synchronize(t.device)
    managed = _DLManagedTensor()
    shape = (ctypes.c_int64 * max(t.ndim, 1))(*t.shape)
    strides = (ctypes.c_int64 * max(t.ndim, 1))(*t.stride())
    dl = managed.dl_tensor
    dl.data = t.storage.ptr or None
    dl.byte_offset = t.storage_offset() * t.dtype.itemsize
    dl.device = _DLDevice(*dlpack_device(t))
    dl.ndim = t.ndim
    dl.dtype = _DLDataType(_CODES[t.dtype.name], t.dtype.itemsize * 8, 1)
    dl.shape = ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64))
    dl.strides = ctypes.cast(strides, ctypes.POINTER(ctypes.c_int64))
    managed.deleter = _release
    addr = ctypes.addressof(managed)
    _exported[addr] = (managed, shape, strides, t)
    return _api.PyCapsule_New(addr, b"dltensor", ctypes.cast(_capsule_destructor, ctypes.c_void_p))


class _DLStorage:
    """Memory owned by a DLPack producer; calls the producer's deleter when collected."""

    __slots__ = ("ptr", "nbytes", "device", "_managed", "__weakref__")

    def __init__(self, managed: Any, ptr: int, nbytes: int, device: Device) -> None:
        self._managed = managed
        self.ptr = ptr
        self.nbytes = nbytes
        self.device = device

    @property
    def array(self) -> Any:
        """The bytes as a numpy array whose base keeps this storage (and so the producer) alive."""
        import numpy as np

        return np.asarray(_HostBytes(self))

    def data_ptr(self) -> int:
        return self.ptr

    def cpu(self) -> _DLStorage:
        return self

    def copy_(self, other: Any) -> _DLStorage:
        return self

    def copy_from_host(self, dst_offset: int, src_ptr: int, nbytes: int) -> None:
        from ..memory.cuda import CudaStorage

        CudaStorage(self.ptr, self.nbytes, self.device).copy_from_host(dst_offset, src_ptr, nbytes)

    def copy_to_host(self, src_offset: int, dst_ptr: int, nbytes: int) -> None:
        from ..memory.cuda import CudaStorage

        CudaStorage(self.ptr, self.nbytes, self.device).copy_to_host(src_offset, dst_ptr, nbytes)

    def __del__(self) -> None:
        m = self._managed
        if m and m.contents.deleter:
            m.contents.deleter(m)


class _HostBytes:
    """Exposes a host storage's bytes to numpy and holds the storage for as long as numpy does."""

    def __init__(self, storage: _DLStorage) -> None:
        self.storage = storage
        self.__array_interface__ = {
            "shape": (storage.nbytes,), "typestr": "|u1", "data": (storage.ptr or 0, False), "version": 3,
        }


def unpack(obj: Any) -> tuple[_DLStorage, tuple[int, ...], tuple[int, ...], D.DType]:
    """The storage, shape, strides (elements) and dtype of a DLPack producer's tensor, sharing its memory."""
    if not hasattr(obj, "__dlpack__"):
        raise NbxTypeError(f"from_dlpack: {type(obj).__name__} does not implement __dlpack__")
    kind, _ = obj.__dlpack_device__()
    capsule = obj.__dlpack__(stream=1) if int(kind) == _CUDA else obj.__dlpack__()
    ptr = _api.PyCapsule_GetPointer(capsule, b"dltensor")
    managed = ctypes.cast(ptr, ctypes.POINTER(_DLManagedTensor))
    _api.PyCapsule_SetName(capsule, b"used_dltensor")
    dl = managed.contents.dl_tensor
    key = (dl.dtype.code, dl.dtype.bits)
    if key not in _FROM_CODE or dl.dtype.lanes != 1:
        raise NbxTypeError(f"from_dlpack: DLPack dtype code {dl.dtype.code} with {dl.dtype.bits} bits has no "
                           "NBX equivalent")
    dtype = _FROM_CODE[key]
    if dl.device.device_type == _CPU:
        device = CPU
    elif dl.device.device_type == _CUDA:
        device = Device("cuda", dl.device.device_id)
    else:
        raise DeviceError(f"from_dlpack: DLPack device type {dl.device.device_type} is not cpu or cuda")
    shape = tuple(dl.shape[i] for i in range(dl.ndim))
    if dl.strides:
        strides = tuple(dl.strides[i] for i in range(dl.ndim))
    else:
        from ..shape import contiguous_strides

        strides = contiguous_strides(shape)
    if any(s < 0 for s in strides):
        raise NbxTypeError("from_dlpack: negative strides are not supported: pass a copy")
    item = dtype.itemsize
    extent = (1 + sum((n - 1) * s for n, s in zip(shape, strides, strict=True))) * item if all(shape) else 0
    base = (dl.data or 0) + dl.byte_offset
    return _DLStorage(managed, base, extent, device), shape, strides, dtype
