"""Row gathers: ``index_select`` (and, through :func:`take_rows`, ``embedding`` and ``index``) and
the elementwise ``gather``.

:func:`take_rows` is the one row-copy kernel: the output is ``R x Q``, each of its rows a copy of
the ``Q`` elements (strided by the kept inner dims) that start where an index points. A program
copies a ``BLOCK_R x BLOCK_Q`` tile, so a contiguous row reads and writes in wide vectors.
"""

from collections.abc import Mapping, Sequence
from pathlib import Path

import triton
import triton.language as tl

from nbx_core.errors import ShapeError
from nbx_core.ops import views as V
from nbx_core.runtime.kernels.index_range import checked, flag_for, raise_if_flagged
from nbx_core.runtime.kernels.indexing import block_indices, needs_int64, strided_offsets
from nbx_core.runtime.launch import block_size, cdiv, launch, next_pow2
from nbx_core.runtime.tuning import Key, Tunable, bucket
from nbx_core.shape import coalesce, numel, wrap_dim
from nbx_core.tensor import NBXTensor, check_device, empty_tensor
from nbx_core.tensor.args import INDEX, check_dtype, tensor_arg


def _tiles(rows: int, cols: int, q_cap: int, elements: int) -> dict[str, int]:
    # Up to q_cap columns a tile, and as many rows as fill `elements`.
    bq = min(next_pow2(cols), q_cap)
    return {"BLOCK_R": max(1, min(next_pow2(rows), elements // bq)), "BLOCK_Q": bq, "num_warps": 4}


TAKE_ROWS = Tunable(
    "index", "take_rows", {"BLOCK_R": "pow2", "BLOCK_Q": "pow2", "num_warps": "pow2"},
    key=lambda size, rows, cols: Key({"itemsize": size, "R": bucket(rows), "Q": bucket(cols)}),
    rule=lambda size, rows, cols: _tiles(rows, cols, 1024 if size <= 2 else 512, 4096),
    interpreter=lambda size, rows, cols: _tiles(rows, cols, 4096, 8192),
    tables=Path(__file__).with_name("configs"))
"""The row copy's tiles: BLOCK_R rows by BLOCK_Q columns a program, and its warps (on a GPU, 1024
columns of 2-byte elements or 512 wider ones, 4096 elements a tile; the interpreter, paying per
program, takes tiles twice as large). Arguments: the itemsize, the rows R and the columns Q."""


@triton.jit
def _take_kernel(out_ptr, x_ptr, idx_ptr, flag_ptr, R, J, Q, idx_stride, size, mult,
                 pre_shape, pre_strides, post_shape, post_strides,
                 NPRE: tl.constexpr, NPOST: tl.constexpr,
                 BLOCK_R: tl.constexpr, BLOCK_Q: tl.constexpr, INT64: tl.constexpr):
    r, rm = block_indices(R, BLOCK_R, INT64)
    q = tl.program_id(1) * BLOCK_Q + tl.arange(0, BLOCK_Q)
    if INT64:
        q = q.to(tl.int64)
    qm = q < Q
    j = r % J
    p = r // J
    v = checked(tl.load(idx_ptr + j * idx_stride, mask=rm, other=0), size, flag_ptr, rm, False)
    src_row = v * mult + strided_offsets(p, pre_shape, pre_strides, NPRE)
    src_col = strided_offsets(q, post_shape, post_strides, NPOST)
    m = rm[:, None] & qm[None, :]
    x = tl.load(x_ptr + src_row[:, None] + src_col[None, :], mask=m)
    tl.store(out_ptr + r[:, None] * Q + q[None, :], x, mask=m)


def take_rows(op: str, arg: str, x: NBXTensor, index: NBXTensor, size: int, mult: int,
              pre: tuple[Sequence[int], Sequence[int]], post: tuple[Sequence[int], Sequence[int]],
              out_shape: Sequence[int], config: Mapping[str, int] | None = None) -> NBXTensor:
    """Copy rows of ``x`` picked by the 1-D ``index``: ``out[p, j, q] = x[pre(p) + index[j]*mult + post(q)]``.

    ``pre``/``post`` are (shape, strides) of the kept outer and inner dims of ``x``; ``out_shape``
    is the result's shape (its numel is ``P*J*Q``). Index values are checked against ``size``.
    ``config`` replaces the lookup of :data:`TAKE_ROWS`.
    """
    out = empty_tensor(out_shape, x.dtype, x.device)
    J, P, Q = index.numel(), numel(pre[0]), numel(post[0])
    R = P * J
    if R * Q == 0:
        return out
    flag = flag_for(x.device)
    pre_s, (pre_st,) = coalesce(*pre)
    post_s, (post_st,) = coalesce(*post)
    cfg = TAKE_ROWS.choose(config, x.dtype.itemsize, R, Q)
    br, bq = cfg["BLOCK_R"], cfg["BLOCK_Q"]
    big = needs_int64(R * Q, x, index) or R * Q > 2**31 - 1
    launch(_take_kernel, (cdiv(R, br), cdiv(Q, bq)), out, x, index, flag, R, J, Q, index.stride(0) if index.ndim else 0,
           size, mult, pre_s, pre_st, post_s, post_st, NPRE=len(pre_s), NPOST=len(post_s),
            BLOCK_R=br, BLOCK_Q=bq, INT64=big, num_warps=cfg["num_warps"])
    raise_if_flagged(op, arg, flag, size)
    return out


def index_select(self: NBXTensor, dim: int, index: NBXTensor) -> NBXTensor:
    """``aten::index_select``: the slices of ``self`` along ``dim`` at the 1-D (or 0-dim) ``index``."""
    op = "aten::index_select"
    tensor_arg(op, index, "index", dtypes=INDEX)
    check_device(op, self, index)
    if index.ndim > 1:
        raise ShapeError(f"{op}: index must be 1-D or 0-dim, got {index.ndim} dims: flatten it first")
    d = wrap_dim(op, dim, self.ndim)
    x = self if self.ndim else V.reshape(self, (1,))
    n = x.shape[d]
    if n == 0 and index.numel():
        raise ShapeError(f"{op}: cannot select from a dimension of size 0 (dim {dim})")
    shape = list(x.shape)
    shape[d] = index.numel()
    out_shape = tuple(shape) if self.ndim else ()
    return take_rows(op, "index", x, index, n, x.stride(d), (x.shape[:d], x.stride()[:d]),
                     (x.shape[d + 1:], x.stride()[d + 1:]), out_shape)


@triton.jit
def _gather_kernel(out_ptr, x_ptr, idx_ptr, flag_ptr, n, size, dstride, shape, x_strides, idx_strides,
                   NDIM: tl.constexpr, BLOCK: tl.constexpr, INT64: tl.constexpr):
    i, m = block_indices(n, BLOCK, INT64)
    v = tl.load(idx_ptr + strided_offsets(i, shape, idx_strides, NDIM), mask=m, other=0)
    v = checked(v, size, flag_ptr, m, False)
    # x_strides carries 0 for the gathered dim: the index supplies that coordinate.
    x = tl.load(x_ptr + strided_offsets(i, shape, x_strides, NDIM) + v * dstride, mask=m)
    tl.store(out_ptr + i, x, mask=m)


def check_like_index(op: str, self: NBXTensor, index: NBXTensor, d: int, src: NBXTensor | None = None) -> None:
    """torch's shape rule for gather/scatter: same ndim, index no larger than self (but along
    ``d``) and than src (everywhere)."""
    if index.ndim != self.ndim and not (index.ndim <= 1 and self.ndim <= 1):
        raise ShapeError(f"{op}: index has {index.ndim} dims but self has {self.ndim}: they must match")
    ish = index.shape if index.ndim else (1,)
    ssh = self.shape if self.ndim else (1,)
    for k, (a, b) in enumerate(zip(ish, ssh, strict=False)):
        if k != d and a > b:
            raise ShapeError(f"{op}: index {tuple(index.shape)} is larger than self {tuple(self.shape)} "
                             f"in dim {k}: index.size(k) <= self.size(k) is needed for k != dim")
    if src is not None:
        rsh = src.shape if src.ndim else (1,)
        for k, (a, b) in enumerate(zip(ish, rsh, strict=False)):
            if a > b:
                raise ShapeError(f"{op}: index {tuple(index.shape)} is larger than src {tuple(src.shape)} "
                                 f"in dim {k}: index.size(k) <= src.size(k) is needed")


def gather(self: NBXTensor, dim: int, index: NBXTensor, *, sparse_grad: bool = False) -> NBXTensor:
    """``aten::gather``: ``out[i][j][k] = self[i][index[i][j][k]][k]`` (for ``dim == 1``)."""
    op = "aten::gather"
    if tensor_arg(op, index, "index").numel():  # torch checks the dtype of an index with elements only
        check_dtype(op, index, "index", INDEX)
    check_device(op, self, index)
    d = wrap_dim(op, dim, self.ndim)
    check_like_index(op, self, index, d)
    out = empty_tensor(index.shape, self.dtype, self.device)
    n = index.numel()
    if n == 0:
        return out
    xs = list(self.stride()) if self.ndim else [0]
    size = self.shape[d] if self.ndim else 1
    dstride = xs[d]
    xs[d] = 0
    shape = index.shape if index.ndim else (1,)
    ist = index.stride() if index.ndim else (0,)
    flag = flag_for(self.device)
    block = block_size(n)
    launch(_gather_kernel, (cdiv(n, block),), out, self, index, flag, n, size, dstride, tuple(shape), tuple(xs),
           tuple(ist), NDIM=len(shape), BLOCK=block, INT64=needs_int64(n, self, index))
    raise_if_flagged(op, "index", flag, size)
    return out
