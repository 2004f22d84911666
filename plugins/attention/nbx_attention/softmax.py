"""Softmax and log-softmax over any dim: ``softmax``, ``_softmax``, ``_safe_softmax``, ``log_softmax``,
``_log_softmax``.

One program handles ``ROWS`` rows (one on the GPU for long rows); a row that fits ``FUSED_MAX``
elements is read once into registers and written once. A longer row takes two passes: an online
max-and-sum pass over chunks (the running sum is rescaled when the max grows), then the write pass.
The reduced dim need not be the last one: a row is addressed by its outer index (any strides, via
``strided_offsets``) and the reduced dim's own stride. Half types compute in float32, float64 in
float64. The output is contiguous, as torch's is.

Rows of all ``-inf`` give NaN (torch's softmax) except in ``_safe_softmax``, where they give zeros.
``_softmax(half_to_float=True)`` follows CUDA's semantics (a float16 input, a float32 output); torch's
CPU kernel refuses it.
"""

from collections.abc import Mapping
from pathlib import Path

from nbx_core.runtime.launch import cdiv, launch, row_blocks

# isort: split
import triton
import triton.language as tl

from nbx_core import dtypes as D
from nbx_core.errors import NbxTypeError
from nbx_core.ops.copy import copy_
from nbx_core.runtime.kernels.copy import cast_to
from nbx_core.runtime.kernels.indexing import needs_int64, strided_offsets
from nbx_core.runtime.pointwise import tl_dtype
from nbx_core.runtime.tuning import Config, row_tunable
from nbx_core.shape import coalesce, contiguous_strides, numel, wrap_dim
from nbx_core.tensor import NBXTensor, empty_tensor
from nbx_core.tensor.args import FLOATING, REAL, check_dtype, dtype_arg, out_arg, tensor_arg

FUSED_MAX = 32768
"""Longest row kept whole in registers; longer rows take the two-pass kernel (tests lower it)."""
CHUNK = 4096
"""Chunk of the two-pass kernel (capped by FUSED_MAX)."""


def softmax_block(n: int) -> int:
    """The kernel's block for rows of ``n``: the row rounded up to a power of two, or the chunk of a
    row longer than FUSED_MAX."""
    return row_blocks(1, n, FUSED_MAX, CHUNK, 1)[0]


def _gpu_rule(dtype: str, n: int, block: int) -> Config:
    # More warps as the block grows.
    return {"TILE": 4096, "num_warps": 4 if block <= 1024 else 8 if block <= 4096 else 16}


SOFTMAX = row_tunable("attention", "softmax", _gpu_rule, {"TILE": 1 << 14, "num_warps": 1},
                      Path(__file__).with_name("configs"))
"""The softmax kernel's launch (see :func:`nbx_core.runtime.tuning.row_tunable`)."""


@triton.jit
def _load(ptrs, mask, IN_DT: tl.constexpr, COMPUTE: tl.constexpr):
    x = tl.load(ptrs, mask=mask)
    if x.dtype != IN_DT:
        # softmax(x, dtype=...) casts its input to dtype first: round there, then widen.
        x = cast_to(x, IN_DT)
    # Lanes past the row are -inf in the compute type (an integer or bool load cannot hold it).
    return tl.where(mask, x.to(COMPUTE), float("-inf"))


@triton.jit
def _finish(x, m, s, LOG: tl.constexpr, SAFE: tl.constexpr):
    # x: [ROWS, BLOCK]; m, s: the row max and sum of exp(x - m).
    if LOG:
        y = x - m[:, None] - tl.log(s)[:, None]
    else:
        y = tl.exp(x - m[:, None]) / s[:, None]
    if SAFE:
        y = tl.where((m == float("-inf"))[:, None], 0.0, y)
    return y


