"""cumsum, cumprod and logcumsumexp: a block scan down the scanned dim, carrying each block's total
(sum, product, or log of the sum of exponentials) to the next.

The input is seen as (O, K, I) like a reduction over ``dim``; a program scans ``BLOCK_I``
neighbouring columns of one outer index, ``BLOCK_K`` steps at a time. The scans share the tiles
of :data:`CUMSUM`: they move the same bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import triton
import triton.language as tl

from nbx_core import dtypes as D
from nbx_core.runtime.kernels.copy import cast_to
from nbx_core.runtime.kernels.indexing import needs_int64
from nbx_core.runtime.launch import cdiv, launch, next_pow2
from nbx_core.runtime.pointwise import tl_dtype
from nbx_core.runtime.tuning import Key, Tunable, bucket
from nbx_core.shape import wrap_dim
from nbx_core.tensor import NBXTensor, empty_tensor
from nbx_core.tensor.args import FLOATING, dtype_arg, int_arg, tensor_arg

from .engine import mul_combine, plan
from .rules import DTYPES


def _gpu_tiles(size: int, i: int, k: int) -> dict[str, int]:
    # Narrow column tiles, and at least 2048 elements (16 steps) a load.
    bi = min(next_pow2(i), 64)
    return {"BLOCK_I": bi, "BLOCK_K": min(next_pow2(k), max(2048 // bi, 16)), "num_warps": 4}


def _interpreter_tiles(size: int, i: int, k: int) -> dict[str, int]:
    # Few programs: up to 1024 columns, 1024 elements a load.
    bi = min(next_pow2(i), 1024)
    return {"BLOCK_I": bi, "BLOCK_K": min(next_pow2(k), max(1024 // bi, 1)), "num_warps": 4}


CUMSUM = Tunable(
    "reduction", "cumsum", {"BLOCK_I": "pow2", "BLOCK_K": "pow2", "num_warps": "pow2"},
    key=lambda size, i, k: Key({"itemsize": size, "I": bucket(i), "K": bucket(k)}),
    rule=_gpu_tiles, interpreter=_interpreter_tiles,
    tables=Path(__file__).with_name("configs"))
"""The scan's tiles: BLOCK_I neighbouring columns by BLOCK_K steps a load, and its warps. Arguments:
the input's itemsize, the columns (I) and the scanned length (K)."""


SUM, PROD, LOGSUMEXP = tl.constexpr(0), tl.constexpr(1), tl.constexpr(2)
"""The scans' combining operations (the kernel's OP; constexprs, so that the kernel reads them)."""


@triton.jit
def _logaddexp(a, b):
    # log(exp(a) + exp(b)) without overflow; equal arguments (both -inf or +inf) give a + log 2, and
    # NaN in either gives NaN.
    hi = tl.where(a > b, a, b)
    lo = tl.where(a > b, b, a)
    d = tl.where(lo == hi, 0.0, lo - hi)
    return hi + tl.log(1.0 + tl.exp(d))


@triton.jit
def _scan_kernel(x_ptr, out_ptr, K, I, so, sk, si, OP: tl.constexpr, SRC: tl.constexpr, ACC: tl.constexpr,
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
    if OP == SUM:
        neutral = 0
    elif OP == PROD:
        neutral = 1
    else:
        neutral = float("-inf")
    carry = tl.full([BLOCK_I], neutral, ACC)
    for k0 in range(0, K, BLOCK_K):
        k = kr + k0
        m = (k < K)[:, None] & ok[None, :]
        raw = tl.load(x_ptr + base[None, :] + k[:, None] * sk, mask=m)
        x = tl.where(m, cast_to(cast_to(raw, SRC), ACC), neutral)
        if OP == SUM:
            y = tl.cumsum(x, axis=0) + carry[None, :]
            carry += tl.sum(x, axis=0)
        elif OP == PROD:
            y = tl.cumprod(x, axis=0) * carry[None, :]
            carry = carry * tl.reduce(x, 0, mul_combine)
        else:
            y = _logaddexp(tl.associative_scan(x, 0, _logaddexp), carry[None, :])
            carry = _logaddexp(carry, tl.reduce(x, 0, _logaddexp))
        tl.store(out_ptr + out_base[None, :] + k[:, None] * I, cast_to(y, out_ptr.dtype.element_ty), mask=m)


def cumsum(self: NBXTensor, dim: int, *, dtype: Any = None) -> NBXTensor:
    """aten::cumsum along ``dim``; integer and bool inputs give int64 unless ``dtype=`` says otherwise."""
    return _cumulative("cumsum", SUM, self, dim, dtype)


def cumprod(self: NBXTensor, dim: int, *, dtype: Any = None) -> NBXTensor:
    """aten::cumprod along ``dim``; integer and bool inputs give int64 unless ``dtype=`` says otherwise."""
    return _cumulative("cumprod", PROD, self, dim, dtype)


def logcumsumexp(self: NBXTensor, dim: int) -> NBXTensor:
    """aten::logcumsumexp along ``dim``: ``log(cumsum(exp(self)))`` without overflow; floating inputs."""
    return _cumulative("logcumsumexp", LOGSUMEXP, tensor_arg("logcumsumexp", self, dtypes=FLOATING), dim, None)


def _cumulative(op: str, kind: tl.constexpr, self: NBXTensor, dim: int, dtype: Any) -> NBXTensor:
    x = tensor_arg(op, self, dtypes=DTYPES)
    int_arg(op, dim, "dim")
    d = wrap_dim(op, dim, x.ndim)
    out_dtype = dtype_arg(op, dtype, DTYPES) or (D.int64 if x.dtype.is_integral else x.dtype)
    out = empty_tensor(x.shape, out_dtype, x.device)
    if out.numel() == 0:
        return out
    return scan(out, x, d, kind=kind)


def scan(out: NBXTensor, x: NBXTensor, dim: int, config: Mapping[str, int] | None = None, kind: tl.constexpr = SUM
         ) -> NBXTensor:
    """Write the cumulative sum (or, by ``kind``, product or log-sum-exp) of ``x`` along ``dim``
    (wrapped, ``x`` not empty) into ``out``, a contiguous tensor of ``x``'s shape, and return it;
    ``config`` replaces the lookup of :data:`CUMSUM`."""
    pl = plan(x, (dim,) if x.ndim else ())
    acc = D.compute_dtype(out.dtype) if out.dtype.is_floating_point else D.int64
    cfg = CUMSUM.choose(config, x.dtype.itemsize, pl.I, pl.K)
    launch(_scan_kernel, (pl.O, cdiv(pl.I, cfg["BLOCK_I"])), pl.x, out, pl.K, pl.I, pl.so, pl.sk, pl.si,
           OP=kind.value, SRC=tl_dtype(out.dtype), ACC=tl_dtype(acc), BLOCK_K=cfg["BLOCK_K"], BLOCK_I=cfg["BLOCK_I"],
           INT64=needs_int64(pl.O * pl.K * pl.I, pl.x, out), num_warps=cfg["num_warps"])
    return out
