"""Padding: ``constant_pad_nd``, ``pad`` and the reflection/replication pads, one kernel.

Each output coordinate maps back to an input coordinate per dim: shifted by the leading pad, then
(constant) masked to the fill value outside the input, (reflect) mirrored about the edges without
repeating them, (replicate) clamped, or (circular) wrapped. A negative pad crops (circular
padding crops before it wraps, as torch does).
"""

from collections.abc import Sequence
from typing import Any

import triton
import triton.language as tl

from nbx_core.errors import NbxTypeError, NbxValueError, ShapeError
from nbx_core.ops.creation import empty
from nbx_core.ops.layout import suggest_memory_format
from nbx_core.ops.views import narrow, permute
from nbx_core.runtime.kernels.copy import cast_to
from nbx_core.runtime.kernels.indexing import block_indices, needs_int64
from nbx_core.runtime.launch import block_size, cdiv, launch
from nbx_core.shape import stride_order
from nbx_core.tensor import NBXTensor

CONSTANT, REFLECT, REPLICATE, CIRCULAR = range(4)
_MODES = {"constant": CONSTANT, "reflect": REFLECT, "replicate": REPLICATE, "circular": CIRCULAR}


@triton.jit
def _pad_kernel(
    out_ptr,
    x_ptr,
    n,
    out_shape,
    in_shape,
    in_strides,
    before,
    fval: tl.float64,
    ival: tl.int64,
    MODE: tl.constexpr,
    FLOAT: tl.constexpr,
    NDIM: tl.constexpr,
    BLOCK: tl.constexpr,
    INT64: tl.constexpr,
):
    i, m = block_indices(n, BLOCK, INT64)
    rem = i
    off = tl.zeros([BLOCK], tl.int64)
    inside = m
    for k in tl.static_range(NDIM):
        c = (rem % out_shape[NDIM - 1 - k]).to(tl.int64) - before[NDIM - 1 - k]
        rem = rem // out_shape[NDIM - 1 - k]
        size = in_shape[NDIM - 1 - k]
        if MODE == 0:
            inside = inside & (c >= 0) & (c < size)
            c = tl.minimum(tl.maximum(c, 0), size - 1)
        elif MODE == 1:
            c = tl.where(c < 0, -c, c)
            c = tl.where(c >= size, 2 * (size - 1) - c, c)
        elif MODE == 2:
            c = tl.minimum(tl.maximum(c, 0), size - 1)
        else:
            c = ((c % size) + size) % size
        off += c * in_strides[NDIM - 1 - k]
    x = tl.load(x_ptr + off, mask=inside)
    if MODE == 0:
        if FLOAT:
            fill = cast_to(tl.full([BLOCK], fval, tl.float64), out_ptr.dtype.element_ty)
        else:
            fill = cast_to(tl.full([BLOCK], ival, tl.int64), out_ptr.dtype.element_ty)
        x = tl.where(inside, x, fill)
    tl.store(out_ptr + i, x, mask=m)


def _pad(op: str, x: NBXTensor, pad: Sequence[int], mode: int, value: Any = 0) -> NBXTensor:
    pad = list(pad)
    if len(pad) % 2 or len(pad) // 2 > x.ndim:
        raise ShapeError(f"{op}: padding {pad} must have an even length of at most 2 * ndim ({2 * x.ndim})")
    k = len(pad) // 2
    before = [0] * x.ndim
    shape = list(x.shape)
    for j in range(k):
        d = x.ndim - 1 - j
        lo, hi = pad[2 * j], pad[2 * j + 1]
        size = x.shape[d]
        if mode == CIRCULAR and (lo < 0 or hi < 0) and size + min(lo, 0) + min(hi, 0) >= 0:
            # torch crops first, then wraps around what is left.
            x = narrow(x, d, max(-lo, 0), size + min(lo, 0) + min(hi, 0))
            lo, hi, size = max(lo, 0), max(hi, 0), x.shape[d]
        if mode == REFLECT and (lo >= size or hi >= size):
            raise NbxValueError(
                f"{op}: padding ({lo}, {hi}) must be smaller than the input size {size} of dim {d} for reflect padding"
            )
        if mode == CIRCULAR and (lo > size or hi > size):
            raise NbxValueError(
                f"{op}: padding ({lo}, {hi}) must be at most the input size {size} of dim {d} for circular padding"
            )
        if mode in (REPLICATE, REFLECT) and size == 0 and (lo or hi):
            raise NbxValueError(f"{op}: cannot pad dim {d} of size 0 in this mode")
        before[d] = lo
        shape[d] = size + lo + hi
        if shape[d] < 0:
            raise ShapeError(f"{op}: padding {pad} makes dim {d} of size {size} negative ({shape[d]})")
    # Laid out as torch lays out a pad of x (channels-last stays channels-last); the kernel walks the
    # result in memory order, so every view below is permuted to that order.
    out = empty(*shape, dtype=x.dtype, device=x.device, memory_format=suggest_memory_format(x))
    order = stride_order(out.shape, out.stride())[::-1]
    n = out.numel()
    if n == 0:
        return out
    if x.numel() == 0 and mode == CONSTANT:
        from nbx_core.ops.copy import fill_

        return fill_(out, value)
    fl = x.dtype.is_floating_point
    if not isinstance(value, bool | int | float):
        raise NbxTypeError(f"{op}: value must be a number, got {type(value).__name__}")
    xp = permute(x, order) if x.ndim else x
    dims = (
        (tuple(shape[d] for d in order), tuple(xp.shape), tuple(xp.stride()), tuple(before[d] for d in order))
        if x.ndim
        else ((1,), (1,), (0,), (0,))
    )
    block = block_size(n)
    launch(
        _pad_kernel,
        (cdiv(n, block),),
        permute(out, order) if x.ndim else out,
        xp,
        n,
        *dims,
        float(value) if fl else 0.0,
        0 if fl else int(value),
        MODE=mode,
        FLOAT=fl,
        NDIM=len(dims[0]),
        BLOCK=block,
        INT64=needs_int64(n, x, out),
    )
    return out


