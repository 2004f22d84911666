"""Ops that answer with Python values or reshape storage: item, is_nonzero, equal, resize_, set."""

from __future__ import annotations

from typing import Any

from .. import dtypes as D
from ..errors import NbxTypeError, NbxValueError
from ..shape import as_shape, check_shape, contiguous_strides, numel
from ..tensor import NBXTensor, check_device, empty_tensor
from ..tensor.args import tensor_arg
from . import views
from .creation import zeros


def _local_scalar_dense(self: NBXTensor) -> bool | int | float | complex:
    return self.item()


def item(self: NBXTensor) -> bool | int | float | complex:
    return self.item()


def is_nonzero(self: NBXTensor) -> bool:
    n = self.numel()
    if n == 0:
        raise NbxValueError("is_nonzero: Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise NbxValueError("is_nonzero: Boolean value of Tensor with more than one value is ambiguous")
    return bool(self.item())


def equal(self: NBXTensor, other: NBXTensor) -> bool:
    """True when both tensors have one shape and equal elements (NaN equals nothing)."""
    tensor_arg("equal", other, "other")
    device = check_device("equal", self, other)
    if self.shape != other.shape:
        return False
    if self.numel() == 0:
        return True
    import triton.language as tl

    from ..runtime.kernels.compare import differs
    from .copy import _to_copy

    common = D.promote_types(self.dtype, other.dtype)
    a, b = self, other
    if common.is_complex:
        a, b = (views.view_as_real(x if x.dtype.is_complex else _to_copy(x, dtype=D.complex64)) for x in (a, b))
        common = D.float32
    compute = tl.float32 if common.is_float8 else getattr(tl, "int1" if common is D.bool_ else common.name)
    flag = zeros((1,), dtype=D.int32, device=device)
    differs(a, b, flag, compute)
    return flag.item() == 0


def resize_(self: NBXTensor, size: Any, memory_format: Any = None) -> NBXTensor:
    """Give ``self`` a new contiguous shape in place, growing its storage (keeping old bytes) if needed."""
    shape = check_shape("resize_", as_shape("resize_", size))
    need = (self.storage_offset() + numel(shape)) * self.dtype.itemsize
    if need > self.storage.nbytes:
        from .copy import copy_

        grown = empty_tensor((self.storage_offset() + numel(shape),), self.dtype, self.device)
        old = self.storage.nbytes // self.dtype.itemsize
        if old:
            copy_(views.narrow(grown, 0, 0, old), NBXTensor(self.storage, (old,), (1,), 0, self.dtype))
        self._storage = grown.storage
    self._shape = shape
    self._strides = contiguous_strides(shape)
    return self


def set(self: NBXTensor, source: NBXTensor | None = None, *args: Any) -> NBXTensor:
    """Functional ``aten::set``: a tensor viewing ``source`` (or an empty tensor of ``self``'s dtype)."""
    if source is None:
        return empty_tensor((0,), self.dtype, self.device)
    if source.dtype is not self.dtype:
        raise NbxTypeError(f"set: source dtype {source.dtype} must match self's dtype {self.dtype}")
    if args:
        offset, size, *stride = args
        return views.as_strided(source, size, stride[0] if stride else contiguous_strides(size), offset)
    return views.alias(source)
