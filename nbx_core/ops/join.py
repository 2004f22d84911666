"""Ops that build one tensor from others: cat, stack, repeat, select_scatter, slice_scatter."""

from __future__ import annotations

from collections.abc import Sequence

from .. import dtypes as D
from ..errors import NbxTypeError, NbxValueError, ShapeError
from ..shape import as_shape, wrap_dim
from ..tensor import NBXTensor, check_device, empty_tensor
from ..tensor.args import tensor_arg
from . import layout, views
from .copy import _empty_strided, clone, copy_


def _tensors(op: str, tensors: Sequence[NBXTensor]) -> list[NBXTensor]:
    if isinstance(tensors, NBXTensor) or not isinstance(tensors, Sequence):
        raise NbxTypeError(f"{op}: expected a list of tensors, got {type(tensors).__name__}")
    out = list(tensors)
    if not out:
        raise NbxValueError(f"{op}: expected a non-empty list of tensors")
    for i, t in enumerate(out):
        tensor_arg(op, t, f"tensors[{i}]")
    return out


def _joined_format(ts: Sequence[NBXTensor]) -> str:
    """torch's memory format for a join: the inputs' suggested format when they all agree, else
    contiguous."""
    formats = {layout.suggest_memory_format(t) for t in ts}
    return formats.pop() if len(formats) == 1 else layout.CONTIGUOUS


def cat(tensors: Sequence[NBXTensor], dim: int = 0) -> NBXTensor:
    """Join along ``dim``; dtypes promote; 1-D empty tensors are skipped as torch does."""
    ts = _tensors("cat", tensors)
    device = check_device("cat", *ts)
    dtype = D.promote_types(*(t.dtype for t in ts))
    # torch's legacy rule: a 1-D tensor of size 0 joins anything.
    live = [t for t in ts if not (t.ndim == 1 and t.shape[0] == 0)]
    if not live:
        return empty_tensor((0,), dtype, device)
    ref = live[0]
    if ref.ndim == 0:
        raise ShapeError("cat: zero-dimensional tensor (at position 0) cannot be concatenated")
    d = wrap_dim("cat", dim, ref.ndim)
    total = 0
    for i, t in enumerate(live):
        if t.ndim != ref.ndim:
            raise ShapeError(
                f"cat: tensors must have the same number of dimensions: got {ref.ndim} and {t.ndim} (tensor {i})"
            )
        for k in range(ref.ndim):
            if k != d and t.shape[k] != ref.shape[k]:
                raise ShapeError(
                    f"cat: sizes of tensors must match except in dimension {d}: expected size "
                    f"{ref.shape[k]} but got {t.shape[k]} in dimension {k} for tensor {i}"
                )
        total += t.shape[d]
    shape = list(ref.shape)
    shape[d] = total
    out = _empty_strided(tuple(shape), layout.format_strides("cat", shape, _joined_format(ts)), dtype, device)
    start = 0
    for t in live:
        n = t.shape[d]
        if n:
            copy_(views.narrow(out, d, start, n), t)
        start += n
    return out


concat = cat


def stack(tensors: Sequence[NBXTensor], dim: int = 0) -> NBXTensor:
    """Join equal-shaped tensors along a new ``dim``."""
    ts = _tensors("stack", tensors)
    for i, t in enumerate(ts):
        if t.shape != ts[0].shape:
            raise ShapeError(
                f"stack: expects each tensor to be equal size, but got {ts[0].shape} at entry 0 "
                f"and {t.shape} at entry {i}"
            )
    d = wrap_dim("stack", dim, ts[0].ndim + 1)
    return cat([views.unsqueeze(t, d) for t in ts], d)


def repeat(self: NBXTensor, *repeats: int) -> NBXTensor:
    """Tile ``self``: ``repeats`` has at least ``self.ndim`` entries; leading ones add dims."""
    reps = as_shape("repeat", repeats, "repeats")
    if len(reps) < self.ndim:
        raise ShapeError(
            f"repeat: the number of repeat dims ({len(reps)}) can not be smaller than the tensor's dims ({self.ndim})"
        )
    if any(r < 0 for r in reps):
        raise NbxValueError(f"repeat: repeats must be non-negative, got {reps}")
    padded = (1,) * (len(reps) - self.ndim) + self.shape
    out_shape = tuple(r * s for r, s in zip(reps, padded, strict=True))
    out = empty_tensor(out_shape, self.dtype, self.device)
    if out.numel() == 0:
        return out
    # out viewed as (r0, s0, r1, s1, ...) is the source broadcast along every r.
    inter = [x for r, s in zip(reps, padded, strict=True) for x in (r, s)]
    strides = (0,) * (len(reps) - self.ndim) + self.stride()
    src = views._view(self, [x for s in padded for x in (1, s)], [x for st in strides for x in (0, st)])
    copy_(views.view(out, inter), views.expand(src, inter))
    return out


def select_scatter(self: NBXTensor, src: NBXTensor, dim: int, index: int) -> NBXTensor:
    """A copy of ``self`` with ``self.select(dim, index)`` replaced by ``src``."""
    out = clone(self)
    target = views.select(out, dim, index)
    if src.shape != target.shape:
        raise ShapeError(f"select_scatter: src must have shape {target.shape}, got {src.shape}")
    copy_(target, src)
    return out


def slice_scatter(
    self: NBXTensor, src: NBXTensor, dim: int = 0, start: int | None = None, end: int | None = None, step: int = 1
) -> NBXTensor:
    """A copy of ``self`` with the slice ``[start:end:step]`` along ``dim`` replaced by ``src``."""
    out = clone(self)
    target = views.slice(out, dim, start, end, step)
    if src.shape != target.shape:
        raise ShapeError(f"slice_scatter: src must have shape {target.shape}, got {src.shape}")
    copy_(target, src)
    return out
