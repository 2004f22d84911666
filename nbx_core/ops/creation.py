"""Creation ops with ATen's signatures: empty/zeros/ones/full (and their _like/new_ forms),
arange, linspace, scalar_tensor.

Where ``device`` is not given a new tensor goes to the backend's default device (the GPU on the
cuda backend, else the host); ``*_like`` and ``new_*`` follow their input.
"""

from __future__ import annotations

import math
from typing import Any

from .. import dtypes as D
from ..backend import default_device
from ..device import Device, as_device
from ..errors import NbxValueError
from ..shape import as_shape, check_shape
from ..tensor import NBXTensor, empty_tensor
from . import layout as formats
from .copy import _empty_strided, fill_, scalar_value


def _device(device: Any, like: NBXTensor | None = None) -> Device:
    if device is not None:
        return as_device(device)
    return like.device if like is not None else default_device()


def _dtype(dtype: Any, default: D.DType) -> D.DType:
    return D.as_dtype(dtype) if dtype is not None else default


def empty(*size: Any, dtype: Any = None, layout: Any = None, device: Any = None, pin_memory: Any = None,
          memory_format: Any = None, requires_grad: bool = False) -> NBXTensor:
    shape = check_shape("empty", as_shape("empty", size))
    formats.check_layout("empty", layout)
    fmt = formats.CONTIGUOUS if memory_format is None else formats.format_name("empty", memory_format)
    if fmt == formats.PRESERVE:
        raise NbxValueError("empty: preserve_format needs an input to preserve; pass contiguous_format, "
                            "channels_last or channels_last_3d")
    strides = formats.format_strides("empty", shape, fmt)
    return _empty_strided(shape, strides, _dtype(dtype, D.default_float), _device(device))


def empty_strided(size: Any, stride: Any, *, dtype: Any = None, layout: Any = None, device: Any = None,
                  pin_memory: Any = None) -> NBXTensor:
    shape = check_shape("empty_strided", as_shape("empty_strided", size))
    strides = tuple(as_shape("empty_strided", stride, "stride"))
    if len(strides) != len(shape):
        raise NbxValueError(f"empty_strided: size {shape} and stride {strides} must have the same length")
    if any(s < 0 for s in strides):
        raise NbxValueError(f"empty_strided: strides must be non-negative, got {strides}")
    return _empty_strided(shape, strides, _dtype(dtype, D.default_float), _device(device))


def empty_like(self: NBXTensor, *, dtype: Any = None, layout: Any = None, device: Any = None,
               pin_memory: Any = None, memory_format: Any = None) -> NBXTensor:
    """A new tensor shaped like ``self``, laid out as ``memory_format`` says (default: like ``self``)."""
    formats.check_layout("empty_like", layout)
    strides = formats.strides_for("empty_like", self, formats.format_name("empty_like", memory_format))
    return _empty_strided(self.shape, strides, _dtype(dtype, self.dtype), _device(device, self))


def new_empty(self: NBXTensor, size: Any, *, dtype: Any = None, layout: Any = None, device: Any = None,
              pin_memory: Any = None) -> NBXTensor:
    shape = check_shape("new_empty", as_shape("new_empty", size))
    return empty_tensor(shape, _dtype(dtype, self.dtype), _device(device, self))


def _filled(op: str, t: NBXTensor, value: Any) -> NBXTensor:
    return fill_(t, scalar_value(op, value, t.dtype))


def zeros(*size: Any, dtype: Any = None, layout: Any = None, device: Any = None, pin_memory: Any = None,
          requires_grad: bool = False) -> NBXTensor:
    return _filled("zeros", empty(*size, dtype=dtype, device=device), 0)


def ones(*size: Any, dtype: Any = None, layout: Any = None, device: Any = None, pin_memory: Any = None,
         requires_grad: bool = False) -> NBXTensor:
    return _filled("ones", empty(*size, dtype=dtype, device=device), 1)


def _fill_dtype(value: Any) -> D.DType:
    if isinstance(value, NBXTensor):
        return value.dtype
    return D.scalar_dtype(value)


def full(size: Any, fill_value: Any, *, dtype: Any = None, layout: Any = None, device: Any = None,
         pin_memory: Any = None, requires_grad: bool = False) -> NBXTensor:
    """A tensor of ``fill_value``; its dtype follows the value (bool, int64, float) unless given."""
    out = empty(size, dtype=_dtype(dtype, _fill_dtype(fill_value)), device=device)
    return _filled("full", out, fill_value)


