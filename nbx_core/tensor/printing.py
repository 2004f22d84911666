"""``repr`` of a tensor in torch's style: ``tensor([1., 2.], dtype=bfloat16, device='cuda:0')``."""

from __future__ import annotations

from typing import Literal

import numpy as np

from .. import dtypes as D

_DEFAULT = {"float32", "int64", "bool", "complex64"}
_LIMIT = 1000  # beyond this many elements, summarise with "..." as torch does


def _float_mode(arr: np.ndarray) -> Literal["maxprec", "fixed"]:
    # torch prints "1." for integral floats and four decimals as soon as one value has a fraction.
    if arr.dtype.kind != "f" or arr.size == 0:
        return "maxprec"
    finite = arr[np.isfinite(arr)]
    return "maxprec" if np.all(finite == np.round(finite)) else "fixed"


def tensor_repr(t) -> str:
    arr = t.numpy()
    if t.dtype.np.kind == "V" or t.dtype in (D.bfloat16, D.float8_e4m3fn, D.float8_e5m2):
        arr = arr.astype(np.float32)
    suffix = []
    if t.numel() == 0:
        suffix.append(f"size={t.shape}")
    if t.dtype.name not in _DEFAULT:
        suffix.append(f"dtype={t.dtype.name}")
    if t.device.type != "cpu":
        suffix.append(f"device='{t.device}'")
    body = np.array2string(
        arr,
        separator=", ",
        prefix="tensor(",
        precision=4,
        threshold=_LIMIT,
        edgeitems=3,
        floatmode=_float_mode(arr),
        formatter={"bool": lambda b: " True" if b else "False"},
    )
    if t.numel() == 0:
        body = "[]"
    return "tensor(" + ", ".join([body, *suffix]) + ")"
