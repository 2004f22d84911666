"""The flash-attention forward kernel: online softmax over key blocks, no L x S matrix in memory.

Inputs arrive as 4-D views (Z, H, L, E) with any strides (the sdpa wrappers broadcast and reshape
to that); key and value heads may be fewer than query heads (grouped-query attention: query head
``h`` reads key head ``h // GK`` and value head ``h // GV``). One program computes ``BLOCK_M`` query
rows of one (z, h): it walks key blocks of ``BLOCK_N``, keeping the running row max ``m``, the
running sum ``l`` of exponentials and the unnormalised output ``acc``. Scores are kept in base 2
(the scale is pre-multiplied by log2(e), so ``exp2`` replaces ``exp``).

Key blocks that need no masking (inside the key length and fully below the causal diagonal) run
first without any ``where``; the remaining blocks (the diagonal, the key tail) apply the masks.
An attention mask spanning several key blocks is summarised into block lists first
(:mod:`nbx_attention.mask_blocks`): the kernel skips the tiles it masks out entirely, walks the
tiles it keeps whole as one range of key blocks, and loads it only for tiles it changes in part,
so a causal mask given as data skips the tiles ``is_causal`` skips.
The causal mask is torch's: query ``i`` sees key ``j`` iff ``j <= i`` (the top-left aligned tril of
an L x S matrix); blocks past the diagonal are skipped. An attention mask is either boolean (True =
attend) or additive, broadcast by stride-0 strides.

A row that sees no key (all masked) outputs zeros, as torch's CPU sdpa does; its logsumexp is the
caller's ``masked_lse`` (0 for torch's CPU flash kernel, +inf for the CUDA ones).

On the GPU, unmasked non-causal half-type attention at head dim 128 without a logsumexp runs the
warp-specialized kernel of :mod:`nbx_attention.warp_specialized` instead.

When few programs would cover the GPU (decoding: query length 1), the key range is split over a
third grid axis (flash-decoding); each split writes its partial (acc, m, l) in float32, and the
last split of a row block to finish (a ticket, :mod:`nbx_core.runtime.kernels.tickets`) merges them in
split order.

Triton's interpreter multiplies bfloat16 ``tl.dot`` operands wrongly (it reads their bits as
integers): every dot's
operands go through ``nbx_core.runtime.kernels.dot.dot_operand``, which widens them to float32 there (exact).
"""

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

from nbx_core.runtime.kernels.dot import dot_operand
from nbx_core.runtime.kernels.indexing import slice_needs_int64
from nbx_core.runtime.kernels.tickets import last_to_arrive, tickets
from nbx_core.runtime.launch import TRAITS, cdiv, launch, multiprocessors, next_pow2
from nbx_core.runtime.memo import memoized

# isort: split
import triton
import triton.language as tl

from nbx_core import dtypes as D
from nbx_core.device import Device
from nbx_core.runtime.pointwise import pointwise, tl_dtype
from nbx_core.runtime.tuning import Config, Key, Tunable, bucket
from nbx_core.tensor import NBXTensor, empty_tensor

from . import warp_specialized
from .mask_blocks import mask_blocks

LOG2E = math.log2(math.e)
MIN_SPLIT_KEYS = 512
"""Fewest keys one split handles (tests lower it, and raise :data:`SPLIT`'s PROGRAMS_PER_SM, to reach
the split path)."""
WARP_SPECIALIZE = not TRAITS.interpreted
"""Whether what :func:`nbx_attention.warp_specialized.applies` accepts runs that kernel (when it
needs no key splits). The interpreter runs the portable kernel unless a test sets this."""


