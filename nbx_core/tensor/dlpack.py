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
from ..errors import DeviceError, NbxError, NbxTypeError
from ..memory import settle

_CPU, _CUDA = 1, 2
_CODES = {  # DLDataTypeCode per NBX dtype
    "bool": 6,
    "uint8": 1,
    "int8": 0,
    "int16": 0,
    "int32": 0,
    "int64": 0,
    "float16": 2,
    "bfloat16": 4,
    "float32": 2,
    "float64": 2,
    "complex64": 5,
    "float8_e4m3fn": 10,
    "float8_e5m2": 12,
}
_FROM_CODE = {(code, D.from_name(name).itemsize * 8): D.from_name(name) for name, code in _CODES.items()}


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class _DLManagedTensor(ctypes.Structure):
    pass


# Deleters take the DLManagedTensor's address: c_void_p has the ABI of a pointer to it.
_Deleter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_DLManagedTensor._fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _Deleter)]


def _c_api(name: str, restype: Any, *argtypes: Any) -> Any:
    """A private prototype of a Python C-API function: the shared ``ctypes.pythonapi`` entries keep
    whatever argument types other libraries gave them."""
    return ctypes.PYFUNCTYPE(restype, *argtypes)((name, ctypes.pythonapi))


_capsule_new = _c_api("PyCapsule_New", ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)
_capsule_pointer = _c_api("PyCapsule_GetPointer", ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)
_capsule_rename = _c_api("PyCapsule_SetName", ctypes.c_int, ctypes.py_object, ctypes.c_char_p)
# A capsule's destructor gets it at refcount zero: read it by address, never as a Python reference.
_dying_capsule_valid = _c_api("PyCapsule_IsValid", ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)
_dying_capsule_pointer = _c_api("PyCapsule_GetPointer", ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)
_incref = _c_api("Py_IncRef", None, ctypes.py_object)

# Exported tensors stay alive until their consumer calls the deleter, or their capsule dies unconsumed.
_exported: dict[int, tuple] = {}


# The two callbacks below can run while the interpreter exits, after this module's globals are
# cleared (a torch tensor or a capsule freed late): they use only what their defaults bind.
def _release(address: int, _pop: Any = _exported.pop) -> None:
    _pop(address, None)


def _capsule_destructor(
    capsule: int, _valid: Any = _dying_capsule_valid, _pointer: Any = _dying_capsule_pointer, _pop: Any = _exported.pop
) -> None:
    # An unconsumed capsule still owns its tensor; a consumed one was renamed "used_dltensor".
    if _valid(capsule, b"dltensor"):
        _pop(_pointer(capsule, b"dltensor"), None)


_release_c = _Deleter(_release)
_capsule_destructor_c = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(_capsule_destructor)
# Consumers and capsules hold these C entry points, and may be freed after this module is gone at
# exit: an extra reference keeps each callback's code alive for as long as the process runs.
_incref(_release_c)
_incref(_capsule_destructor_c)


def dlpack_device(t: Any) -> tuple[int, int]:
    return (_CUDA, t.device.index) if t.device.type == "cuda" else (_CPU, 0)


def to_dlpack(t: Any, stream: Any = None, max_version: Any = None) -> Any:
    """A "dltensor" capsule viewing the memory of NBXTensor ``t``; NBX work is on the default stream already."""
    if t.device.type == "cuda":
        from ..memory.cuda import synchronize

        settle(t.storage)  # another library may keep the address: a graph's output must not move later
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
    managed.deleter = _release_c
    addr = ctypes.addressof(managed)
    _exported[addr] = (managed, shape, strides, t)
    return _capsule_new(addr, b"dltensor", ctypes.cast(_capsule_destructor_c, ctypes.c_void_p))


class _DLStorage:
    """Memory owned by a DLPack producer; calls the producer's deleter when collected."""

    __slots__ = ("ptr", "nbytes", "device", "_deleter", "_managed", "__weakref__")

    def __init__(self, deleter: Any, managed: int, ptr: int, nbytes: int, device: Device) -> None:
        self._deleter = deleter
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
        # No globals here: a storage may be collected while the interpreter exits.
        if self._deleter:
            self._deleter(self._managed)


class _HostBytes:
    """Exposes a host storage's bytes to numpy and holds the storage for as long as numpy does."""

    def __init__(self, storage: _DLStorage) -> None:
        self.storage = storage
        self.__array_interface__ = {
            "shape": (storage.nbytes,),
            "typestr": "|u1",
            "data": (storage.ptr or 0, False),
            "version": 3,
        }


def unpack(obj: Any) -> tuple[_DLStorage, tuple[int, ...], tuple[int, ...], D.DType]:
    """The storage, shape, strides (elements) and dtype of a DLPack producer's tensor, sharing its memory."""
    if not hasattr(obj, "__dlpack__"):
        raise NbxTypeError(f"from_dlpack: {type(obj).__name__} does not implement __dlpack__")
    kind, _ = obj.__dlpack_device__()
    capsule = obj.__dlpack__(stream=1) if int(kind) == _CUDA else obj.__dlpack__()
    address = _capsule_pointer(capsule, b"dltensor")
    _capsule_rename(capsule, b"used_dltensor")  # NBX owns the tensor now: the capsule must not delete it
    managed = _DLManagedTensor.from_address(address)
    deleter = managed.deleter
    try:
        dtype, device, shape, strides = _layout(managed.dl_tensor)
    except NbxError:
        if deleter:
            deleter(address)
        raise
    dl = managed.dl_tensor
    item = dtype.itemsize
    extent = (1 + sum((n - 1) * s for n, s in zip(shape, strides, strict=True))) * item if all(shape) else 0
    base = (dl.data or 0) + dl.byte_offset
    return _DLStorage(deleter, address, base, extent, device), shape, strides, dtype


def _layout(dl: _DLTensor) -> tuple[D.DType, Device, tuple[int, ...], tuple[int, ...]]:
    """The dtype, device, shape and strides of a DLTensor, or an error naming what NBX cannot hold."""
    key = (dl.dtype.code, dl.dtype.bits)
    if key not in _FROM_CODE or dl.dtype.lanes != 1:
        raise NbxTypeError(
            f"from_dlpack: DLPack dtype code {dl.dtype.code} with {dl.dtype.bits} bits has no NBX equivalent"
        )
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
    return _FROM_CODE[key], device, shape, strides
