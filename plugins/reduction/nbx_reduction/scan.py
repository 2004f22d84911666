"""cumsum: a block scan (tl.cumsum) down the scanned dim, carrying each block's total to the next.

The input is seen as (O, K, I) like a reduction over ``dim``; a program scans ``BLOCK_I``
neighbouring columns of one outer index, ``BLOCK_K`` steps at a time.
"""

from __future__ import annotations

from typing import Any

import triton
import triton.language as tl

from nbx_core import dtypes as D
from nbx_core.runtime.kernels.copy import cast_to
from nbx_core.runtime.kernels.indexing import needs_int64
from nbx_core.runtime.launch import BACKEND, cdiv, launch, next_pow2
from nbx_core.runtime.pointwise import tl_dtype
from nbx_core.shape import wrap_dim
from nbx_core.tensor import NBXTensor, empty_tensor
from nbx_core.tensor.args import dtype_arg, int_arg, tensor_arg

from .engine import plan
from .rules import DTYPES


@triton.jit
def _cumsum_kernel(x_ptr, out_ptr, K, I, so, sk, si, SRC: tl.constexpr, ACC: tl.constexpr,
                   BLOCK_K: tl.constexpr, BLOCK_I: tl.constexpr, INT64: tl.constexpr):
    o = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_I + tl.arange(0, BLOCK_I)
    kr = tl.arange(0, BLOCK_K)
    if INT64:
        o = o.to(tl.int64)
        cols = cols.to(tl.int64)
        kr = kr.to(tl.int64)
    ok = cols < I
    base = o * so + cols * si
    out_base = o * K * I + cols
    carry = tl.zeros([BLOCK_I], ACC)
    for k0 in range(0, K, BLOCK_K):
        k = kr + k0
        m = (k < K)[:, None] & ok[None, :]
        raw = tl.load(x_ptr + base[None, :] + k[:, None] * sk, mask=m)
        x = tl.where(m, cast_to(cast_to(raw, SRC), ACC), 0)
        tl.store(out_ptr + out_base[None, :] + k[:, None] * I,
                 cast_to(tl.cumsum(x, axis=0) + carry[None, :], out_ptr.dtype.element_ty), mask=m)
        carry += tl.sum(x, axis=0)


def cumsum(self: NBXTensor, dim: int, *, dtype: Any = None) -> NBXTensor:
    """aten::cumsum along ``dim``; integer and bool inputs give int64 unless ``dtype=`` says otherwise."""
    x = tensor_arg("cumsum", self, dtypes=DTYPES)
    int_arg("cumsum", dim, "dim")
    d = wrap_dim("cumsum", dim, x.ndim)
    out_dtype = dtype_arg("cumsum", dtype, DTYPES) or (D.int64 if x.dtype.is_integral else x.dtype)
    out = empty_tensor(x.shape, out_dtype, x.device)
    if out.numel() == 0:
        return out
    pl = plan(x, (d,) if x.ndim else ())
    acc = D.compute_dtype(out_dtype) if out_dtype.is_floating_point else D.int64
    bi = min(next_pow2(pl.I), 1024 if BACKEND == "cpu" else 64)
    bk = min(next_pow2(pl.K), max(1024 // bi, 1) if BACKEND == "cpu" else max(2048 // bi, 16))
    launch(_cumsum_kernel, (pl.O, cdiv(pl.I, bi)), pl.x, out, pl.K, pl.I, pl.so, pl.sk, pl.si,
           SRC=tl_dtype(out_dtype), ACC=tl_dtype(acc), BLOCK_K=bk, BLOCK_I=bi,
           INT64=needs_int64(pl.O * pl.K * pl.I, pl.x, out), num_warps=4)
    return out
