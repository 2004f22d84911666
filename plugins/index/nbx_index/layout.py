"""Layout ops: ``flip``, ``roll``, ``tril``/``triu``, ``pixel_shuffle``/``pixel_unshuffle`` and
``repeat_interleave``.

flip copies a view with negated strides; roll copies the two halves of each rolled dim into
place; pixel (un)shuffle is a reshape, permute and copy. tril/triu keep the elements on one side
of a diagonal. repeat_interleave builds its source index with a device prefix sum of the repeats
(the total is read back to size the result) and a binary search, then gathers with index_select.
"""

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import triton
import triton.language as tl

from nbx_core import dtypes as D
from nbx_core.backend import default_device
from nbx_core.device import as_device
from nbx_core.errors import NbxTypeError, NbxValueError, ShapeError
from nbx_core.ops import creation
from nbx_core.ops import views as V
from nbx_core.ops.layout import check_layout, suggest_memory_format
from nbx_core.runtime import checks
from nbx_core.runtime.kernels.copy import copy_into
from nbx_core.runtime.kernels.index_range import flag_for
from nbx_core.runtime.kernels.indexing import block_indices, needs_int64, strided_offsets
from nbx_core.runtime.launch import TRAITS, block_size, cdiv, launch
from nbx_core.runtime.pointwise import pointwise
from nbx_core.shape import wrap_dim, wrap_dims
from nbx_core.tensor import NBXTensor, check_device, empty_tensor, tensor
from nbx_core.tensor.args import INDEX, check_min_ndim, int_arg, tensor_arg


def flip(self: NBXTensor, dims: Sequence[int]) -> NBXTensor:
    """``aten::flip``: reverse the order of elements along ``dims``."""
    ds = wrap_dims("aten::flip", list(dims), self.ndim)
    strides = list(self.stride())
    offset = self.storage_offset()
    for d in ds:
        if self.shape[d] > 0:
            offset += (self.shape[d] - 1) * strides[d]
        strides[d] = -strides[d]
    view = NBXTensor(self.storage, self.shape, strides, offset, self.dtype)
    out = creation.empty_like(self)  # laid out like self, as torch's flip is
    if out.numel():
        copy_into(out, view)
    return out


def roll(self: NBXTensor, shifts: Sequence[int] | int, dims: Sequence[int] | int = ()) -> NBXTensor:
    """``aten::roll``: shift elements along ``dims`` by ``shifts`` (wrapping); no dims rolls the flat tensor."""
    op = "aten::roll"
    shifts = [shifts] if isinstance(shifts, int) else list(shifts)
    dims = [dims] if isinstance(dims, int) else list(dims)
    if not dims:
        if len(shifts) != 1:
            raise NbxValueError(f"{op}: without dims, shifts must hold one value, got {shifts}")
        flat = roll(V.reshape(self, (self.numel(),)), shifts, [0])
        return V.reshape(flat, self.shape)
    if len(shifts) != len(dims):
        raise NbxValueError(f"{op}: shifts {shifts} and dims {dims} must have the same length")
    cur = self
    for s, d in zip(shifts, dims, strict=True):
        d = wrap_dim(op, d, self.ndim)
        size = cur.shape[d] if cur.ndim else 1
        # In the format torch suggests for the input, as torch's roll allocates it.
        out = creation.empty(*cur.shape, dtype=cur.dtype, device=cur.device, memory_format=suggest_memory_format(cur))
        k = s % size if size else 0
        if out.numel():
            if k:
                copy_into(V.narrow(out, d, k, size - k), V.narrow(cur, d, 0, size - k))
                copy_into(V.narrow(out, d, 0, k), V.narrow(cur, d, size - k, k))
            else:
                copy_into(out, cur)
        cur = out
    return cur


