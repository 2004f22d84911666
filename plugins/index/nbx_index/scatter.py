"""``scatter``, ``scatter_add``, ``scatter_reduce`` and ``index_add``: one serial-per-lane kernel.

Two writes collide only when they differ in the scattered coordinate alone, so each program takes a
block of *lanes* (every coordinate but the scattered one) and walks the scattered coordinate ``k``
in order, reading the current value and writing the combined one. Within a step the lanes write
distinct elements. The result is deterministic and equals torch's CPU order: for duplicate indices
plain scatter keeps the **last** write (largest ``k``), and sums/products accumulate in index order,
rounding to the output dtype at every step as torch's CPU kernels do.
"""

from typing import Any

import numpy as np
import triton
import triton.language as tl

from nbx_core import dtypes as D
from nbx_core.errors import NbxTypeError, NbxValueError
from nbx_core.ops import views as V
from nbx_core.runtime.kernels.copy import cast_to, contiguous_copy
from nbx_core.runtime.kernels.index_range import check_range
from nbx_core.runtime.kernels.indexing import block_indices, needs_int64, strided_offsets
from nbx_core.runtime.launch import block_size, cdiv, launch
from nbx_core.runtime.pointwise import pointwise, tl_dtype
from nbx_core.shape import wrap_dim
from nbx_core.tensor import NBXTensor, check_device, empty_tensor, tensor
from nbx_core.tensor.args import INDEX, check_dtype, operand, same_dtype, tensor_arg

from .gather import check_like_index

# MODE codes: how the source value combines with the current one.
SET, ADD, MUL, MAX, MIN = range(5)
_REDUCE = {"sum": ADD, "add": ADD, "prod": MUL, "multiply": MUL, "amax": MAX, "amin": MIN, "mean": ADD}


@triton.jit
def _scatter_kernel(dst_ptr, src_ptr, idx_ptr, cnt_ptr, L, K, lane_shape, dst_ls, src_ls, idx_ls,
                    src_k, idx_k, dst_k, size, fval: tl.float64, ival: tl.int64,
                    MODE: tl.constexpr, SCALAR: tl.constexpr, COUNT: tl.constexpr, COMP: tl.constexpr,
                    NDIM: tl.constexpr, BLOCK: tl.constexpr, INT64: tl.constexpr):
    lane, m = block_indices(L, BLOCK, INT64)
    d0 = strided_offsets(lane, lane_shape, dst_ls, NDIM)
    s0 = strided_offsets(lane, lane_shape, src_ls, NDIM)
    i0 = strided_offsets(lane, lane_shape, idx_ls, NDIM)
    if SCALAR == 1:
        s = cast_to(tl.full([BLOCK], fval, tl.float64), COMP)
    elif SCALAR == 2:
        s = cast_to(tl.full([BLOCK], ival, tl.int64), COMP)
    for k in range(K):
        iv = tl.load(idx_ptr + i0 + k * idx_k, mask=m, other=0).to(tl.int64)
        off = d0 + tl.where(iv < 0, iv + size, iv) * dst_k
        if SCALAR == 0:
            s = cast_to(tl.load(src_ptr + s0 + k * src_k, mask=m), COMP)
        if MODE == 0:
            y = s
        else:
            cur = cast_to(tl.load(dst_ptr + off, mask=m), COMP)
            if MODE == 1:
                y = cur + s
            elif MODE == 2:
                y = cur * s
            elif MODE == 3:
                y = tl.where((cur > s) | (cur != cur), cur, s)
            else:
                y = tl.where((cur < s) | (cur != cur), cur, s)
        tl.store(dst_ptr + off, cast_to(y, dst_ptr.dtype.element_ty), mask=m)
        if COUNT:
            c = tl.load(cnt_ptr + off, mask=m)
            tl.store(cnt_ptr + off, c + 1, mask=m)


def _comp(dtype: D.DType) -> D.DType:
    if dtype is D.bool_:
        return D.int32
    return D.compute_dtype(dtype)


