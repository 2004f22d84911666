"""Ops that move or convert data: copy_, clone, contiguous, _to_copy, to, type_as, fill.

Casts follow torch: bool is ``x != 0``, float to int truncates, complex to real keeps the real
part, real to complex gets a zero imaginary part. Between the host and a GPU the bytes travel
as they are and the cast runs where the backend's kernels run.

``to`` and ``_to_copy`` take every ATen overload's arguments. ``non_blocking`` and
``pin_memory`` change no value and are accepted as they are: copies are synchronous and NBX
host memory is never pinned. Layouts and memory formats follow :mod:`nbx_core.ops.layout`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes as D
from ..backend import kernel_device_type
from ..device import Device, as_device
from ..errors import DeviceError, NbxTypeError, NbxValueError
from ..shape import broadcast_shapes, contiguous_strides
from ..tensor import NBXTensor, empty_tensor
from ..tensor.args import tensor_arg
from . import layout as formats
from . import views


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
    tensor_arg("copy_", src, "src")
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
    """A copy with its own storage, laid out as ``memory_format`` says (default: like ``self``)."""
    strides = formats.strides_for("clone", self, formats.format_name("clone", memory_format))
    out = _empty_strided(self.shape, strides, self.dtype, self.device)
    if self.numel():
        _copy_same_device(out, self)
    return out


def contiguous(self: NBXTensor, memory_format: Any = None) -> NBXTensor:
    """``self`` when already contiguous in ``memory_format`` (default: row-major), else a copy that is."""
    fmt = formats.CONTIGUOUS if memory_format is None else formats.format_name("contiguous", memory_format)
    if formats.is_contiguous_as(self, fmt):
        return self
    if fmt == formats.PRESERVE:
        raise NbxValueError("contiguous: preserve memory format is unsupported by the contiguous operator; "
                            "pass contiguous_format, channels_last or channels_last_3d")
    return clone(self, memory_format=fmt)


def channels_last(self: NBXTensor) -> NBXTensor:
    """``nbx::channels_last``: ``self`` in the channels-last memory format when it is 4-D
    (channels_last_3d when 5-D), else ``self``. The graph planner puts convolution inputs in this
    layout (:mod:`nbx_core.graph.layout`); like ``contiguous``, it copies only when it must."""
    tensor_arg("nbx::channels_last", self, "self")
    fmt = {4: formats.CHANNELS_LAST, 5: formats.CHANNELS_LAST_3D}.get(self.ndim)
    return self if fmt is None else contiguous(self, memory_format=fmt)


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


def _move(t: NBXTensor, device: Device) -> NBXTensor:
    """``t``'s values, contiguous, on another device."""
    if device.type == "cuda" and t.device.type == "cpu":
        return _host_to_device(t, device)
    moved = _device_to_host(t)
    return moved if device.type == "cpu" else _host_to_device(moved, device)


def _to_copy(self: NBXTensor, *, dtype: Any = None, layout: Any = None, device: Any = None,
             pin_memory: Any = None, non_blocking: bool = False, memory_format: Any = None) -> NBXTensor:
    """``aten::_to_copy``: always a new tensor, of ``dtype`` on ``device`` when given, with the
    strides ``memory_format`` gives (default: ``self``'s when dense, else dense in its dim order)."""
    return _convert("_to_copy", self, dtype, layout, device, memory_format)


def _convert(op: str, self: NBXTensor, dtype: Any, layout: Any, device: Any, memory_format: Any) -> NBXTensor:
    formats.check_layout(op, layout)
    dt = D.as_dtype(dtype) if dtype is not None else self.dtype
    dev = as_device(device) if device is not None else self.device
    strides = formats.strides_for(op, self, formats.format_name(op, memory_format))
    src = self
    if dev != self.device:
        src = _move(self, dev)
        if src.dtype is dt and src.stride() == strides:
            return src
    out = _empty_strided(self.shape, strides, dt, dev)
    if self.numel():
        _copy_same_device(out, src)
    return out


def type_as(self: NBXTensor, other: NBXTensor) -> NBXTensor:
    """``self`` cast to ``other``'s dtype (``self`` itself when it already has it)."""
    return to(self, other.dtype)


# torch's ScalarType codes, which TorchScript's ``to.prim_*`` overloads take as ``int? dtype``.
_SCALAR_TYPES = {0: "uint8", 1: "int8", 2: "int16", 3: "int32", 4: "int64", 5: "float16", 6: "float32",
                 7: "float64", 9: "complex64", 11: "bool", 15: "bfloat16", 23: "float8_e5m2", 24: "float8_e4m3fn"}
_TO_KEYWORDS = frozenset({"other", "dtype", "layout", "device", "pin_memory", "non_blocking", "copy",
                          "memory_format"})


def _is_dtype(value: Any) -> bool:
    return isinstance(value, D.DType) or (type(value).__module__ == "torch" and "dtype" in type(value).__name__) \
        or (isinstance(value, str) and value.removeprefix("torch.") in D.NAMES)


