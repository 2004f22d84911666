"""Ops that move or convert data: copy_, clone, contiguous, _to_copy, type_as, fill.

Casts follow torch: bool is ``x != 0``, float to int truncates, complex to real keeps the real
part, real to complex gets a zero imaginary part. Between the host and a GPU the bytes travel
as they are and the cast runs where the backend's kernels run.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes as D
from ..backend import kernel_device_type
from ..device import Device, as_device
from ..errors import DeviceError, NbxTypeError, NbxValueError
from ..shape import broadcast_shapes, contiguous_strides, is_contiguous
from ..tensor import NBXTensor, empty_tensor
from . import views


def dense_strides_like(t: NBXTensor) -> tuple[int, ...]:
    """Strides for a new dense tensor laid out in ``t``'s dim order (torch's preserve_format)."""
    if is_contiguous(t.shape, t.stride()) or t.ndim == 0:
        return contiguous_strides(t.shape)
    if _non_overlapping_and_dense(t):
        return t.stride()
    # torch's infer_dense_strides: an insertion sort, innermost dim first, where a stride-0 dim
    # is ambiguous and keeps its place.
    shape, st = t.shape, t.stride()
    perm = list(range(t.ndim - 1, -1, -1))

    def should_swap(a: int, b: int) -> int:
        if st[a] == 0 or st[b] == 0:
            return 0
        if st[a] != st[b]:
            return -1 if st[a] < st[b] else 1
        return 1 if shape[a] > shape[b] else 0

    for i in range(1, t.ndim):
        d1 = i
        for d0 in range(i - 1, -1, -1):
            c = should_swap(perm[d0], perm[d1])
            if c > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif c < 0:
                break
    strides = [0] * t.ndim
    acc = 1
    for d in perm:
        strides[d] = acc
        acc *= max(shape[d], 1)
    return tuple(strides)


def _non_overlapping_and_dense(t: NBXTensor) -> bool:
    dims = sorted((d for d in range(t.ndim) if t.shape[d] != 1), key=lambda d: t.stride(d))
    expected = 1
    for d in dims:
        if t.stride(d) != expected:
            return False
        expected *= t.shape[d]
    return True


def _kernel_side(op: str, t: NBXTensor) -> None:
    """Host tensors are always usable (numpy stands in on the cuda backend); device tensors need cuda."""
    if t.device.type != "cpu" and t.device.type != kernel_device_type():
        raise DeviceError(
            f"{op}: the {kernel_device_type()} backend cannot run kernels on a tensor on {t.device}: "
            f"move it with .to('{kernel_device_type()}') first"
        )


def _overlaps(a: NBXTensor, b: NBXTensor) -> bool:
    if a.storage is not b.storage or a.numel() == 0 or b.numel() == 0:
        return False

    def span(t: NBXTensor) -> tuple[int, int]:
        hi = t.storage_offset() + sum(st * (s - 1) for s, st in zip(t.shape, t.stride(), strict=True))
        return t.storage_offset(), hi

    (a0, a1), (b0, b1) = span(a), span(b)
    return a0 <= b1 and b0 <= a1


def _check_writable(op: str, dst: NBXTensor) -> None:
    if any(st == 0 and s > 1 for s, st in zip(dst.shape, dst.stride(), strict=True)):
        raise NbxValueError(
            f"{op}: more than one element of the written-to tensor refers to a single memory location "
            "(it is an expanded view): clone it first"
        )


def _numpy_cast(arr: np.ndarray, dtype: D.DType) -> np.ndarray:
    if dtype is D.bool_:
        return arr != 0
    if arr.dtype.kind == "c" and not dtype.is_complex:
        arr = arr.real
    if dtype.np.kind == "V" or dtype.is_float8 or dtype is D.bfloat16:
        arr = arr.astype(np.float32)  # torch converts through float32 too
    return arr.astype(dtype.np)


def _copy_same_device(dst: NBXTensor, src: NBXTensor) -> None:
    from ..runtime.kernels.copy import copy_into
    from ..runtime.kernels.fill import fill_into

    if dst.device.type != kernel_device_type():
        _kernel_side("copy", dst)
        # Host tensors on the cuda backend: numpy does the host-side work, no kernel runs.
        np.copyto(dst.numpy(), _numpy_cast(src.numpy(), dst.dtype), casting="unsafe")
        return
    if dst.dtype.is_complex:
        if src.dtype.is_complex:
            copy_into(views.view_as_real(dst), views.view_as_real(src))
        else:
            copy_into(views.real(dst), src)
            fill_into(views.imag(dst), 0.0)
    elif src.dtype.is_complex:
        copy_into(dst, views.real(src))
    else:
        copy_into(dst, src)


def copy_(self: NBXTensor, src: NBXTensor, non_blocking: bool = False) -> NBXTensor:
    """Write ``src`` into ``self`` in place, broadcasting and casting to ``self``'s dtype."""
    if not isinstance(src, NBXTensor):
        raise NbxTypeError(f"copy_: src must be an NBXTensor, got {type(src).__name__}")
    if len(src.shape) > len(self.shape) or broadcast_shapes("copy_", self.shape, src.shape) != self.shape:
        raise NbxValueError(f"copy_: src of shape {src.shape} cannot be broadcast to self's shape {self.shape}")
    _check_writable("copy_", self)
    if self.numel() == 0:
        return self
    if src.device != self.device:
        src = _to_copy(src, device=self.device)
    if _overlaps(self, src):
        src = clone(src)
    _copy_same_device(self, src)
    return self