def zeros_like(self: NBXTensor, *, dtype: Any = None, layout: Any = None, device: Any = None,
               pin_memory: Any = None, memory_format: Any = None) -> NBXTensor:
    return _filled("zeros_like", empty_like(self, dtype=dtype, device=device, memory_format=memory_format), 0)


def ones_like(self: NBXTensor, *, dtype: Any = None, layout: Any = None, device: Any = None,
              pin_memory: Any = None, memory_format: Any = None) -> NBXTensor:
    return _filled("ones_like", empty_like(self, dtype=dtype, device=device, memory_format=memory_format), 1)


def full_like(self: NBXTensor, fill_value: Any, *, dtype: Any = None, layout: Any = None,
              device: Any = None, pin_memory: Any = None, memory_format: Any = None) -> NBXTensor:
    out = empty_like(self, dtype=dtype, device=device, memory_format=memory_format)
    return _filled("full_like", out, fill_value)


def new_zeros(self: NBXTensor, size: Any, *, dtype: Any = None, layout: Any = None, device: Any = None,
              pin_memory: Any = None) -> NBXTensor:
    return _filled("new_zeros", new_empty(self, size, dtype=dtype, device=device), 0)


def new_ones(self: NBXTensor, size: Any, *, dtype: Any = None, layout: Any = None, device: Any = None,
             pin_memory: Any = None) -> NBXTensor:
    return _filled("new_ones", new_empty(self, size, dtype=dtype, device=device), 1)


def new_full(self: NBXTensor, size: Any, fill_value: Any, *, dtype: Any = None, layout: Any = None,
             device: Any = None, pin_memory: Any = None) -> NBXTensor:
    return _filled("new_full", new_empty(self, size, dtype=dtype, device=device), fill_value)


def scalar_tensor(s: Any, *, dtype: Any = None, layout: Any = None, device: Any = None,
                  pin_memory: Any = None) -> NBXTensor:
    """A 0-dim tensor holding ``s``; float32 unless ``dtype`` says otherwise (torch's default)."""
    out = empty_tensor((), _dtype(dtype, D.default_float), _device(device))
    return _filled("scalar_tensor", out, s)


def _number(op: str, value: Any, arg: str) -> int | float:
    if isinstance(value, NBXTensor):
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise NbxValueError(f"{op}: {arg} must be a real number, got {value!r}")
    return value


def arange(start: Any, end: Any = None, step: Any = 1, *, dtype: Any = None, layout: Any = None,
           device: Any = None, pin_memory: Any = None, requires_grad: bool = False) -> NBXTensor:
    """``arange(end)``, ``arange(start, end)``, ``arange(start, end, step)``: torch's sizes and dtypes."""
    if end is None:
        start, end = 0, start
    start = _number("arange", start, "start")
    end = _number("arange", end, "end")
    step = _number("arange", step, "step")
    if step == 0:
        raise NbxValueError("arange: step must be nonzero")
    if not all(math.isfinite(v) for v in (start, end)):
        raise NbxValueError(f"arange: unsupported range: {start} -> {end}")
    if (step > 0 and end < start) or (step < 0 and end > start):
        raise NbxValueError("arange: upper bound and larger bound inconsistent with step sign")
    is_float = any(isinstance(v, float) for v in (start, end, step))
    dt = _dtype(dtype, D.default_float if is_float else D.int64)
    if dt.is_integral and not is_float:
        n = max(-(-(end - start) // step), 0)
    else:
        n = max(math.ceil((end - start) / step), 0)
    out = empty_tensor((n,), dt, _device(device))
    from ..runtime.kernels.fill import range_into

    if dt.is_integral and is_float:
        # torch truncates float bounds and step to the integer type before stepping.
        range_into(out, int(start), int(step))
    else:
        range_into(out, start, step)
    return out


def linspace(start: Any, end: Any, steps: int, *, dtype: Any = None, layout: Any = None, device: Any = None,
             pin_memory: Any = None, requires_grad: bool = False) -> NBXTensor:
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive."""
    start = _number("linspace", start, "start")
    end = _number("linspace", end, "end")
    if not isinstance(steps, int) or steps < 0:
        raise NbxValueError(f"linspace: number of steps must be non-negative, got {steps}")
    dt = _dtype(dtype, D.default_float)
    out = empty_tensor((steps,), dt, _device(device))
    if steps == 1:
        return _filled("linspace", out, start)
    from ..runtime.kernels.fill import range_into

    step = (end - start) / (steps - 1) if steps > 1 else 0.0
    range_into(out, float(start), step, end=float(end))
    return out
