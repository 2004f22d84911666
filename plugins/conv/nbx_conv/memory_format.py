"""The memory format of nbx-conv's outputs (argument checks are nbx_core.tensor.args).

Outputs follow torch's memory-format rule: a channels-last input (4-D or 5-D) gives a
channels-last output, anything else a contiguous one.
"""

from __future__ import annotations

from collections.abc import Sequence

from nbx_core import dtypes as D
from nbx_core.ops.views import permute
from nbx_core.tensor import NBXTensor, empty_tensor


def channels_last(t: NBXTensor) -> bool:
    """Whether torch would suggest the channels-last memory format for ``t`` (4-D or 5-D)."""
    if t.ndim not in (4, 5) or t.shape[1] <= 1:
        return False
    st = t.stride()
    return st[1] == 1 and all(st[d] >= st[1] for d in range(2, t.ndim)) and st[-1] > 1


def empty_output(shape: Sequence[int], dtype: D.DType, like: NBXTensor, cl: bool | None = None) -> NBXTensor:
    """A new (N, C, *spatial) tensor, channels-last when ``cl`` (default: when ``like`` is)."""
    cl = channels_last(like) if cl is None else cl
    shape = tuple(shape)
    if not cl:
        return empty_tensor(shape, dtype, like.device)
    nd = len(shape)
    phys = empty_tensor((shape[0], *shape[2:], shape[1]), dtype, like.device)
    return permute(phys, 0, nd - 1, *range(1, nd - 1))