def constant_pad_nd(self: NBXTensor, pad: Sequence[int], value: Any = 0) -> NBXTensor:
    """``aten::constant_pad_nd``: pad the last ``len(pad) // 2`` dims with ``value`` (negative pads crop)."""
    return _pad("aten::constant_pad_nd", self, pad, CONSTANT, value)


def _mode_pad(op: str, x: NBXTensor, padding: Sequence[int], mode: int, k: int) -> NBXTensor:
    if len(padding) != 2 * k:
        raise ShapeError(f"{op}: padding must have {2 * k} values, got {len(padding)}")
    if x.ndim not in (k + 1, k + 2):
        raise ShapeError(f"{op}: expected a {k + 1}-D or {k + 2}-D input, got {x.ndim}-D")
    return _pad(op, x, padding, mode)


def pad(self: NBXTensor, pad: Sequence[int], mode: str = "constant", value: float | None = None) -> NBXTensor:
    """``aten::pad``: constant, reflect, replicate or circular padding of the last ``len(pad) // 2`` dims."""
    op = "aten::pad"
    code = _MODES.get(mode)
    if code is None:
        raise NbxValueError(f"{op}: mode {mode!r} is not supported: use one of {sorted(_MODES)}")
    if code == CONSTANT:
        return _pad(op, self, pad, CONSTANT, 0 if value is None else value)
    if value is not None:
        raise NbxValueError(f"{op}: value is only used with mode 'constant', got mode {mode!r}")
    k = len(pad) // 2
    if not 1 <= k <= 3:
        raise ShapeError(f"{op}: mode {mode!r} pads 1 to 3 dims, got padding {list(pad)}")
    return _mode_pad(op, self, pad, code, k)


def reflection_pad1d(self: NBXTensor, padding: Sequence[int]) -> NBXTensor:
    """``aten::reflection_pad1d``: mirror the last dim about its edges."""
    return _mode_pad("aten::reflection_pad1d", self, padding, REFLECT, 1)


def reflection_pad2d(self: NBXTensor, padding: Sequence[int]) -> NBXTensor:
    """``aten::reflection_pad2d``: mirror the last two dims about their edges."""
    return _mode_pad("aten::reflection_pad2d", self, padding, REFLECT, 2)


def reflection_pad3d(self: NBXTensor, padding: Sequence[int]) -> NBXTensor:
    """``aten::reflection_pad3d``: mirror the last three dims about their edges."""
    return _mode_pad("aten::reflection_pad3d", self, padding, REFLECT, 3)


def replication_pad1d(self: NBXTensor, padding: Sequence[int]) -> NBXTensor:
    """``aten::replication_pad1d``: repeat the edge values of the last dim."""
    return _mode_pad("aten::replication_pad1d", self, padding, REPLICATE, 1)


def replication_pad2d(self: NBXTensor, padding: Sequence[int]) -> NBXTensor:
    """``aten::replication_pad2d``: repeat the edge values of the last two dims."""
    return _mode_pad("aten::replication_pad2d", self, padding, REPLICATE, 2)


def replication_pad3d(self: NBXTensor, padding: Sequence[int]) -> NBXTensor:
    """``aten::replication_pad3d``: repeat the edge values of the last three dims."""
    return _mode_pad("aten::replication_pad3d", self, padding, REPLICATE, 3)