@triton.jit
def _attn_block(acc, m_i, l_i, q, k_base, v_base, mask_base, start_n, offs_m, offs_n, offs_d, offs_dv,
                L, S, qk_scale, skn, skd, svn, svd, smm, smn, use_mask,
                E: tl.constexpr, EV: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_DV: tl.constexpr,
                MASK_KIND: tl.constexpr, CAUSAL: tl.constexpr, EDGE: tl.constexpr, PREC: tl.constexpr,
                ACC: tl.constexpr, FOLD_SCALE: tl.constexpr, LISTED: tl.constexpr, MASK_LAYOUT: tl.constexpr,
                MASK_IN_PRODUCT: tl.constexpr):
    cols = start_n + offs_n
    kv_ok = cols < S
    # Interior blocks lie inside the key length: only a padded head dim needs a load mask there.
    k_ptrs = k_base + cols[None, :] * skn + offs_d[:, None] * skd
    v_ptrs = v_base + cols[:, None] * svn + offs_dv[None, :] * svd
    if EDGE:
        kt = tl.load(k_ptrs, mask=kv_ok[None, :] & (offs_d < E)[:, None], other=0.0)
    elif E == BLOCK_D:
        kt = tl.load(k_ptrs)
    else:
        kt = tl.load(k_ptrs, mask=(offs_d < E)[:, None], other=0.0)
    if MASK_KIND != 0:
        # With LISTED, use_mask says whether this block applies the mask (a block list's partial
        # block) or not (the key tail of a run the mask keeps whole). Scores the load skips are kept:
        # past the key length the EDGE mask removes them, past the query length they are not stored.
        # A mask the same for every query row (a padding mask) loads one row of BLOCK_N values, one
        # the same for every key (transformers' all-True mask for ViT) one column of BLOCK_M values.
        # Offsets are 32-bit unless INT64: a tile of 64-bit pointers costs registers in every loop.
        if MASK_LAYOUT == 0:
            mptr = mask_base + cols[None, :] * smn
            mok = kv_ok[None, :]
        elif MASK_LAYOUT == 1:
            mptr = mask_base + offs_m[:, None] * smm
            mok = (offs_m < L)[:, None]
        else:
            mptr = mask_base + (offs_m[:, None] * smm + cols[None, :] * smn)
            mok = kv_ok[None, :] & (offs_m < L)[:, None]
        if LISTED:
            if MASK_LAYOUT == 1:
                mok = mok & (offs_m < tl.where(use_mask, L, 0))[:, None]
            else:
                mok = mok & (cols < tl.where(use_mask, S, 0))[None, :]
    if MASK_KIND == 1 and MASK_IN_PRODUCT:
        # A tile of booleans enters as the product's accumulator, 0 or -inf (what torch adds; the
        # scale is positive): the compiler then moves the mask into the product's layout. Applied
        # after the product, it moved the scores into the load's layout instead, and the softmax's
        # row reductions with them (164 warp shuffles a block where 8 do, nearly twice the instructions).
        keep = tl.load(mptr, mask=mok, other=1) != 0
        qk = tl.dot(dot_operand(q), dot_operand(kt), tl.where(keep, 0.0, float("-inf")).to(ACC),
                    input_precision=PREC, out_dtype=ACC)
    else:
        qk = tl.dot(dot_operand(q), dot_operand(kt), input_precision=PREC, out_dtype=ACC)
    if not FOLD_SCALE:
        qk = qk * qk_scale
    if MASK_KIND == 1 and not MASK_IN_PRODUCT:
        qk = tl.where(tl.load(mptr, mask=mok, other=1) != 0, qk, float("-inf"))
    elif MASK_KIND == 2:
        # In base 2 the mask's finite values stay finite: a row masked with finfo.min everywhere
        # (padding under a float mask) is uniform in torch, not empty.
        mv = tl.load(mptr, mask=mok, other=0.0).to(ACC)
        lowest = -1.7976931348623157e308 if ACC == tl.float64 else -3.4028234663852886e38
        qk += tl.where(mv == float("-inf"), mv, tl.maximum(mv * 1.4426950408889634, lowest))
    if EDGE:
        ok = kv_ok[None, :]
        if CAUSAL:
            ok = ok & (cols[None, :] <= offs_m[:, None])
        qk = tl.where(ok, qk, float("-inf"))
    if FOLD_SCALE:
        # A positive scale commutes with the row max, so the scores stay unscaled and the scale rides
        # in one fused multiply-add with the max: a multiply per score fewer in the softmax, whose
        # instruction issue the tensor cores wait on.
        m_new = tl.maximum(m_i, tl.max(qk, axis=1) * qk_scale)
    else:
        m_new = tl.maximum(m_i, tl.max(qk, axis=1))
    # While a row has seen only -inf, subtract 0 so that exp2 gives 0 rather than NaN.
    m_use = tl.where(m_new == float("-inf"), 0.0, m_new)
    if FOLD_SCALE:
        p = tl.exp2(qk * qk_scale - m_use[:, None])
    else:
        p = tl.exp2(qk - m_use[:, None])
    alpha = tl.exp2(m_i - m_use)
    l_i = l_i * alpha + tl.sum(p, axis=1)
    if EDGE:
        v = tl.load(v_ptrs, mask=kv_ok[:, None] & (offs_dv < EV)[None, :], other=0.0)
    elif EV == BLOCK_DV:
        v = tl.load(v_ptrs)
    else:
        v = tl.load(v_ptrs, mask=(offs_dv < EV)[None, :], other=0.0)
    # The product accumulates into acc itself (one accumulator tile in registers, not two).
    acc = tl.dot(dot_operand(p.to(v.dtype)), dot_operand(v), acc * alpha[:, None], input_precision=PREC,
                 out_dtype=ACC)
    return acc, m_new, l_i


