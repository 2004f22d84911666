"""Tensor layouts and memory formats, with ATen's rules.

NBX tensors are all strided (``layout=torch.strided``); any other layout is refused. A memory
format names the strides a new tensor gets:

- ``preserve_format``: the input's strides when they are non-overlapping and dense, else dense
  strides in the input's dim order (torch's ``empty_like`` and ``infer_dense_strides``);
- ``contiguous_format``: row-major;
- ``channels_last`` (4-D only) and ``channels_last_3d`` (5-D only): channels innermost.

Arguments may be the names graph.json carries (``"channels_last"``) or torch's objects
(``torch.channels_last``, whose ``str`` is ``"torch.channels_last"``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import NbxTypeError, NbxValueError
from ..shape import (
    CHANNELS_LAST_ORDER,
    contiguous_strides,
    is_contiguous,
    is_contiguous_in,
    non_overlapping_and_dense,
    stride_order,
    strides_in_order,
)
from ..tensor import NBXTensor

PRESERVE, CONTIGUOUS, CHANNELS_LAST, CHANNELS_LAST_3D = (
    "preserve_format",
    "contiguous_format",
    "channels_last",
    "channels_last_3d",
)
MEMORY_FORMATS = (PRESERVE, CONTIGUOUS, CHANNELS_LAST, CHANNELS_LAST_3D)
_RANK = {CHANNELS_LAST: 4, CHANNELS_LAST_3D: 5}


def _name(value: Any) -> str | None:
    if isinstance(value, str):
        return value.removeprefix("torch.")
    if type(value).__module__ == "torch":
        return str(value).removeprefix("torch.")
    return None


def check_layout(op: str, layout: Any) -> None:
    """Refuse any layout but strided (None means the input's, which is strided)."""
    if layout is None:
        return
    name = _name(layout)
    if name != "strided":
        raise NbxValueError(
            f"{op}: layout={layout!r} is not supported: NBX tensors are strided (dense) only, so a "
            "conversion to another layout cannot be done; drop layout= or pass layout=torch.strided"
        )


def format_name(op: str, value: Any) -> str:
    """The memory format's name; None is ``preserve_format`` (ATen's default)."""
    if value is None:
        return PRESERVE
    name = _name(value)
    if name not in MEMORY_FORMATS:
        raise NbxTypeError(f"{op}: memory_format={value!r} is not one of {', '.join(MEMORY_FORMATS)}")
    return name


def format_strides(op: str, shape: Sequence[int], fmt: str) -> tuple[int, ...]:
    """The strides of a new tensor of ``shape`` in ``fmt`` (not ``preserve_format``)."""
    if fmt == CONTIGUOUS:
        return contiguous_strides(shape)
    rank = _RANK[fmt]
    if len(shape) != rank:
        raise NbxValueError(f"{op}: required rank {rank} tensor to use {fmt} format, got shape {tuple(shape)}")
    return strides_in_order(shape, CHANNELS_LAST_ORDER[rank])


def dense_strides_like(t: NBXTensor) -> tuple[int, ...]:
    """Strides for a new dense tensor laid out like ``t`` (torch's preserve_format)."""
    shape, st = t.shape, t.stride()
    if non_overlapping_and_dense(shape, st):
        return tuple(st)
    # torch's infer_dense_strides: the dims ordered by stride, sizes counted at least 1.
    perm = stride_order(shape, st)
    strides = [0] * t.ndim
    acc = 1
    for d in perm:
        strides[d] = acc
        acc *= max(shape[d], 1)
    return tuple(strides)


def strides_for(op: str, t: NBXTensor, fmt: str) -> tuple[int, ...]:
    """The strides of a new tensor shaped like ``t`` in memory format ``fmt``."""
    return dense_strides_like(t) if fmt == PRESERVE else format_strides(op, t.shape, fmt)


def _strides_like_channels_last(shape: Sequence[int], strides: Sequence[int]) -> bool:
    # torch's is_channels_last_strides_2d/3d: ambiguous layouts (N111, a trivial C) count as
    # contiguous.
    order = CHANNELS_LAST_ORDER[len(shape)]
    if strides[1] == 0:
        return False
    low = 0
    for d in order:
        if shape[d] == 0 or strides[d] < low:
            return False
        if d == 0 and low == strides[1]:
            return False
        low = strides[d] * (shape[d] if shape[d] > 1 else 1)
    return True


def suggest_memory_format(t: NBXTensor) -> str:
    """torch's ``suggest_memory_format``: the channels-last format ``t``'s strides look like, else
    ``contiguous_format`` (even for strides that are not contiguous)."""
    if t.ndim in (4, 5) and _strides_like_channels_last(t.shape, t.stride()):
        return CHANNELS_LAST if t.ndim == 4 else CHANNELS_LAST_3D
    return CONTIGUOUS


def is_contiguous_as(t: NBXTensor, fmt: str) -> bool:
    """torch's ``is_contiguous(memory_format)``; ``preserve_format`` asks for row-major as torch does."""
    if fmt in (PRESERVE, CONTIGUOUS):
        return is_contiguous(t.shape, t.stride())
    if t.ndim != _RANK[fmt]:
        return False
    return is_contiguous_in(t.shape, t.stride(), CHANNELS_LAST_ORDER[t.ndim])
