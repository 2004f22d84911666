"""var and std: a two-pass variance (sum, then squares around the mean) per output element."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from nbx_core.errors import NbxValueError
from nbx_core.tensor import NBXTensor
from nbx_core.tensor.args import FLOATING, number_arg, tensor_arg

from . import engine as E
from .rules import reduce_dims


def _correction(op: str, unbiased: bool | None, correction: Any) -> float:
    if unbiased is not None and correction is not None:
        raise NbxValueError(f"{op}: pass either unbiased or correction, not both")
    if correction is not None:
        return float(number_arg(op, correction, "correction"))
    return 0.0 if unbiased is False else 1.0


def _moment(op: str, post: int, self: NBXTensor, dim: Any, unbiased: Any, keepdim: bool, correction: Any) -> NBXTensor:
    x = tensor_arg(op, self, dtypes=FLOATING)
    if isinstance(dim, bool):
        dim, unbiased = None, dim
    corr = _correction(op, unbiased, correction)
    dims = reduce_dims(op, dim, x.ndim)
    # Divides by max(0, N - correction): 0/0 gives NaN and x/0 inf, as torch.
    return E.reduce(x, dims, keepdim, E.VAR, x.dtype, post=post, corr=corr)


def var(self: NBXTensor, dim: int | Sequence[int] | bool | None = None, unbiased: bool | None = None,
        keepdim: bool = False, *, correction: int | float | None = None) -> NBXTensor:
    """aten::var (all overloads): sum((x - mean)^2) / max(0, N - correction); correction defaults to 1."""
    return _moment("var", E.Q_VAR, self, dim, unbiased, keepdim, correction)


def std(self: NBXTensor, dim: int | Sequence[int] | bool | None = None, unbiased: bool | None = None,
        keepdim: bool = False, *, correction: int | float | None = None) -> NBXTensor:
    """aten::std (all overloads): the square root of :func:`var`."""
    return _moment("std", E.Q_STD, self, dim, unbiased, keepdim, correction)
