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
from ..shape import contiguous_strides, is_contiguous
from ..tensor import NBXTensor

PRESERVE, CONTIGUOUS, CHANNELS_LAST, CHANNELS_LAST_3D = (
    "preserve_format",
    "contiguous_format",
    "channels_last",
    "channels_last_3d",
)
MEMORY_FORMATS = (PRESERVE, CONTIGUOUS, CHANNELS_LAST, CHANNELS_LAST_3D)
# The dims of a channels-last tensor from innermost to outermost.
_CHANNELS_LAST_ORDER = {CHANNELS_LAST: (1, 3, 2, 0), CHANNELS_LAST_3D: (1, 4, 3, 2, 0)}


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
    rank = len(_CHANNELS_LAST_ORDER[fmt])
    if len(shape) != rank:
        raise NbxValueError(f"{op}: required rank {rank} tensor to use {fmt} format, got shape {tuple(shape)}")
    # torch multiplies the sizes as they are here (a size-0 dim makes the outer strides 0).
    strides = [0] * rank
    acc = 1
    for d in _CHANNELS_LAST_ORDER[fmt]:
        strides[d] = acc
        acc *= shape[d]
    return tuple(strides)


def non_overlapping_and_dense(shape: Sequence[int], strides: Sequence[int]) -> bool:
    """torch's ``is_non_overlapping_and_dense``: some permutation of the dims is contiguous (an
    empty tensor counts when it is contiguous)."""
    if is_contiguous(shape, strides):
        return True
    expected = 1
    for d in sorted((d for d in range(len(shape)) if shape[d] >= 2), key=lambda d: strides[d]):
        if strides[d] != expected:
            return False
        expected *= shape[d]
    return True


def dense_strides_like(t: NBXTensor) -> tuple[int, ...]:
    """Strides for a new dense tensor laid out like ``t`` (torch's preserve_format)."""
    shape, st = t.shape, t.stride()
    if non_overlapping_and_dense(shape, st):
        return tuple(st)
    # torch's infer_dense_strides: an insertion sort, innermost dim first, where a stride-0 dim
    # is ambiguous and keeps its place.
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


def strides_for(op: str, t: NBXTensor, fmt: str) -> tuple[int, ...]:
    """The strides of a new tensor shaped like ``t`` in memory format ``fmt``."""
    return dense_strides_like(t) if fmt == PRESERVE else format_strides(op, t.shape, fmt)


def _strides_like_channels_last(shape: Sequence[int], strides: Sequence[int]) -> bool:
    # torch's is_channels_last_strides_2d/3d: ambiguous layouts (N111, a trivial C) count as
    # contiguous.
    order = _CHANNELS_LAST_ORDER[CHANNELS_LAST if len(shape) == 4 else CHANNELS_LAST_3D]
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
    if t.ndim != len(_CHANNELS_LAST_ORDER[fmt]):
        return False
    expected = 1
    for d in _CHANNELS_LAST_ORDER[fmt]:
        if t.shape[d] != 1:
            if t.stride(d) != expected:
                return False
            expected *= t.shape[d]
    return True