def scatter_serial(dst: NBXTensor, index: NBXTensor, src: NBXTensor | None, value: Any, mode: int,
                   lanes: tuple[int, ...], dst_ls: tuple[int, ...], src_ls: tuple[int, ...],
                   idx_ls: tuple[int, ...], K: int, dst_k: int, src_k: int, idx_k: int, size: int,
                   count: NBXTensor | None = None) -> None:
    """Run the serial scatter: for each lane and ``k`` in order, ``dst[lane + index*dst_k] op= src``.

    The caller has checked the index range; ``src is None`` scatters the scalar ``value``.
    """
    L = 1
    for s in lanes:
        L *= s
    if L * K == 0:
        return
    if not lanes:
        lanes, dst_ls, src_ls, idx_ls = (1,), (0,), (0,), (0,)
    comp = _comp(dst.dtype)
    scalar = 0 if src is not None else (1 if comp.is_floating_point else 2)
    fval = float(value) if scalar == 1 else 0.0
    ival = int(value) if scalar == 2 else 0
    block = block_size(L, gpu=256)
    tensors = [t for t in (dst, src, index) if t is not None]
    launch(_scatter_kernel, (cdiv(L, block),), dst, src if src is not None else dst, index,
           count if count is not None else dst, L, K, lanes, dst_ls, src_ls, idx_ls, src_k, idx_k, dst_k,
           size, fval, ival, MODE=mode, SCALAR=scalar, COUNT=count is not None, COMP=tl_dtype(comp),
           NDIM=len(lanes), BLOCK=block, INT64=needs_int64(L * max(K, 1), *tensors) or K * size > 2**31)


def _dim_scatter(op: str, self: NBXTensor, dim: int, index: NBXTensor, src: Any, reduce: str | None,
                 include_self: bool = True) -> NBXTensor:
    if tensor_arg(op, index, "index").numel():  # torch checks the dtype of an index with elements only
        check_dtype(op, index, "index", INDEX)
    is_tensor = isinstance(src, NBXTensor)
    check_device(op, self, index, *([src] if is_tensor else []))
    if is_tensor:
        same_dtype(op, ("self", self), ("src", src))
    else:
        operand(op, src, "value")
    mode = SET if reduce is None else _REDUCE.get(reduce)
    if mode is None:
        raise NbxValueError(f"{op}: reduce={reduce!r} is not supported: use one of {sorted(_REDUCE)}")
    d = wrap_dim(op, dim, self.ndim)
    check_like_index(op, self, index, d, src if is_tensor else None)
    out = contiguous_copy(self)
    if index.numel() == 0:
        return out
    size = self.shape[d] if self.ndim else 1
    check_range(op, "index", index, size)
    x = out if out.ndim else V.reshape(out, (1,))
    ix = index if index.ndim else V.reshape(index, (1,))
    sr = (src if src.ndim else V.reshape(src, (1,))) if is_tensor else None
    lanes = tuple(s for k, s in enumerate(ix.shape) if k != d)
    drop = lambda st: tuple(s for k, s in enumerate(st) if k != d)  # noqa: E731
    count = None
    if reduce == "mean":
        count = empty_tensor(x.shape, D.int64, x.device, zero=True)
        if include_self:
            count = contiguous_copy(V.expand(_one(x.device), x.shape))
    if not include_self:
        ident = _identity(reduce, x.dtype)
        scatter_serial(x, ix, None, ident, SET, lanes, drop(x.stride()), tuple(0 for _ in lanes),
                       drop(ix.stride()), ix.shape[d], x.stride(d), 0, ix.stride(d), size)
    scatter_serial(x, ix, sr, None if is_tensor else src, mode, lanes, drop(x.stride()),
                   drop(sr.stride()) if sr is not None else tuple(0 for _ in lanes), drop(ix.stride()),
                   ix.shape[d], x.stride(d), sr.stride(d) if sr is not None else 0, ix.stride(d), size, count)
    if count is not None:
        pointwise(op, _mean_div, out, V.reshape(count, out.shape), dtype=out.dtype, out=out)
    return out


def _one(device: Any) -> NBXTensor:
    return tensor(1, dtype=D.int64, device=device)


@triton.jit
def _mean_div(s, c, sc):
    if s.dtype.is_floating():
        q = s / c.to(s.dtype)
    else:
        # Integer mean floors, as torch's does.
        q = s // c
        q = tl.where(((s % c) != 0) & ((s < 0) != (c < 0)), q - 1, q)
    return tl.where(c > 0, q, s)