@triton.jit
def _store_result(acc, m_i, l_i, o_ptr, lse_ptr, offs_m, offs_dv, L, som, sod, slm, masked_lse,
                  EV: tl.constexpr, STORE_LSE: tl.constexpr):
    seen = l_i > 0
    out = acc / tl.where(seen, l_i, 1.0)[:, None]
    rows_ok = offs_m < L
    tl.store(o_ptr + offs_m[:, None] * som + offs_dv[None, :] * sod, out.to(o_ptr.dtype.element_ty),
             mask=rows_ok[:, None] & (offs_dv < EV)[None, :])
    if STORE_LSE:
        lse = (m_i + tl.log2(tl.where(seen, l_i, 1.0))) * 0.6931471805599453
        lse = tl.where(seen, lse, masked_lse)
        tl.store(lse_ptr + offs_m * slm, lse.to(lse_ptr.dtype.element_ty), mask=rows_ok)


@triton.jit
def _merge_splits(part_ptr, ml_ptr, zh, n_split, L, offs_m, offs_dv, BLOCK_M: tl.constexpr,
                  BLOCK_DV: tl.constexpr, ACC: tl.constexpr):
    """(acc, m, l) of the whole key range from the splits' partials of (z, h), merged in split order."""
    rows_ok = offs_m < L
    m_i = tl.full([BLOCK_M], float("-inf"), ACC)
    l_i = tl.zeros([BLOCK_M], ACC)
    acc = tl.zeros([BLOCK_M, BLOCK_DV], ACC)
    for s in range(0, n_split):
        row = (zh.to(tl.int64) * n_split + s) * L + offs_m
        m_s = tl.load(ml_ptr + row * 2, mask=rows_ok, other=float("-inf"))
        l_s = tl.load(ml_ptr + row * 2 + 1, mask=rows_ok, other=0.0)
        a_s = tl.load(part_ptr + row[:, None] * BLOCK_DV + offs_dv[None, :], mask=rows_ok[:, None], other=0.0)
        m_new = tl.maximum(m_i, m_s)
        m_use = tl.where(m_new == float("-inf"), 0.0, m_new)
        alpha = tl.exp2(m_i - m_use)
        beta = tl.exp2(m_s - m_use)
        acc = acc * alpha[:, None] + a_s * beta[:, None]
        l_i = l_i * alpha + l_s * beta
        m_i = m_new
    return acc, m_i, l_i


