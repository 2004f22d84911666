"""The memory format of nbx-conv's outputs (argument checks are nbx_core.tensor.args).

Outputs follow torch's memory-format rule: an input whose strides torch reads as channels-last
(``suggest_memory_format``; 4-D or 5-D) gives a channels-last output, anything else a contiguous
one. A convolution's output is channels-last when its input or its weight is.
"""

from __future__ import annotations

from collections.abc import Sequence

from nbx_core import dtypes as D
from nbx_core.ops.layout import CHANNELS_LAST, CHANNELS_LAST_3D, CONTIGUOUS, is_contiguous_as, suggest_memory_format
from nbx_core.ops.views import permute
from nbx_core.tensor import NBXTensor, empty_tensor


def suggests_channels_last(t: NBXTensor) -> bool:
    """Whether torch's ``suggest_memory_format`` gives ``t`` (4-D or 5-D) a channels-last format:
    the layout torch gives the results of pooling, upsampling and convolution."""
    return t.ndim in (4, 5) and suggest_memory_format(t) != CONTIGUOUS


def channels_last(t: NBXTensor) -> bool:
    """Whether ``t`` (4-D or 5-D) is stored channels-last and dense, as :func:`empty_output` makes
    it: the kernels walk such a result in that order."""
    fmt = {4: CHANNELS_LAST, 5: CHANNELS_LAST_3D}.get(t.ndim)
    return fmt is not None and t.shape[1] > 1 and is_contiguous_as(t, fmt)


def empty_output(shape: Sequence[int], dtype: D.DType, like: NBXTensor, cl: bool | None = None) -> NBXTensor:
    """A new (N, C, *spatial) tensor, channels-last when ``cl`` (default: when torch suggests a
    channels-last format for ``like``)."""
    cl = suggests_channels_last(like) if cl is None else cl
    shape = tuple(shape)
    if not cl:
        return empty_tensor(shape, dtype, like.device)
    nd = len(shape)
    phys = empty_tensor((shape[0], *shape[2:], shape[1]), dtype, like.device)
    return permute(phys, 0, nd - 1, *range(1, nd - 1))