def _identity(reduce: str, dtype: D.DType) -> bool | int | float:
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    low = reduce == "amax"
    if dtype.is_floating_point:
        return float("-inf") if low else float("inf")
    if dtype is D.bool_:
        return 0 if low else 1
    info = np.iinfo(dtype.np)
    return int(info.min) if low else int(info.max)


def scatter(self: NBXTensor, dim: int, index: NBXTensor, src: Any = None, *, value: Any = None,
            reduce: str | None = None) -> NBXTensor:
    """``aten::scatter`` (src, value, reduce and value_reduce overloads): ``self`` with ``src`` written
    at ``index`` along ``dim``; duplicate indices keep the last write; ``reduce`` is "add" or "multiply"."""
    op = "aten::scatter"
    if src is None:
        src = value
    if reduce is not None and reduce not in ("add", "multiply"):
        raise NbxValueError(f"{op}: reduce={reduce!r}: expected 'add' or 'multiply'")
    return _dim_scatter(op, self, dim, index, src, reduce)


def scatter_add(self: NBXTensor, dim: int, index: NBXTensor, src: NBXTensor) -> NBXTensor:
    """``aten::scatter_add``: ``self`` with ``src`` added at ``index`` along ``dim``."""
    return _dim_scatter("aten::scatter_add", self, dim, index, src, "add")


def scatter_reduce(self: NBXTensor, dim: int, index: NBXTensor, src: NBXTensor, reduce: str, *,
                   include_self: bool = True) -> NBXTensor:
    """``aten::scatter_reduce.two``: reduce ``src`` into ``self`` at ``index`` with sum, prod, mean,
    amax or amin; ``include_self=False`` leaves the old values out where something is scattered."""
    op = "aten::scatter_reduce"
    if reduce not in ("sum", "prod", "mean", "amax", "amin"):
        raise NbxValueError(f"{op}: reduce={reduce!r}: expected one of sum, prod, mean, amax, amin")
    return _dim_scatter(op, self, dim, index, src, reduce, include_self)


def index_add(self: NBXTensor, dim: int, index: NBXTensor, source: NBXTensor, *, alpha: Any = 1) -> NBXTensor:
    """``aten::index_add``: ``self`` with ``alpha * source[..., k, ...]`` added at ``index[k]`` along ``dim``."""
    op = "aten::index_add"
    tensor_arg(op, index, "index", dtypes=INDEX)
    check_device(op, self, index, source)
    if source.dtype is not self.dtype:
        raise NbxTypeError(f"{op}: source has dtype {source.dtype} but self has {self.dtype}: cast source")
    if index.ndim > 1:
        raise NbxValueError(f"{op}: index must be 1-D or 0-dim, got {index.ndim} dims")
    d = wrap_dim(op, dim, self.ndim)
    x_shape = self.shape if self.ndim else (1,)
    s = source if source.ndim else V.reshape(source, (1,))
    K = index.numel()
    want = tuple(K if k == d else n for k, n in enumerate(x_shape))
    if tuple(s.shape) != want:
        raise NbxValueError(f"{op}: source has shape {tuple(source.shape)}, expected {want} "
                            f"(self's shape with dim {d} of the index's length)")
    if isinstance(alpha, float) and not self.dtype.is_floating_point:
        raise NbxTypeError(f"{op}: a float alpha needs a floating self, got {self.dtype}")
    out = contiguous_copy(self)
    if K == 0 or out.numel() == 0:
        return out
    check_range(op, "index", index, x_shape[d])
    x = out if out.ndim else V.reshape(out, (1,))
    src = s
    if alpha != 1:
        src = pointwise(op, _scale, s, alpha, dtype=self.dtype)
    drop = lambda st: tuple(v for k, v in enumerate(st) if k != d)  # noqa: E731
    lanes = drop(x.shape)
    ix = index if index.ndim else V.reshape(index, (1,))
    scatter_serial(x, ix, src, None, ADD, lanes, drop(x.stride()), drop(src.stride()),
                   tuple(0 for _ in lanes), K, x.stride(d), src.stride(d), ix.stride(0), x.shape[d])
    return out


@triton.jit
def _scale(s, a, sc):
    return s * a