def to_arguments(op: str, args: tuple[Any, ...], kwargs: dict[str, Any], *,
                 int_is_dtype: bool) -> dict[str, Any]:
    """The arguments of a ``to`` call in any of its overloads, by name.

    The first positional argument picks the overload, as ATen's dispatcher does: a tensor
    (``to.other``), a dtype (``to.dtype``), a bool (``to.prim_other``), else a device
    (``to.device``, ``to.prim_Device``). ``int_is_dtype`` reads an int there as a ScalarType code
    (TorchScript's ``to.prim_dtype``), else as a CUDA device index (Python's ``x.to(0)``).
    """
    first = args[0] if args else None
    if not args:
        names: tuple[str, ...] = ()
    elif isinstance(first, NBXTensor):
        names = ("other", "non_blocking", "copy", "memory_format")
    elif isinstance(first, bool):
        names = ("non_blocking", "copy")
    elif _is_dtype(first) or (int_is_dtype and isinstance(first, int)) or (
            first is None and len(args) > 1 and isinstance(args[1], bool)):
        names = ("dtype", "non_blocking", "copy", "memory_format")
    else:
        names = ("device", "dtype", "non_blocking", "copy", "memory_format")
    if len(args) > len(names):
        raise NbxTypeError(f"{op}: takes at most {len(names)} positional arguments after self in this form "
                           f"({', '.join(names)}), got {len(args)}")
    given = dict(zip(names, args, strict=False))
    for key, value in kwargs.items():
        if key not in _TO_KEYWORDS:
            raise NbxTypeError(f"{op}: unexpected keyword argument {key!r}; to takes "
                               f"{', '.join(sorted(_TO_KEYWORDS))}")
        if key in given:
            raise NbxTypeError(f"{op}: got two values for argument {key!r}")
        given[key] = value
    other = given.pop("other", None)
    if other is not None:
        tensor_arg(op, other, "other")
        given.setdefault("dtype", other.dtype)
        given.setdefault("device", other.device)
    dtype = given.get("dtype")
    if isinstance(dtype, int) and not isinstance(dtype, bool):
        if dtype not in _SCALAR_TYPES:
            raise NbxTypeError(f"{op}: dtype code {dtype} names no NBX dtype (codes: {sorted(_SCALAR_TYPES)})")
        given["dtype"] = _SCALAR_TYPES[dtype]
    return given


def converted(op: str, self: NBXTensor, *, dtype: Any = None, layout: Any = None, device: Any = None,
              pin_memory: Any = None, non_blocking: bool = False, copy: bool = False,
              memory_format: Any = None) -> NBXTensor:
    """ATen's ``to``: ``self`` itself when nothing would change, else ``_to_copy``.

    Nothing changes when dtype, layout and device are absent or equal to ``self``'s, ``copy`` is
    false, and ``memory_format`` is absent, ``preserve_format`` or the format torch would suggest
    for ``self`` (``contiguous_format`` unless its strides look channels-last, even when they are
    not contiguous: torch's rule).
    """
    formats.check_layout(op, layout)
    fmt = formats.format_name(op, memory_format)
    if (not copy and (dtype is None or D.as_dtype(dtype) is self.dtype)
            and (device is None or as_device(device) == self.device)
            and fmt in (formats.PRESERVE, formats.suggest_memory_format(self))):
        return self
    return _convert(op, self, dtype, layout, device, fmt)


def to(self: NBXTensor, *args: Any, **kwargs: Any) -> NBXTensor:
    """``aten::to`` in every overload (dtype_layout, device, dtype, other, prim_*): ``self`` itself
    when nothing changes (unless ``copy=True``), else a converted copy."""
    return converted("to", self, **to_arguments("to", args, kwargs, int_is_dtype=True))


def scalar_value(op: str, value: Any, dtype: D.DType) -> bool | int | float | complex:
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
        info = np.iinfo(dtype.np)
        if isinstance(value, float):
            if value != value or not info.min <= value <= info.max:
                raise NbxValueError(f"{op}: value {value} is out of range for {dtype} ({info.min}..{info.max})")
            return int(value)
        value = int(value)
        if info.min == 0 and -info.max <= value < 0:
            return value % (info.max + 1)  # torch lets a negative int wrap into an unsigned type
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
    if self.dtype.is_complex or isinstance(v, complex):  # scalar_value gives a complex for a complex dtype only
        c = complex(v)
        fill_into(views.real(self), c.real)
        fill_into(views.imag(self), c.imag)
    else:
        fill_into(self, v)
    return self


def fill(self: NBXTensor, value: Any) -> NBXTensor:
    """Functional ``aten::fill``: a new tensor shaped like ``self``; ``self`` is not touched."""
    out = _empty_strided(self.shape, formats.dense_strides_like(self), self.dtype, self.device)
    return fill_(out, value)