def copy(self: NBXTensor, src: NBXTensor, non_blocking: bool = False) -> NBXTensor:
    """Functional ``aten::copy``: a new tensor shaped like ``self`` holding ``src``'s values."""
    out = empty_tensor(self.shape, self.dtype, self.device)
    return copy_(out, src)


def clone(self: NBXTensor, memory_format: Any = None) -> NBXTensor:
    """A copy with its own storage, in ``self``'s dim order unless memory_format says contiguous."""
    if memory_format is not None and "contiguous" in str(memory_format):
        strides = contiguous_strides(self.shape)
    else:
        strides = dense_strides_like(self)
    out = _empty_strided(self.shape, strides, self.dtype, self.device)
    if self.numel():
        _copy_same_device(out, self)
    return out


def contiguous(self: NBXTensor, memory_format: Any = None) -> NBXTensor:
    """``self`` when already contiguous, else a contiguous copy."""
    if self.is_contiguous():
        return self
    return clone(self, memory_format="contiguous_format")


def _empty_strided(shape: tuple[int, ...], strides: tuple[int, ...], dtype: D.DType, device: Device) -> NBXTensor:
    if strides == contiguous_strides(shape):
        return empty_tensor(shape, dtype, device)
    extent = 1 + sum((s - 1) * st for s, st in zip(shape, strides, strict=True)) if all(shape) else 0
    base = empty_tensor((extent,), dtype, device)
    return NBXTensor(base.storage, shape, strides, 0, dtype)


def _host_to_device(src: NBXTensor, device: Device) -> NBXTensor:
    host = np.ascontiguousarray(src.numpy())
    out = empty_tensor(src.shape, src.dtype, device)
    out.storage.copy_from_host(0, host.ctypes.data, host.nbytes)
    return out


def _device_to_host(src: NBXTensor) -> NBXTensor:
    if not src.is_contiguous():
        if kernel_device_type() != "cuda":
            raise DeviceError(
                f"copying a non-contiguous {src.device} tensor to the host needs the cuda backend "
                "(NBX_BACKEND=cuda)"
            )
        src = contiguous(src)
    out = empty_tensor(src.shape, src.dtype)
    src.storage.copy_to_host(src.storage_offset() * src.dtype.itemsize, out.storage.ptr,
                             src.numel() * src.dtype.itemsize)
    return out