@triton.jit
def _softmax_kernel(x_ptr, y_ptr, R, N, outer, x_outer, y_outer, x_step, y_step,
                    LOG: tl.constexpr, SAFE: tl.constexpr, IN_DT: tl.constexpr, COMPUTE: tl.constexpr,
                    NDIM: tl.constexpr, ROWS: tl.constexpr, BLOCK: tl.constexpr, CHUNKED: tl.constexpr,
                    INT64: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    rmask = rows < R
    if INT64:
        rows = rows.to(tl.int64)
    x_row = x_ptr + strided_offsets(rows, outer, x_outer, NDIM)[:, None]
    y_row = y_ptr + strided_offsets(rows, outer, y_outer, NDIM)[:, None]
    cols = tl.arange(0, BLOCK)[None, :]
    if not CHUNKED:
        mask = rmask[:, None] & (cols < N)
        x = _load(x_row + cols * x_step, mask, IN_DT, COMPUTE)
        m = tl.max(x, axis=1)
        s = tl.sum(tl.exp(x - m[:, None]), axis=1)
        y = _finish(x, m, s, LOG, SAFE)
        tl.store(y_row + cols * y_step, y.to(y_ptr.dtype.element_ty), mask=mask)
    else:
        m = tl.full([ROWS], float("-inf"), COMPUTE)
        s = tl.zeros([ROWS], COMPUTE)
        for start in range(0, N, BLOCK):
            mask = rmask[:, None] & (cols + start < N)
            x = _load(x_row + (cols + start) * x_step, mask, IN_DT, COMPUTE)
            m_new = tl.maximum(m, tl.max(x, axis=1))
            # A row that is -inf so far keeps a zero sum instead of exp(-inf - -inf) = NaN.
            m_use = tl.where(m_new == float("-inf"), 0.0, m_new)
            s = s * tl.exp(m - m_use) + tl.sum(tl.exp(x - m_use[:, None]), axis=1)
            m = m_new
        for start in range(0, N, BLOCK):
            mask = rmask[:, None] & (cols + start < N)
            x = _load(x_row + (cols + start) * x_step, mask, IN_DT, COMPUTE)
            y = _finish(x, m, s, LOG, SAFE)
            tl.store(y_row + (cols + start) * y_step, y.to(y_ptr.dtype.element_ty), mask=mask)


def softmax_rows(op: str, x: NBXTensor, dim: int, out_dtype: D.DType, in_dtype: D.DType, log: bool, safe: bool,
                 config: Mapping[str, int] | None = None) -> NBXTensor:
    """``op``'s (log-)softmax of the checked ``x`` along ``dim``, computed from ``in_dtype`` (``x``
    cast first where it differs) into a new contiguous tensor of ``out_dtype``; ``safe`` gives rows
    of all ``-inf`` zeros. ``config`` replaces :data:`SOFTMAX`'s lookup."""
    d = wrap_dim(op, dim, x.ndim)
    shape = tuple(x.shape) if x.ndim else (1,)
    strides = tuple(x.stride()) if x.ndim else (1,)
    out = empty_tensor(x.shape, out_dtype, x.device)
    if out.numel() == 0:
        return out
    ostrides = contiguous_strides(shape)
    n = shape[d]
    outer_shape = tuple(s for i, s in enumerate(shape) if i != d)
    r = numel(outer_shape)
    # Rows are addressed through the other dims' strides, merged where they walk contiguously.
    cshape, (xs, ys) = coalesce(outer_shape or (1,),
                                tuple(st for i, st in enumerate(strides) if i != d) or (0,),
                                tuple(st for i, st in enumerate(ostrides) if i != d) or (0,))
    if not cshape:
        cshape, xs, ys = (1,), (0,), (0,)
    cfg = SOFTMAX.choose(config, x.dtype.name, n, softmax_block(n))
    block, rows, chunked = row_blocks(r, n, FUSED_MAX, CHUNK, cfg["TILE"])
    launch(_softmax_kernel, (cdiv(r, rows),), x, out, r, n, cshape, xs, ys, strides[d], ostrides[d],
           LOG=log, SAFE=safe, IN_DT=tl_dtype(in_dtype), COMPUTE=tl_dtype(D.compute_dtype(in_dtype)),
           NDIM=len(cshape), ROWS=rows, BLOCK=block, CHUNKED=chunked, INT64=needs_int64(r * n, x, out),
           num_warps=cfg["num_warps"])
    return out


def _check(op: str, x: object, dtype: object) -> tuple[NBXTensor, D.DType]:
    """The input and the result dtype; an integer input is accepted only with a floating ``dtype``."""
    x = tensor_arg(op, x)
    if dtype is None:
        return check_dtype(op, x, "self", FLOATING, fix="pass dtype=float32 or cast the input"), x.dtype
    return check_dtype(op, x, "self", REAL), dtype_arg(op, dtype, FLOATING)


def _result(op: str, y: NBXTensor, out: NBXTensor | None) -> NBXTensor:
    if out is None:
        return y
    return copy_(out_arg(op, out, y.shape, y.dtype), y)


def softmax(self: NBXTensor, dim: int, dtype: object = None, *, out: NBXTensor | None = None) -> NBXTensor:
    """``aten::softmax.int``: ``exp(x) / sum(exp(x))`` along ``dim``; ``dtype`` casts the input first."""
    x, want = _check("softmax", self, dtype)
    return _result("softmax", softmax_rows("softmax", x, dim, want, want, log=False, safe=False), out)


def log_softmax(self: NBXTensor, dim: int, dtype: object = None, *, out: NBXTensor | None = None) -> NBXTensor:
    """``aten::log_softmax.int``: ``x - logsumexp(x)`` along ``dim``; ``dtype`` casts the input first."""
    x, want = _check("log_softmax", self, dtype)
    return _result("log_softmax", softmax_rows("log_softmax", x, dim, want, want, log=True, safe=False), out)


def _safe_softmax(self: NBXTensor, dim: int, dtype: object = None) -> NBXTensor:
    """``aten::_safe_softmax``: softmax where a row of all ``-inf`` gives zeros instead of NaN."""
    x, want = _check("_safe_softmax", self, dtype)
    return softmax_rows("_safe_softmax", x, dim, want, want, log=False, safe=True)


def _half_to_float(op: str, x: NBXTensor, half_to_float: bool) -> D.DType:
    if not half_to_float:
        return x.dtype
    if x.dtype is not D.float16:
        raise NbxTypeError(f"{op}: half_to_float=True needs a float16 input, got {x.dtype}: "
                           "pass half_to_float=False")
    return D.float32


def _softmax(self: NBXTensor, dim: int, half_to_float: bool, *, out: NBXTensor | None = None) -> NBXTensor:
    """``aten::_softmax``; ``half_to_float`` turns a float16 input into a float32 result."""
    x, _ = _check("_softmax", self, None)
    want = _half_to_float("_softmax", x, half_to_float)
    return _result("_softmax", softmax_rows("_softmax", x, dim, want, x.dtype, log=False, safe=False), out)


def _log_softmax(self: NBXTensor, dim: int, half_to_float: bool, *, out: NBXTensor | None = None) -> NBXTensor:
    """``aten::_log_softmax``; ``half_to_float`` turns a float16 input into a float32 result."""
    x, _ = _check("_log_softmax", self, None)
    want = _half_to_float("_log_softmax", x, half_to_float)
    return _result("_log_softmax", softmax_rows("_log_softmax", x, dim, want, x.dtype, log=True, safe=False),
                   out)
