"""The tensor-facing public names, re-exported lazily by ``nbx_core``."""

from __future__ import annotations

from .device import Device
from .dtypes import (
    DType,
    bfloat16,
    bool_,
    complex64,
    float8_e4m3fn,
    float8_e5m2,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    promote_types,
    result_type,
    uint8,
)
from .ops.creation import (
    arange,
    empty,
    empty_like,
    empty_strided,
    full,
    full_like,
    linspace,
    ones,
    ones_like,
    scalar_tensor,
    zeros,
    zeros_like,
)
from .ops.join import cat, stack
from .ops.views import broadcast_tensors
from .tensor import NBXTensor, from_dlpack, from_numpy, tensor

bool = bool_  # noqa: A001  (torch spells it nbx.bool too)

__all__ = [
    "DType",
    "Device",
    "NBXTensor",
    "arange",
    "bfloat16",
    "bool",
    "bool_",
    "broadcast_tensors",
    "cat",
    "complex64",
    "empty",
    "empty_like",
    "empty_strided",
    "float16",
    "float32",
    "float64",
    "float8_e4m3fn",
    "float8_e5m2",
    "from_dlpack",
    "from_numpy",
    "full",
    "full_like",
    "int16",
    "int32",
    "int64",
    "int8",
    "linspace",
    "ones",
    "ones_like",
    "promote_types",
    "result_type",
    "scalar_tensor",
    "stack",
    "tensor",
    "uint8",
    "zeros",
    "zeros_like",
]