def _to_copy(self: NBXTensor, dtype: Any = None, layout: Any = None, device: Any = None,
            pin_memory: Any = None, non_blocking: bool = False, memory_format: Any = None) -> NBXTensor:
    """``aten::_to_copy``: always a new tensor, on ``device`` and of ``dtype`` when given."""
    dt = D.as_dtype(dtype) if dtype is not None else self.dtype
    dev = as_device(device) if device is not None else self.device
    if dev == self.device:
        out = _empty_strided(self.shape, dense_strides_like(self)
                             if memory_format is None or "preserve" in str(memory_format)
                             else contiguous_strides(self.shape), dt, dev)
        if self.numel():
            _copy_same_device(out, self)
        return out
    if dev.type == "cuda" and self.device.type == "cpu":
        moved = _host_to_device(self, dev)
    elif dev.type == "cpu" and self.device.type == "cuda":
        moved = _device_to_host(self)
    else:
        moved = _device_to_host(self)
        moved = _host_to_device(moved, dev)
    if moved.dtype is dt:
        return moved
    if moved.device.type == kernel_device_type():
        return _to_copy(moved, dtype=dt)
    return _host_cast(moved, dt)


def _host_cast(t: NBXTensor, dtype: D.DType) -> NBXTensor:
    """A cast done with numpy, for host tensors on a backend whose kernels run on the GPU."""
    from ..tensor import from_numpy

    res = _numpy_cast(t.numpy(), dtype)
    return from_numpy(res if res.flags.c_contiguous else res.copy(order="C"))


def type_as(self: NBXTensor, other: NBXTensor) -> NBXTensor:
    return self.to(other.dtype)


def to(self: NBXTensor, *args: Any, **kwargs: Any) -> NBXTensor:
    """``aten::to`` in every overload: ``self`` itself when nothing changes (unless ``copy=True``)."""
    return self.to(*args, **kwargs)


def scalar_value(op: str, value: Any, dtype: D.DType) -> bool | int | float:
    """A fill value as the Python number a kernel is given, checked against ``dtype``."""
    if isinstance(value, NBXTensor):
        if value.numel() != 1 or value.ndim != 0:
            raise NbxValueError(f"{op}: a tensor fill value must be 0-dim, got shape {value.shape}")
        value = value.item()
    if isinstance(value, complex) and not dtype.is_complex:
        raise NbxTypeError(f"{op}: cannot fill a {dtype} tensor with the complex value {value}")
    if dtype is D.bool_:
        return bool(value)
    if dtype.is_integral:
        if isinstance(value, float):
            if value != value or value in (float("inf"), float("-inf")):
                raise NbxValueError(f"{op}: cannot fill an integer tensor with {value}")
            return int(value)
        value = int(value)
        info = np.iinfo(dtype.np)
        if not info.min <= value <= info.max:
            raise NbxValueError(f"{op}: value {value} is out of range for {dtype} ({info.min}..{info.max})")
        return value
    if isinstance(value, complex):
        return value
    return float(value)


def fill_(self: NBXTensor, value: Any) -> NBXTensor:
    """Set every element of ``self`` to ``value`` in place."""
    from ..runtime.kernels.fill import fill_into

    _check_writable("fill_", self)
    v = scalar_value("fill_", value, self.dtype)
    if self.numel() == 0:
        return self
    if self.device.type != kernel_device_type():
        _kernel_side("fill_", self)
        self.numpy()[...] = v
        return self
    if self.dtype.is_complex:
        v = complex(v)
        fill_into(views.real(self), v.real)
        fill_into(views.imag(self), v.imag)
    else:
        fill_into(self, v)
    return self


def fill(self: NBXTensor, value: Any) -> NBXTensor:
    """Functional ``aten::fill``: a new tensor shaped like ``self``; ``self`` is not touched."""
    out = _empty_strided(self.shape, dense_strides_like(self), self.dtype, self.device)
    return fill_(out, value)