@triton.jit
def _attn_fwd_kernel(q_ptr, k_ptr, v_ptr, mask_ptr, o_ptr, lse_ptr, part_ptr, ml_ptr, cnt_ptr,
                     partial_ptr, counts_ptr, sbz, sbh, NB,
                     H, L, S, GK, GV, split_len, scale32, scale64: tl.float64, masked_lse,
                     sqz, sqh, sqm, sqd, skz, skh, skn, skd, svz, svh, svn, svd,
                     smz, smh, smm, smn, soz, soh, som, sod, slz, slh, slm,
                     E: tl.constexpr, EV: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                     BLOCK_D: tl.constexpr, BLOCK_DV: tl.constexpr, MASK_KIND: tl.constexpr,
                     CAUSAL: tl.constexpr, SPLIT: tl.constexpr, STORE_LSE: tl.constexpr,
                     PREC: tl.constexpr, ACC: tl.constexpr, FOLD_SCALE: tl.constexpr,
                     HEAVY_FIRST: tl.constexpr, BLOCKS: tl.constexpr, RUN_MASK: tl.constexpr,
                     MASK_LAYOUT: tl.constexpr, MASK_IN_PRODUCT: tl.constexpr, INT64: tl.constexpr):
    if HEAVY_FIRST:
        start_m = tl.num_programs(0) - 1 - tl.program_id(0)
    else:
        start_m = tl.program_id(0)
    zh = tl.program_id(1)
    split = tl.program_id(2)
    z = (zh // H).to(tl.int64)
    h = zh % H
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    if INT64:  # offsets within one (z, h) slice are 32-bit unless one can pass 2**31
        offs_m = offs_m.to(tl.int64)
        offs_n = offs_n.to(tl.int64)
    offs_d = tl.arange(0, BLOCK_D)
    offs_dv = tl.arange(0, BLOCK_DV)
    if ACC == tl.float64:
        qk_scale = scale64
    else:
        qk_scale = scale32
    q_base = q_ptr + z * sqz + h.to(tl.int64) * sqh
    k_base = k_ptr + z * skz + (h // GK).to(tl.int64) * skh
    v_base = v_ptr + z * svz + (h // GV).to(tl.int64) * svh
    mask_base = mask_ptr + z * smz + h.to(tl.int64) * smh
    q = tl.load(q_base + offs_m[:, None] * sqm + offs_d[None, :] * sqd,
                mask=(offs_m < L)[:, None] & (offs_d < E)[None, :], other=0.0)
    m_i = tl.full([BLOCK_M], float("-inf"), ACC)
    l_i = tl.zeros([BLOCK_M], ACC)
    acc = tl.zeros([BLOCK_M, BLOCK_DV], ACC)
    lo = split * split_len
    hi = tl.minimum(S, lo + split_len)
    if BLOCKS:
        # The mask's block lists (nbx_attention.mask_blocks): the run of key blocks it keeps whole is
        # walked like unmasked keys, its partial blocks after it; blocks it removes are never visited.
        row = z * sbz + h.to(tl.int64) * sbh + start_m
        lo = tl.load(counts_ptr + row * 3) * BLOCK_N
        hi = tl.minimum(S, tl.load(counts_ptr + row * 3 + 1) * BLOCK_N)
    safe = (S // BLOCK_N) * BLOCK_N
    if CAUSAL:
        hi = tl.minimum(hi, (start_m + 1) * BLOCK_M)
        safe = tl.minimum(safe, ((start_m * BLOCK_M + 1) // BLOCK_N) * BLOCK_N)
    mid = tl.maximum(lo, tl.minimum(hi, safe))
    for start_n in range(lo, mid, BLOCK_N):
        acc, m_i, l_i = _attn_block(acc, m_i, l_i, q, k_base, v_base, mask_base, start_n, offs_m, offs_n,
                                    offs_d, offs_dv, L, S, qk_scale, skn, skd, svn, svd, smm, smn, True,
                                    E, EV, BLOCK_D, BLOCK_DV, RUN_MASK, CAUSAL, False, PREC, ACC, FOLD_SCALE, False,
                                    MASK_LAYOUT, MASK_IN_PRODUCT)
    if BLOCKS:
        # One loop, one copy of the block's code (fewer registers), for the run's key tail (no mask)
        # and then the partial blocks (the mask applied).
        n_edge = tl.cdiv(hi - mid, BLOCK_N)
        n_partial = tl.load(counts_ptr + row * 3 + 2)
        for i in range(0, n_edge + n_partial):
            listed = i >= n_edge
            start_n = tl.where(listed, tl.load(partial_ptr + row * NB + (i - n_edge), mask=listed, other=0) * BLOCK_N,
                               mid + i * BLOCK_N)
            acc, m_i, l_i = _attn_block(acc, m_i, l_i, q, k_base, v_base, mask_base, start_n, offs_m, offs_n,
                                        offs_d, offs_dv, L, S, qk_scale, skn, skd, svn, svd, smm, smn, listed,
                                        E, EV, BLOCK_D, BLOCK_DV, MASK_KIND, CAUSAL, True, PREC, ACC, FOLD_SCALE,
                                        True, MASK_LAYOUT, MASK_IN_PRODUCT)
    else:
        for start_n in range(mid, hi, BLOCK_N):
            acc, m_i, l_i = _attn_block(acc, m_i, l_i, q, k_base, v_base, mask_base, start_n, offs_m, offs_n,
                                        offs_d, offs_dv, L, S, qk_scale, skn, skd, svn, svd, smm, smn, True,
                                        E, EV, BLOCK_D, BLOCK_DV, MASK_KIND, CAUSAL, True, PREC, ACC, FOLD_SCALE,
                                        False, MASK_LAYOUT, MASK_IN_PRODUCT)
    if SPLIT:
        # Partials: part[zh, split, m, dv] (unnormalised acc) and ml[zh, split, m, 0:2] = (m, l).
        n_split = tl.num_programs(2)
        row = (zh.to(tl.int64) * n_split + split) * L + offs_m
        rows_ok = offs_m < L
        tl.store(part_ptr + row[:, None] * BLOCK_DV + offs_dv[None, :], acc, mask=rows_ok[:, None])
        tl.store(ml_ptr + row * 2, m_i, mask=rows_ok)
        tl.store(ml_ptr + row * 2 + 1, l_i, mask=rows_ok)
        # The last split of these rows to finish merges them all.
        if last_to_arrive(cnt_ptr, zh * tl.num_programs(0) + start_m, n_split):
            merged, m_all, l_all = _merge_splits(part_ptr, ml_ptr, zh, n_split, L, offs_m, offs_dv, BLOCK_M,
                                                 BLOCK_DV, ACC)
            _store_result(merged, m_all, l_all, o_ptr + z * soz + h.to(tl.int64) * soh,
                          lse_ptr + z * slz + h.to(tl.int64) * slh, offs_m, offs_dv, L, som, sod, slm,
                          masked_lse, EV, STORE_LSE)
    else:
        _store_result(acc, m_i, l_i, o_ptr + z * soz + h.to(tl.int64) * soh,
                      lse_ptr + z * slz + h.to(tl.int64) * slh, offs_m, offs_dv, L, som, sod, slm, masked_lse,
                      EV, STORE_LSE)


@triton.jit
def _additive(keep, sc):
    return tl.where(keep != 0, 0.0, float("-inf"))


def additive_mask(op: str, mask: NBXTensor) -> NBXTensor:
    """A bool attention mask (True = attend) as float64 scores to add: 0 where a key is kept, -inf
    elsewhere (the same softmax)."""
    return pointwise(op, _additive, mask, dtype=D.float64)


def _gpu_rule(dtype: str, L: int, S: int, E: int, EV: int, causal: bool) -> Config:
    # The pipelined K/V tiles plus the Q tile stay within Hopper's 227 KB of shared memory at head
    # dim 256 (float64 takes the smallest tiles). K and V load through pointers: tensor-descriptor
    # (TMA) loads issue fewer instructions but were slower at every benchmark shape
    # (benchmarks/results/sweeps/h200-attention-tma.json). The accumulator is rescaled every key
    # block: rescaling only when a row's max grows by more than 2^8 needs a block-wide max and a
    # branch, and was slower (sweeps/h200-attention-lazy.json).
    d = max(next_pow2(E), next_pow2(EV))
    if dtype == "float64":
        tiles = (16 if L <= 16 else 32), 16, 4, 1
    elif dtype == "float32":
        tiles = (16 if L <= 16 else 64), 32, 4, 2
    elif L <= 16:
        tiles = 16, 64, 4, 4 if d <= 128 else 2
    else:
        tiles = (64, 64, 4, 3) if d <= 128 else (64, 64, 8, 2)
    return {**dict(zip(("BLOCK_M", "BLOCK_N", "num_warps", "num_stages"), tiles, strict=True)),
            **_orders(E, causal)}


def _orders(E: int, causal: bool) -> Config:
    # FOLD_SCALE: the scale applied in the softmax's fused multiply-add, from head dim 128 (where
    # it saves time on the H200, sweeps/h200-attention-fold.json; at 64 it costs). HEAVY_FIRST: a
    # head's query tiles launch last row first under a causal mask, whose last tiles see the most
    # keys, leaving light tiles for the end of the grid (sweeps/h200-attention-order.json).
    return {"FOLD_SCALE": int(max(16, next_pow2(E)) >= 128), "HEAVY_FIRST": int(causal)}


FLASH = Tunable(
    "attention", "flash",
    {"BLOCK_M": "pow2", "BLOCK_N": "pow2", "num_warps": "pow2", "num_stages": "count", "FOLD_SCALE": "flag",
     "HEAVY_FIRST": "flag"},
    key=lambda dtype, L, S, E, EV, causal: Key({"dtype": dtype, "L": bucket(L), "S": bucket(S), "E": bucket(E),
                                                "EV": bucket(EV), "mask": "causal" if causal else "full"}),
    rule=_gpu_rule,
    interpreter=lambda dtype, L, S, E, EV, causal: {
        "BLOCK_M": max(16, min(64, next_pow2(L))), "BLOCK_N": max(16, min(64, next_pow2(S))), "num_warps": 1,
        "num_stages": 1, **_orders(E, causal)},
    tables=Path(__file__).with_name("configs"))
"""The portable flash kernel's launch: (BLOCK_M, BLOCK_N) query and key tiles, warps and stages;
FOLD_SCALE, whether the scale is folded into the softmax (only where that is exact: a finite
positive scale, no additive mask, not float64, which Triton 3.6 fails to compile so); HEAVY_FIRST,
whether a head's query tiles launch last row first. Arguments: the dtype's name, the query and key
lengths, the head dims of q/k and of v, and whether the mask is causal."""


SPLIT = Tunable(
    "attention", "flash_split", {"PROGRAMS_PER_SM": "count0"},
    key=lambda dtype, L, S, E: Key({"dtype": dtype, "L": bucket(L), "S": bucket(S), "E": bucket(E)}),
    # Two per SM let a decoding batch run in one launch; splitting for four per SM was slower. The
    # interpreter never splits (each program costs Python time there) unless a test asks.
    rule=lambda dtype, L, S, E: {"PROGRAMS_PER_SM": 2},
    interpreter=lambda dtype, L, S, E: {"PROGRAMS_PER_SM": 0},
    tables=Path(__file__).with_name("configs"))
"""When the key range is split (flash-decoding): while fewer programs than PROGRAMS_PER_SM per SM
would run (SMs counted by ``nbx_core.runtime.launch.multiprocessors``; 0: never). Arguments: the
dtype's name, the query and key lengths and the head dim of q/k."""


def _splits(programs: int, S: int, block_n: int, device: Device, per_sm: int) -> tuple[int, int]:
    """(number of key splits, keys per split, a multiple of block_n)."""
    n = 1
    target = per_sm * multiprocessors(device.index or 0)
    if programs < target and S >= 2 * MIN_SPLIT_KEYS:
        n = min(cdiv(target, programs), S // MIN_SPLIT_KEYS)
    per = cdiv(cdiv(S, n), block_n) * block_n if S else block_n
    return cdiv(S, per) if S else 1, per


def _mask_layout(strides: Sequence[int]) -> int:
    """How the kernel loads a mask tile: 0, one row (the same for every query); 1, one column (the
    same for every key); 2, a whole tile."""
    if strides[2] == 0:
        return 0
    return 1 if strides[3] == 0 else 2


def flash_forward(q: NBXTensor, k: NBXTensor, v: NBXTensor, mask: NBXTensor | None, out: NBXTensor,
                  lse: NBXTensor | None, *, scale: float, causal: bool, masked_lse: float,
                  config: Mapping[str, int] | None = None,
                  split_config: Mapping[str, int] | None = None) -> None:
    """Write attention of 4-D views ``q`` (Z, H, L, E), ``k`` (Z, Hk, S, E), ``v`` (Z, Hv, S, Ev) into
    ``out`` (Z, H, L, Ev) and, when given, the natural-log logsumexp of each row into ``lse`` (Z, H, L).

    ``mask`` is None or a (Z, H, L, S) view (stride 0 where it broadcasts): bool (True = attend) or
    additive. Arguments are validated by the caller. ``config`` replaces :data:`FLASH`'s lookup and
    runs the portable kernel (the warp-specialized one otherwise takes what it applies to); ``split_config``
    replaces :data:`SPLIT`'s.
    """
    Z, H, L, E = q.shape
    S, EV = k.shape[2], v.shape[3]
    if Z * H * L == 0:
        return
    per_sm = SPLIT.choose(split_config, q.dtype.name, L, S, E)["PROGRAMS_PER_SM"]
    if config is None and WARP_SPECIALIZE \
            and warp_specialized.applies(q, k, v, mask, out, lse, scale=scale, causal=causal) \
            and _splits(cdiv(L, warp_specialized.BLOCK_M) * Z * H, S, warp_specialized.BLOCK_N, q.device,
                        per_sm)[0] == 1:
        warp_specialized.ws_forward(q, k, v, out, qk_scale=scale * LOG2E)
        return
    cfg = FLASH.choose(config, q.dtype.name, L, S, E, EV, causal)
    bm, bn, warps, stages = cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["num_warps"], cfg["num_stages"]
    bd, bdv = max(16, next_pow2(E)), max(16, next_pow2(EV))
    acc = D.float64 if q.dtype is D.float64 else D.float32
    programs = cdiv(L, bm) * Z * H
    n_split, per = _splits(programs, S, bn, q.device, per_sm)
    split = n_split > 1
    part = ml = cnt = out
    if split:
        part = empty_tensor((Z * H * n_split * L * bdv,), acc, q.device)
        ml = empty_tensor((Z * H * n_split * L * 2,), acc, q.device)
        cnt = tickets(q.device, cdiv(L, bm) * Z * H)
    kind = 0 if mask is None else 1 if mask.dtype is D.bool_ else 2
    fold = bool(cfg["FOLD_SCALE"]) and q.dtype is not D.float64 and kind != 2 and 0 < scale < math.inf
    ms = mask.stride() if mask is not None else (0, 0, 0, 0)
    layout = _mask_layout(ms)
    ls = lse.stride() if lse is not None else (0, 0, 0)
    # A mask over more than one key block is summarised first (splits keep their key ranges).
    blocks = None
    if mask is not None and not split and S > bn:
        # Every layer of a model passes the same mask: summarised once per Program run.
        storage = mask.storage
        key = ("mask_blocks", id(storage), mask.storage_offset(), mask.shape, mask.stride(), mask.dtype, bm, bn, causal)
        blocks = memoized(key, storage, lambda: mask_blocks(mask, bm, bn, causal))
    lists = (blocks.partial, blocks.counts, blocks.batch_stride, blocks.head_stride, blocks.blocks) \
        if blocks is not None else (out, out, 0, 0, 0)
    launch(_attn_fwd_kernel, (cdiv(L, bm), Z * H, n_split), q, k, v, mask if mask is not None else q, out,
           lse if lse is not None else out, part, ml, cnt, *lists,
           H, L, S, H // k.shape[1], H // v.shape[1], per, scale * LOG2E, scale * LOG2E, float(masked_lse),
           *q.stride(), *k.stride(), *v.stride(), *ms, *out.stride(), *ls,
           E=E, BLOCK_M=bm, BLOCK_N=bn, BLOCK_D=bd, MASK_KIND=kind, CAUSAL=causal, SPLIT=split,
           PREC="ieee" if q.dtype in (D.float32, D.float64) else "tf32",
           EV=EV, BLOCK_DV=bdv, STORE_LSE=lse is not None, ACC=tl_dtype(acc),
           FOLD_SCALE=fold, HEAVY_FIRST=bool(cfg["HEAVY_FIRST"]), BLOCKS=blocks is not None,
           RUN_MASK=0 if blocks is not None else kind, MASK_LAYOUT=layout,
           MASK_IN_PRODUCT=kind == 1 and layout == 2 and 0 < scale < math.inf,
           INT64=slice_needs_int64((q, 2), (k, 2), (v, 2), (out, 2), (mask, 2), (lse, 2)), num_warps=warps,
           num_stages=stages)
