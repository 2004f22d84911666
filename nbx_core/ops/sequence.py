"""Packing of padded sequences for recurrent layers (``aten::_pack_padded_sequence``)."""

from __future__ import annotations

from .. import dtypes as D
from ..errors import NbxValueError, ShapeError
from ..tensor import NBXTensor, tensor
from . import views
from .join import cat


def _pack_padded_sequence(input: NBXTensor, lengths: NBXTensor, batch_first: bool) -> tuple[NBXTensor, NBXTensor]:
    """(data, batch_sizes): the time steps of sequences sorted by decreasing length, packed."""
    x = views.transpose(input, 0, 1) if batch_first else input
    if lengths.ndim != 1:
        raise ShapeError(f"_pack_padded_sequence: lengths must be 1-D, got shape {lengths.shape}")
    lens = [int(v) for v in lengths.numpy().tolist()]
    if x.ndim < 2 or len(lens) != x.shape[1]:
        raise ShapeError(
            f"_pack_padded_sequence: expected {x.shape[1] if x.ndim >= 2 else '?'} lengths (the batch size), "
            f"got {len(lens)}"
        )
    if not lens or lens[-1] <= 0:
        raise NbxValueError(
            "_pack_padded_sequence: length of all samples has to be greater than 0, but found an element in "
            "'lengths' that is <= 0"
        )
    if any(a < b for a, b in zip(lens, lens[1:], strict=False)):
        raise NbxValueError(
            "_pack_padded_sequence: `lengths` array must be sorted in decreasing order when "
            "`enforce_sorted` is True: sort the batch or pack with enforce_sorted=False"
        )
    if lens[0] > x.shape[0]:
        raise NbxValueError(f"_pack_padded_sequence: a length of {lens[0]} exceeds the {x.shape[0]} time steps")
    batch_sizes = [sum(1 for n in lens if n > t) for t in range(lens[0])]
    steps = [views.narrow(views.select(x, 0, t), 0, 0, b) for t, b in enumerate(batch_sizes)]
    return cat(steps, 0), tensor(batch_sizes, dtype=D.int64)