@triton.jit
def _tri_kernel(
    out_ptr,
    x_ptr,
    n,
    rows,
    cols,
    diagonal,
    shape,
    strides,
    UPPER: tl.constexpr,
    NDIM: tl.constexpr,
    BLOCK: tl.constexpr,
    INT64: tl.constexpr,
):
    i, m = block_indices(n, BLOCK, INT64)
    c = (i % cols).to(tl.int64)
    r = ((i // cols) % rows).to(tl.int64)
    if UPPER:
        keep = c - r >= diagonal
    else:
        keep = c - r <= diagonal
    x = tl.load(x_ptr + strided_offsets(i, shape, strides, NDIM), mask=m & keep, other=0)
    tl.store(out_ptr + i, x, mask=m)


def _tri(op: str, x: NBXTensor, diagonal: int, upper: bool) -> NBXTensor:
    check_min_ndim(op, x, "input", 2)
    int_arg(op, diagonal, "diagonal")
    out = empty_tensor(x.shape, x.dtype, x.device)
    n = out.numel()
    if n == 0:
        return out
    block = block_size(n)
    launch(
        _tri_kernel,
        (cdiv(n, block),),
        out,
        x,
        n,
        x.shape[-2],
        x.shape[-1],
        diagonal,
        tuple(x.shape),
        tuple(x.stride()),
        UPPER=upper,
        NDIM=x.ndim,
        BLOCK=block,
        INT64=needs_int64(n, x),
    )
    return out


def tril(self: NBXTensor, diagonal: int = 0) -> NBXTensor:
    """``aten::tril``: zero the elements above the ``diagonal``-th diagonal of the last two dims."""
    return _tri("aten::tril", self, diagonal, False)


def triu(self: NBXTensor, diagonal: int = 0) -> NBXTensor:
    """``aten::triu``: zero the elements below the ``diagonal``-th diagonal of the last two dims."""
    return _tri("aten::triu", self, diagonal, True)


def _indices_op(name: str, upper: bool) -> Callable[..., NBXTensor]:
    op = f"aten::{name}"
    side = "above" if upper else "below"

    def indices(
        row: int,
        col: int,
        offset: int = 0,
        *,
        dtype: Any = None,
        layout: Any = None,
        device: Any = None,
        pin_memory: Any = None,
    ) -> NBXTensor:
        return _tri_indices(op, row, col, offset, dtype, layout, device, upper=upper)

    indices.__name__ = indices.__qualname__ = name
    indices.__doc__ = (
        f"``{op}``: the (row, column) indices of a ``row`` x ``col`` matrix on and {side} its "
        "``offset``-th diagonal, row by row, as a 2 x N int64 (or int32) tensor."
    )
    return indices


tril_indices = _indices_op("tril_indices", upper=False)
triu_indices = _indices_op("triu_indices", upper=True)


def _tri_indices(
    op: str, row: int, col: int, offset: int, dtype: Any, layout: Any, device: Any, *, upper: bool
) -> NBXTensor:
    # The indices depend on the sizes alone: made on the host and copied over, as torch's CPU kernel.
    for value, arg in ((row, "row"), (col, "col")):
        int_arg(op, value, arg)
        if value < 0:
            raise NbxValueError(f"{op}: {arg} must be non-negative, got {value}")
    int_arg(op, offset, "offset")
    check_layout(op, layout)
    out_dtype = D.as_dtype(dtype) if dtype is not None else D.int64
    if out_dtype not in (D.int64, D.int32):
        raise NbxTypeError(f"{op}: dtype must be int64 or int32, got {out_dtype}")
    pick = np.triu_indices if upper else np.tril_indices
    pairs = np.stack(pick(row, offset, col)).astype(out_dtype.np)
    return tensor(pairs, device=as_device(device) if device is not None else default_device())


def _factor(op: str, x: NBXTensor, r: int, arg: str) -> int:
    if not isinstance(r, int) or isinstance(r, bool) or r <= 0:
        raise NbxValueError(f"{op}: {arg} must be a positive int, got {r!r}")
    if x.ndim < 3:
        raise ShapeError(f"{op}: input must have at least 3 dims (…, C, H, W), got {x.ndim}")
    return r


def _shuffled(x: NBXTensor, v: NBXTensor, shape: tuple[int, ...]) -> NBXTensor:
    """A new tensor of ``shape`` holding the permuted view ``v`` of ``x``, in the memory format
    torch suggests for ``x`` (a channels-last input gives a channels-last result)."""
    out = creation.empty(*shape, dtype=x.dtype, device=x.device, memory_format=suggest_memory_format(x))
    if out.numel():
        copy_into(V.view(out, v.shape), v)
    return out


def pixel_shuffle(self: NBXTensor, upscale_factor: int) -> NBXTensor:
    """``aten::pixel_shuffle``: ``(*, C*r*r, H, W)`` to ``(*, C, H*r, W*r)``."""
    op = "aten::pixel_shuffle"
    r = _factor(op, self, upscale_factor, "upscale_factor")
    *b, c, h, w = self.shape
    if c % (r * r):
        raise ShapeError(f"{op}: channels {c} must be divisible by upscale_factor squared ({r * r})")
    nb = len(b)
    v = V.reshape(self, (*b, c // (r * r), r, r, h, w))
    v = V.permute(v, (*range(nb), nb, nb + 3, nb + 1, nb + 4, nb + 2))
    return _shuffled(self, v, (*b, c // (r * r), h * r, w * r))


def pixel_unshuffle(self: NBXTensor, downscale_factor: int) -> NBXTensor:
    """``aten::pixel_unshuffle``: ``(*, C, H*r, W*r)`` to ``(*, C*r*r, H, W)``."""
    op = "aten::pixel_unshuffle"
    r = _factor(op, self, downscale_factor, "downscale_factor")
    *b, c, h, w = self.shape
    if h % r or w % r:
        raise ShapeError(f"{op}: height {h} and width {w} must be divisible by downscale_factor {r}")
    nb = len(b)
    v = V.reshape(self, (*b, c, h // r, r, w // r, r))
    v = V.permute(v, (*range(nb), nb, nb + 2, nb + 4, nb + 1, nb + 3))
    return _shuffled(self, v, (*b, c * r * r, h // r, w // r))


@triton.jit
def _cumsum_kernel(out_ptr, x_ptr, flag_ptr, n, stride, BLOCK: tl.constexpr):
    # One program: the repeats of one op are few next to the data they repeat.
    carry = tl.zeros([1], tl.int64)
    for start in range(0, n, BLOCK):
        i = start + tl.arange(0, BLOCK)
        m = i < n
        v = tl.load(x_ptr + i * stride, mask=m, other=0).to(tl.int64)
        neg = m & (v < 0)
        if tl.max(neg.to(tl.int32), axis=0) > 0:
            tl.atomic_max(flag_ptr, 1)
            tl.store(flag_ptr + 1 + i * 0, v, mask=neg)
        tl.store(out_ptr + i, tl.cumsum(v, axis=0) + carry, mask=m)
        carry += tl.sum(v, axis=0)


@triton.jit
def _floordiv(j, sc):
    return j // sc[0]


def _source_index(op: str, repeats: NBXTensor, output_size: int | None) -> NBXTensor:
    from .search import _search

    n = repeats.shape[0]
    cum = empty_tensor((n,), D.int64, repeats.device, zero=True)
    if n:
        flag = flag_for(repeats.device)
        launch(_cumsum_kernel, (1,), cum, repeats, flag, n, repeats.stride(0), BLOCK=min(block_size(n), 1024))
        bad, value = checks.read_now(flag)
        if bad:
            raise NbxValueError(f"{op}: repeats holds {value}: repeats must be non-negative")
    total = int(V.select(cum, 0, n - 1).item()) if n else 0
    if output_size is not None:
        if output_size != total and n and TRAITS.runs_kernels:
            raise NbxValueError(
                f"{op}: output_size={output_size} but the repeats sum to {total}: pass the sum or leave output_size out"
            )
        total = output_size
    pos = creation.arange(total, dtype=D.int64, device=repeats.device)
    if total == 0:
        return empty_tensor((0,), repeats.dtype, repeats.device)
    return _search(pos, cum, 1, repeats.dtype, D.int64)


def repeat_interleave(
    self: NBXTensor, repeats: Any = None, dim: int | None = None, *, output_size: int | None = None
) -> NBXTensor:
    """``aten::repeat_interleave`` (Tensor, self_Tensor, self_int): repeat each element (or slice
    along ``dim``) ``repeats`` times; the Tensor overload returns the source index of each output."""
    op = "aten::repeat_interleave"
    if repeats is None:
        tensor_arg(op, self, "repeats", dtypes=INDEX)
        if self.ndim != 1:
            raise ShapeError(f"{op}: repeats must be 1-D, got {self.ndim} dims")
        return _source_index(op, self, output_size)
    x = V.reshape(self, (self.numel(),)) if dim is None else self
    d = 0 if dim is None else wrap_dim(op, dim, self.ndim)
    x = x if x.ndim else V.reshape(x, (1,))
    size = x.shape[d]
    if isinstance(repeats, NBXTensor):
        tensor_arg(op, repeats, "repeats", dtypes=INDEX)
        check_device(op, self, repeats)
        if repeats.ndim > 1:
            raise ShapeError(f"{op}: repeats must be 0-dim or 1-D, got {repeats.ndim} dims")
        r = V.reshape(repeats, (repeats.numel(),))
        if r.shape[0] == 1 and size != 1:
            r = V.expand(r, (size,))
        if r.shape[0] != size:
            raise ShapeError(f"{op}: repeats has {r.shape[0]} values but dim {d} has size {size}")
        idx = _source_index(op, r, output_size)
    else:
        if not isinstance(repeats, int) or isinstance(repeats, bool) or repeats < 0:
            raise NbxValueError(f"{op}: repeats must be a non-negative int, got {repeats!r}")
        total = size * repeats
        if output_size is not None and output_size != total:
            raise NbxValueError(f"{op}: output_size={output_size} but the result has {total} slices")
        idx = creation.arange(total, dtype=D.int64, device=self.device)
        if total:
            idx = pointwise(op, _floordiv, idx, sc=(repeats,))
    from .gather import index_select

    return index_select(x, d, idx)
