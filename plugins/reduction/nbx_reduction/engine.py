"""The reduction engine every reduction op of this plugin goes through.

An op names the dims it reduces; :func:`plan` permutes the input to (outer kept dims, reduced
dims, inner kept dims) and views it as a 3-D ``(O, K, I)`` array without copying when the strides
allow (else it makes the permuted input contiguous). Then one of two kernels runs:

- the row kernel when the reduced elements are the closest in memory (or ``I == 1``): each program
  takes ``BLOCK_M`` rows of ``K`` elements and loops over them ``BLOCK_K`` at a time;
- the column kernel when the kept inner dims are the closest in memory: each program takes
  ``BLOCK_I`` neighbouring columns and walks down ``K``, reading coalesced row segments.

Both accumulate per lane across the loop and reduce the lanes once at the end, so a result depends
on the tiling only through rounding (the arg ops take the extreme of the lanes, then the smallest
index among the lanes holding it). For the loads in flight that a memory-bound loop needs, a step
of the loop may load several blocks before combining the first (``Tiles.unroll``; ptxas issues
them together only under a register cap, ``Tiles.regs``), and the loop may be software-pipelined
(``Tiles.stages``: the next steps' loads go to shared memory while one step combines); the blocks
combine in order either way. When the kept positions make too few programs for the machine, K is
split too, in the same launch: each program stores a partial result, takes a ticket from its
output tile's counter (:mod:`nbx_core.runtime.kernels.tickets`), and the program that takes the tile's
last ticket reduces the tile's partials (in a fixed order, so the result does not depend on which
program finished last) and resets the counter for the next launch.

The op is a set of constexpr codes: ``OP`` (how elements combine), ``PRE`` (a transform of each
element: abs, square, power, nonzero) and ``POST`` (a transform of the result: mean, sqrt, power,
variance, logsumexp; a mean over a power-of-two count multiplies by the exact reciprocal). Half
types accumulate in float32.
"""

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

# nbx_core.runtime.launch picks the backend, which must happen before Triton is first imported.
from nbx_core.runtime.launch import cdiv, next_pow2, prepare

# isort: split
import triton
import triton.language as tl

from nbx_core import dtypes as D
from nbx_core.ops import copy as C
from nbx_core.ops import views as V
from nbx_core.runtime.kernels.copy import cast_to
from nbx_core.runtime.kernels.indexing import needs_int64
from nbx_core.runtime.kernels.tickets import last_to_arrive, tickets
from nbx_core.runtime.plans import PlanCache, geometry
from nbx_core.runtime.pointwise import tl_dtype
from nbx_core.runtime.tuning import Key, Tunable, bucket, frozen
from nbx_core.shape import contiguous_strides
from nbx_core.tensor import NBXTensor, empty_tensor

# OP codes.
SUM, PROD, MAX, MIN, ARGMAX, ARGMIN, VAR, LSE = range(8)
# PRE codes: the element transform before combining.
P_NONE, P_ABS, P_SQUARE, P_POW, P_NONZERO = range(5)
# POST codes: the result transform after combining (Q_SCALE multiplies by p: a mean over a
# power-of-two count, which the engine turns into a multiply by its exact reciprocal).
Q_NONE, Q_SQRT, Q_ROOT, Q_MEAN, Q_VAR, Q_STD, Q_LSE, Q_SCALE = range(8)

# On the interpreter each program costs Python time: few, large programs; the loop over K still
# runs (and is tested) for rows longer than this.
_CPU_BLOCK = 1024
# The interpreter's rule splits K into slices of this many elements (its SLICE), so that the split
# path is tested; the GPU's rule sets no SLICE: a launch of fewer programs than the configuration's
# PROGRAMS splits K to reach about that many (each slice at least SPLIT_BLOCKS blocks of BLOCK_K
# long). Slices are whole loop steps.
_CPU_SPLIT = 2 * _CPU_BLOCK


@triton.jit
def _max_combine(a, b):
    # NaN wins, as in torch (ignored for integers, which have none).
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def _min_combine(a, b):
    return tl.minimum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def mul_combine(a, b):
    return a * b


@triton.jit
def _element(raw, p, SRC: tl.constexpr, ACC: tl.constexpr, PRE: tl.constexpr):
    """One loaded element as the accumulator sees it: cast like torch's dtype=, then PRE."""
    x = cast_to(raw, SRC)
    if PRE == 4:
        if SRC == tl.float16 or SRC == tl.bfloat16:
            x = x.to(tl.float32)
        return (x != 0).to(ACC)
    x = cast_to(x, ACC)
    if PRE == 1:
        x = tl.abs(x)
    elif PRE == 2:
        x = x * x
    elif PRE == 3:
        x = tl.exp(p * tl.log(tl.abs(x))).to(ACC)
    return x


@triton.jit
def _load(ptr, m, EVEN: tl.constexpr):
    # EVEN: the tiles divide the array, so every lane is in bounds and the mask costs nothing.
    if EVEN:
        x = tl.load(ptr)
    else:
        x = tl.load(ptr, mask=m)
    return x


@triton.jit
def _masked(x, m, fill, EVEN: tl.constexpr):
    if EVEN:
        y = x
    else:
        y = tl.where(m, x, fill)
    return y


@triton.jit
def _fold(acc, at, x, m, k0, OP: tl.constexpr, IDENT: tl.constexpr, EVEN: tl.constexpr):
    """Combine the block ``x`` (masked by ``m``, starting at ``k0``) into the lanes ``acc``; the arg
    ops' lanes keep in ``at`` the start of the block where they last took a value."""
    if OP == 0 or OP == 6:
        acc += _masked(x, m, 0, EVEN)
    elif OP == 1:
        acc *= _masked(x, m, 1, EVEN)
    elif OP == 2 or OP == 7:
        acc = tl.maximum(acc, _masked(x, m, IDENT, EVEN), propagate_nan=tl.PropagateNan.ALL)
    elif OP == 3:
        acc = tl.minimum(acc, _masked(x, m, IDENT, EVEN), propagate_nan=tl.PropagateNan.ALL)
    else:
        # One comparison and one select per element: a lane sees k increasing, so the strict
        # comparison keeps its first max (min). NaN compares false and is left to the NaN-aware
        # running extreme: a lane's index only matters when the result is not NaN.
        x = _masked(x, m, IDENT, EVEN)
        if OP == 4:
            take = x > acc
            acc = tl.maximum(acc, x, propagate_nan=tl.PropagateNan.ALL)
        else:
            take = x < acc
            acc = tl.minimum(acc, x, propagate_nan=tl.PropagateNan.ALL)
        at = tl.where(take, k0, at)
    return acc, at


@triton.jit
def _post(r, count, p, corr, POST: tl.constexpr, ACC: tl.constexpr):
    """The POST transform of a finished reduction ``r``."""
    if POST == 1:
        r = tl.sqrt(r)
    elif POST == 2:
        r = tl.exp(tl.log(r) / p).to(ACC)
    elif POST == 3:
        r = r / count
    elif POST == 4 or POST == 5:
        r = (r / tl.maximum(count - corr, 0.0)).to(ACC)
        if POST == 5:
            r = tl.sqrt(r)
    elif POST == 7:
        r = (r * p).to(ACC)
    return r


@triton.jit
def _lanes(x_ptr, base, ok, kr, k_lo, K, sk, p, OP: tl.constexpr, PRE: tl.constexpr, SRC: tl.constexpr,
           ACC: tl.constexpr, IDENT: tl.constexpr, S0: tl.constexpr, S1: tl.constexpr, BLOCK_K: tl.constexpr,
           UNROLL: tl.constexpr, STAGES: tl.constexpr, INT64: tl.constexpr, EVEN: tl.constexpr):
    """The loop over ``k_lo <= k < K``: each lane of the ``[S0, S1]`` tile combines the elements it
    sees; returns the lanes and (for the arg ops) the start of the block where each last took a value."""
    acc = tl.full([S0, S1], IDENT, ACC)
    # The arg ops' lanes keep the start of the block where they last took a value; the element's
    # index is that plus the lane id. A lane that takes none keeps k_lo.
    if INT64:
        at = tl.full([S0, S1], 0, tl.int64) + k_lo
    else:
        at = tl.full([S0, S1], 0, tl.int32) + k_lo
    for k0 in tl.range(k_lo, K, BLOCK_K * UNROLL, num_stages=STAGES if STAGES > 0 else None):
        raws = ()
        for u in tl.static_range(UNROLL):
            k = kr + (k0 + u * BLOCK_K)
            raws = raws + (_load(x_ptr + base + k * sk, ok & (k < K), EVEN),)
        for u in tl.static_range(UNROLL):
            k = kr + (k0 + u * BLOCK_K)
            x = _element(raws[u], p, SRC, ACC, PRE)
            acc, at = _fold(acc, at, x, ok & (k < K), k0 + u * BLOCK_K, OP, IDENT, EVEN)
    return acc, at


@triton.jit
def _arg_first(v, ix, none, OP: tl.constexpr, AXIS: tl.constexpr):
    """The arg ops' extreme of the lanes ``v`` along ``AXIS`` (NaN wins) and the smallest of the
    indices ``ix`` among the lanes equal to it (``none`` where no lane is: a NaN extreme), in two
    plain reductions."""
    if OP == 4:
        r = tl.reduce(v, AXIS, _max_combine)
    else:
        r = tl.reduce(v, AXIS, _min_combine)
    ri = tl.min(tl.where(v == tl.expand_dims(r, AXIS), ix, none), axis=AXIS)
    return r, ri


@triton.jit
def _reduce(x_ptr, base, ok, kr, k_lo, K, count, sk, p, corr,
            OP: tl.constexpr, PRE: tl.constexpr, POST: tl.constexpr, SRC: tl.constexpr, ACC: tl.constexpr,
            IDENT: tl.constexpr, AXIS: tl.constexpr, S0: tl.constexpr, S1: tl.constexpr,
            BLOCK_K: tl.constexpr, UNROLL: tl.constexpr, STAGES: tl.constexpr, INT64: tl.constexpr,
            EVEN: tl.constexpr):
    """Reduce the elements ``k_lo <= k < K`` at ``base + k * sk`` of each kept position along ``AXIS``.

    ``count`` is what mean and variance divide by (the whole reduction's size when the caller split it).

    ``base``/``ok`` hold the kept positions' offsets and mask; ``kr`` the lane ids along the
    reduced axis, shaped to broadcast against them into an ``[S0, S1]`` tile; ``INT64`` whether
    indices need int64 (the arg ops' lanes otherwise keep int32 ones); ``EVEN`` whether no lane
    is ever out of bounds (every slice then holds whole steps of ``UNROLL`` blocks). Each step of
    the loop loads ``UNROLL`` blocks of ``BLOCK_K`` before combining the first, so that many loads
    are in flight, and combines them in order (the result is that of one block a step);
    ``STAGES`` is the loop's ``num_stages`` (loads of the next steps go to shared memory while this
    one combines; 0 keeps the kernel's default, 1 turns it off). Returns the reduced values and (for
    the arg ops) their indices.
    """
    acc, at = _lanes(x_ptr, base, ok, kr, k_lo, K, sk, p, OP, PRE, SRC, ACC, IDENT, S0, S1, BLOCK_K, UNROLL,
                     STAGES, INT64, EVEN)
    if OP == 0:
        r = tl.sum(acc, axis=AXIS)
    elif OP == 1:
        r = tl.reduce(acc, AXIS, mul_combine)
    elif OP == 2:
        r = tl.reduce(acc, AXIS, _max_combine)
    elif OP == 3:
        r = tl.reduce(acc, AXIS, _min_combine)
    elif OP == 4 or OP == 5:
        # The extreme and the first index holding it. Lanes that took nothing hold IDENT at their
        # first element, so an all-IDENT row answers k_lo.
        r, ri = _arg_first(acc, at + kr, K, OP, AXIS)
        if ACC.is_floating():
            # A NaN result (rare): its index is the first NaN's, found by a second pass.
            nan = r != r
            if tl.max(nan.to(tl.int32), axis=0) > 0:
                first = tl.zeros_like(at) + K
                for k0 in range(k_lo, K, BLOCK_K):
                    k = kr + k0
                    m = ok & (k < K)
                    x = _element(_load(x_ptr + base + k * sk, m, EVEN), p, SRC, ACC, PRE)
                    first = tl.minimum(first, tl.where(m & (x != x), k, K))
                ri = tl.where(nan, tl.min(first, axis=AXIS), ri)
    elif OP == 6:
        # Variance: a second pass over the row around its mean (exact for float32 and float64).
        mean = tl.sum(acc, axis=AXIS) / count
        mean_b = tl.expand_dims(mean, AXIS)
        sq = tl.full([S0, S1], 0, ACC)
        for k0 in range(k_lo, K, BLOCK_K):
            k = kr + k0
            m = ok & (k < K)
            d = _element(_load(x_ptr + base + k * sk, m, EVEN), p, SRC, ACC, PRE) - mean_b
            sq += _masked(d * d, m, 0, EVEN)
        r = tl.sum(sq, axis=AXIS)
    else:
        # logsumexp as torch computes it: an infinite max is replaced by 0 before the shift.
        mx = tl.reduce(acc, AXIS, _max_combine)
        mx = tl.where(tl.abs(mx) == -IDENT, 0.0, mx).to(ACC)
        mx_b = tl.expand_dims(mx, AXIS)
        s = tl.full([S0, S1], 0, ACC)
        for k0 in range(k_lo, K, BLOCK_K):
            k = kr + k0
            m = ok & (k < K)
            x = _element(_load(x_ptr + base + k * sk, m, EVEN), p, SRC, ACC, PRE)
            s += _masked(tl.exp(x - mx_b), m, 0, EVEN)
        r = tl.log(tl.sum(s, axis=AXIS)) + mx
    r = _post(r, count, p, corr, POST, ACC)
    if OP == 4 or OP == 5:
        out_i = ri.to(tl.int64)
    else:
        out_i = r
    return r, out_i


@triton.jit
def _last(part_ptr, pidx_ptr, cnt_ptr, tile, off, v, ix, ok, splits, ARG: tl.constexpr):
    """Store this program's partial of its tile; whether it is the last of the tile's ``splits``
    programs to do so."""
    tl.store(part_ptr + off, v, mask=ok)
    if ARG:
        tl.store(pidx_ptr + off, ix, mask=ok)
    return last_to_arrive(cnt_ptr, tile, splits)


@triton.jit
def _store(out_ptr, idx_ptr, off, v, ix, ok, STORE: tl.constexpr):
    # STORE: 1 values, 2 indices, 3 both.
    if STORE % 2 == 1:
        tl.store(out_ptr + off, cast_to(v, out_ptr.dtype.element_ty), mask=ok)
    if STORE >= 2:
        tl.store(idx_ptr + off, ix, mask=ok)


@triton.jit
def _split_done(out_ptr, idx_ptr, part_ptr, pidx_ptr, cnt_ptr, tile, split, splits, kept, pos, ok, sr, v, ix,
                count, p, corr, OP: tl.constexpr, POST: tl.constexpr, ACC: tl.constexpr, IDENT: tl.constexpr,
                STORE: tl.constexpr, AXIS: tl.constexpr, S0: tl.constexpr, S1: tl.constexpr,
                BLOCK_S: tl.constexpr, INT64: tl.constexpr):
    """Store this program's partial of the kept positions ``pos`` (partials laid out (split, kept));
    the tile's last program reduces the tile's partials in split order, applies POST and stores.
    ``AXIS``, ``S0``, ``S1``: the calling kernel's orientation, splits along ``AXIS``."""
    if _last(part_ptr, pidx_ptr, cnt_ptr, tile, split * kept + pos, v, ix, ok, splits, OP == 4 or OP == 5):
        if AXIS == 1:
            fv, fs = _reduce(part_ptr, pos[:, None], ok[:, None], sr[None, :], 0, splits, count, kept, p, corr,
                             OP, 0, POST, ACC, ACC, IDENT, 1, S0, S1, BLOCK_S, 1, 1, INT64, False)
        else:
            fv, fs = _reduce(part_ptr, pos[None, :], ok[None, :], sr[:, None], 0, splits, count, kept, p, corr,
                             OP, 0, POST, ACC, ACC, IDENT, 0, S0, S1, BLOCK_S, 1, 1, INT64, False)
        if OP == 4 or OP == 5:
            # The first split holding the extreme holds its first index.
            fs = tl.load(pidx_ptr + fs * kept + pos, mask=ok)
        _store(out_ptr, idx_ptr, pos, fv, fs, ok, STORE)


@triton.jit
def _row_kernel(x_ptr, out_ptr, idx_ptr, part_ptr, pidx_ptr, cnt_ptr, M, K, I, so, sk, si, k_chunk, count,
                p: tl.float64, corr: tl.float64,
                OP: tl.constexpr, PRE: tl.constexpr, POST: tl.constexpr, SRC: tl.constexpr,
                ACC: tl.constexpr, IDENT: tl.constexpr, STORE: tl.constexpr, SPLIT: tl.constexpr,
                BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr, UNROLL: tl.constexpr, STAGES: tl.constexpr,
                BLOCK_S: tl.constexpr, INT64: tl.constexpr, EVEN: tl.constexpr):
    tile = tl.program_id(0)
    rows = tile * BLOCK_M + tl.arange(0, BLOCK_M)
    split = tl.program_id(1)
    kr = tl.arange(0, BLOCK_K)
    sr = tl.arange(0, BLOCK_S)
    if INT64:
        rows = rows.to(tl.int64)
        split = split.to(tl.int64)
        kr = kr.to(tl.int64)
        sr = sr.to(tl.int64)
    ok = rows < M
    base = (rows // I) * so + (rows % I) * si
    # Program (r, s) reduces [s * k_chunk, (s + 1) * k_chunk) of its rows.
    k_lo = split * k_chunk
    v, ix = _reduce(x_ptr, base[:, None], ok[:, None], kr[None, :], k_lo, tl.minimum(k_lo + k_chunk, K), count,
                    sk, p, corr, OP, PRE, 0 if SPLIT else POST, SRC, ACC,
                    IDENT, 1, BLOCK_M, BLOCK_K, BLOCK_K, UNROLL, STAGES, INT64, EVEN)
    if SPLIT:
        # Partials are laid out (split, row).
        _split_done(out_ptr, idx_ptr, part_ptr, pidx_ptr, cnt_ptr, tile, split, tl.num_programs(1), M, rows, ok,
                    sr, v, ix, count, p, corr, OP, POST, ACC, IDENT, STORE, 1, BLOCK_M, BLOCK_S, BLOCK_S, INT64)
    else:
        _store(out_ptr, idx_ptr, rows, v, ix, ok, STORE)


@triton.jit
def _col_kernel(x_ptr, out_ptr, idx_ptr, part_ptr, pidx_ptr, cnt_ptr, K, I, so, sk, si, k_chunk, count,
                p: tl.float64, corr: tl.float64,
                OP: tl.constexpr, PRE: tl.constexpr, POST: tl.constexpr, SRC: tl.constexpr,
                ACC: tl.constexpr, IDENT: tl.constexpr, STORE: tl.constexpr, SPLIT: tl.constexpr,
                BLOCK_K: tl.constexpr, BLOCK_I: tl.constexpr, UNROLL: tl.constexpr, STAGES: tl.constexpr,
                BLOCK_S: tl.constexpr, INT64: tl.constexpr, EVEN: tl.constexpr):
    o = tl.program_id(0)
    c = tl.program_id(1)
    cols = c * BLOCK_I + tl.arange(0, BLOCK_I)
    split = tl.program_id(2)
    kr = tl.arange(0, BLOCK_K)
    sr = tl.arange(0, BLOCK_S)
    outer = tl.num_programs(0)
    if INT64:
        o = o.to(tl.int64)
        outer = outer.to(tl.int64)
        cols = cols.to(tl.int64)
        split = split.to(tl.int64)
        kr = kr.to(tl.int64)
        sr = sr.to(tl.int64)
    ok = cols < I
    base = o * so + cols * si
    # Program (o, c, s) reduces rows [s * k_chunk, (s + 1) * k_chunk).
    k_lo = split * k_chunk
    v, ix = _reduce(x_ptr, base[None, :], ok[None, :], kr[:, None], k_lo, tl.minimum(k_lo + k_chunk, K), count,
                    sk, p, corr, OP, PRE, 0 if SPLIT else POST, SRC, ACC,
                    IDENT, 0, BLOCK_K, BLOCK_I, BLOCK_K, UNROLL, STAGES, INT64, EVEN)
    out = o * I + cols
    if SPLIT:
        # Partials are laid out (split, outer, column), one tile per (o, c).
        _split_done(out_ptr, idx_ptr, part_ptr, pidx_ptr, cnt_ptr, o * tl.num_programs(1) + c, split,
                    tl.num_programs(2), outer * I, out, ok, sr, v, ix, count, p, corr, OP, POST, ACC, IDENT, STORE,
                    0, BLOCK_S, BLOCK_I, BLOCK_S, INT64)
    else:
        _store(out_ptr, idx_ptr, out, v, ix, ok, STORE)


@dataclass(frozen=True)
class Plan:
    """The input seen as ``(O, K, I)`` with element strides ``(so, sk, si)``."""

    x: NBXTensor
    O: int
    K: int
    I: int
    so: int
    sk: int
    si: int
    order: tuple[int, ...] | None = None  # the permutation made contiguous first, if any


def _merge(shape: list[int], strides: list[int]) -> tuple[int, int] | None:
    """(size, stride) of dims walked as one, or None when they are not evenly strided."""
    dims = [(s, st) for s, st in zip(shape, strides, strict=True) if s != 1]
    n = math.prod(shape)
    if not dims or n == 0:
        return n, (dims[-1][1] if dims else 0)
    for (_, st0), (s1, st1) in zip(dims, dims[1:], strict=False):
        if st0 != s1 * st1:
            return None
    return n, dims[-1][1]


def plan(x: NBXTensor, dims: tuple[int, ...]) -> Plan:
    """View ``x`` as (outer kept dims, reduced dims, inner kept dims), in place where its strides
    allow."""
    if x.ndim == 0:
        return Plan(x, 1, 1, 1, 0, 0, 0)
    red = sorted(dims)
    last = red[-1] if red else x.ndim
    kept = [d for d in range(x.ndim) if d not in red]
    before = sum(d < last for d in kept)
    # The kept dims split into outer and inner ones anywhere (their logical order is the result's
    # either way), first around the reduced dims: a channels-last (N, C, H, W) reduced over H and W
    # is (N, H*W, C) in place.
    for cut in [before] + [c for c in range(len(kept) + 1) if c != before]:
        groups = [_merge([x.shape[d] for d in g], [x.stride(d) for d in g]) for g in (kept[:cut], red, kept[cut:])]
        if all(g is not None for g in groups):
            (O, so), (K, sk), (I, si) = groups  # type: ignore[misc]
            return Plan(x, O, K, I, so, sk, si, None)
    # Else the permuted input is made contiguous, (outer kept dims, reduced dims, inner kept dims).
    order = (*kept[:before], *red, *kept[before:])
    t = C.contiguous(V.permute(x, order))
    K = math.prod(x.shape[d] for d in red)
    I = math.prod(x.shape[d] for d in kept[before:])
    O = math.prod(x.shape[d] for d in kept[:before])
    return Plan(t, O, K, I, K * I, I, 1, order)


def identity(op: int, acc: D.DType) -> float | int:
    """The value masked lanes start from: the op's identity in the accumulator's type."""
    if op in (SUM, VAR):
        return 0
    if op == PROD:
        return 1
    if acc.is_floating_point:
        return -math.inf if op in (MAX, LSE, ARGMAX) else math.inf
    bits = acc.itemsize * 8
    return -(2 ** (bits - 1)) if op in (MAX, LSE, ARGMAX) else 2 ** (bits - 1) - 1


def acc_dtype(dtype: D.DType, op: int) -> D.DType:
    """The accumulator type: float32 for half types, int64 for integer sums and products."""
    if dtype.is_floating_point:
        return D.compute_dtype(dtype)
    if op in (SUM, PROD):
        return D.int64
    return D.int64 if dtype is D.int64 else D.int32


def reduce(x: NBXTensor, dims: tuple[int, ...], keepdim: bool, op: int, out_dtype: D.DType, *,
           src: D.DType | None = None, acc: D.DType | None = None, pre: int = P_NONE, post: int = Q_NONE,
           p: float = 0.0, corr: float = 0.0, store: int = 1, ident: float | int | None = None,
           count: int | None = None, config: Mapping[str, int] | None = None) -> Any:
    """Reduce ``x`` over ``dims`` (already wrapped; empty means a size-1 reduction of each element).

    ``src`` is the type elements are first cast to (torch's ``dtype=``), ``acc`` the accumulator
    type, ``store`` 1 for values, 2 for int64 indices, 3 for both (a tuple); ``ident`` replaces the
    op's identity (what an empty reduction gives); ``count`` what mean and variance divide by
    (default: the reduced size); ``config`` replaces the lookup of :data:`ROWS` or :data:`COLUMNS`,
    whichever kernel runs.
    """
    key = (geometry(x), tuple(dims), keepdim, op, out_dtype, src, acc, pre, post, p, corr, store, ident, count,
           frozen(config))
    st = _steps.get(key, lambda: _Steps(x, dims, keepdim, op, out_dtype, src, acc, pre, post, p, corr, store,
                                         ident, count, config))
    device = x.device
    outs = []
    if store % 2 == 1:
        outs.append(empty_tensor(st.shape, out_dtype, device))
    if store >= 2:
        outs.append(empty_tensor(st.shape, D.int64, device))
    values, indices = (outs[0], outs[-1]) if len(outs) == 2 else (outs[0], outs[0])
    if st.run is None:
        return tuple(outs) if store == 3 else outs[0]
    src_x = x if st.order is None else C.contiguous(V.permute(x, st.order))
    if st.partials:
        part = empty_tensor(st.partials, st.acc, device)
        pidx = empty_tensor(st.partials, D.int64, device) if op in (ARGMAX, ARGMIN) else part
        st.run(src_x, values, indices, part, pidx, tickets(device, st.tiles))
    else:
        st.run(src_x, values, indices, values, values, values)
    return tuple(outs) if store == 3 else outs[0]


class _Steps:
    """What a reduction derives from its input's geometry and its parameters (kept per key):
    the result's shape, the copy ``plan`` needs if any, the partials' shape and the output tiles
    when K is split, and the prepared launch (its varying arguments: the input, the values, the
    indices, the partial values, the partial indices, the ticket counters)."""

    def __init__(self, x: NBXTensor, dims: tuple[int, ...], keepdim: bool, op: int, out_dtype: D.DType,
                 src: D.DType | None, acc: D.DType | None, pre: int, post: int, p: float, corr: float,
                 store: int, ident: float | int | None, count: int | None,
                 config: Mapping[str, int] | None) -> None:
        src = src or x.dtype
        self.acc = acc = acc or acc_dtype(src, op)
        kept = [d for d in range(x.ndim) if d not in dims]
        if keepdim:
            self.shape = tuple(1 if d in dims else s for d, s in enumerate(x.shape))
        else:
            self.shape = tuple(x.shape[d] for d in kept)
        self.run: Any = None
        self.partials: tuple[int, int] | None = None
        self.tiles = 0
        self.order: tuple[int, ...] | None = None
        if math.prod(self.shape) == 0:
            return
        pl = plan(x, dims)
        self.order = pl.order
        ident = identity(op, acc) if ident is None else ident
        count = pl.K if count is None else count
        use_col = pl.I > 1 and abs(pl.si) <= abs(pl.sk)
        if use_col:
            cfg = COLUMNS.choose(config, op, pl.x.dtype.itemsize, pl.I, pl.K)
            bi, bk, warps, unroll, stages, regs = (cfg[name] for name in _TILE_PARAMS)
            programs = pl.O * cdiv(pl.I, bi)
            even = pl.I % bi == 0
        else:
            rows = pl.O * pl.I
            cfg = ROWS.choose(config, op, pl.x.dtype.itemsize, rows, pl.K)
            bm, bk, warps, unroll, stages, regs = (cfg[name] for name in _TILE_PARAMS)
            programs = cdiv(rows, bm)
            even = rows % bm == 0
        splits = _splits(op, programs, pl.K, bk, cfg)
        # A slice of K is whole steps of `unroll` blocks, and a step no longer than the slice.
        unroll = max(min(unroll, cdiv(cdiv(pl.K, splits), bk)), 1)
        step = bk * unroll
        chunk = cdiv(cdiv(pl.K, splits), step) * step
        splits = cdiv(pl.K, chunk) if pl.K else 1
        if splits > 1:
            # Too few programs for the machine: each reduces a slice of K into a partial, and the
            # last of a tile's programs to finish reduces the tile's partials (and applies POST).
            self.partials = (splits, pl.O * pl.I)
            self.tiles = programs
            reach = _Reach(self.partials)
        else:
            reach = _Reach(self.shape)
        # The final reduction of the partials uses a tile no larger than the main one.
        bs = min(next_pow2(splits), bk) if splits > 1 else 1
        if post == Q_MEAN and pre != P_POW and count > 0 and count & (count - 1) == 0:
            # The reciprocal of a power of two is exact: one multiply gives the quotient, rounded
            # once, where a division costs several instructions (and is approximate on a GPU).
            post, p = Q_SCALE, 1.0 / count
        meta = dict(OP=op, PRE=pre, POST=post, SRC=tl_dtype(src), ACC=tl_dtype(acc), IDENT=ident, STORE=store,
                    SPLIT=splits > 1, BLOCK_S=bs,
                    INT64=needs_int64(splits * pl.O * pl.K * pl.I + step, pl.x, reach),
                    EVEN=even and pl.K % step == 0, UNROLL=unroll, STAGES=stages)
        if regs:
            meta["maxnreg"] = regs
        if use_col:
            self.run = prepare(_col_kernel, (pl.O, cdiv(pl.I, bi), splits),
                               (None,) * 6 + (pl.K, pl.I, pl.so, pl.sk, pl.si, chunk, count, float(p), float(corr)),
                               range(6), BLOCK_K=bk, BLOCK_I=bi, num_warps=warps, **meta)
        else:
            self.run = prepare(_row_kernel, (programs, splits),
                               (None,) * 6 + (rows, pl.K, pl.I, pl.so, pl.sk, pl.si, chunk, count, float(p),
                                              float(corr)),
                               range(6), BLOCK_M=bm, BLOCK_K=bk, num_warps=warps, **meta)


class _Reach:
    """A contiguous result not allocated yet, for needs_int64."""

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shape = shape

    def stride(self) -> tuple[int, ...]:
        return contiguous_strides(self.shape)


_steps: PlanCache[_Steps] = PlanCache()

def _splits(op: int, programs: int, K: int, bk: int, cfg: Mapping[str, int]) -> int:
    """How many slices of K to reduce apart (variance and logsumexp never split)."""
    if op in (VAR, LSE):
        return 1
    if cfg.get("SLICE"):
        return max(cdiv(K, cfg["SLICE"]), 1)
    if programs >= cfg["PROGRAMS"]:
        return 1
    return max(min(cdiv(cfg["PROGRAMS"], programs), cdiv(K, cfg["SPLIT_BLOCKS"] * bk)), 1)


class Tiles(NamedTuple):
    """A kernel's launch shape: ``block`` kept positions (rows of the row kernel, columns of the
    column kernel) by ``block_k`` reduced elements per load, ``warps``; ``unroll`` loads a step of
    the loop over K; ``stages`` sets that loop's software pipelining (0: the kernel's default of
    three stages, 1: none); ``regs`` caps the registers of a thread (ptxas's ``.maxnreg``; 0 leaves
    the choice to ptxas, which then issues only some of a step's loads before it combines the
    first, to keep under a register count of its own)."""

    block: int
    block_k: int
    warps: int
    unroll: int = 1
    stages: int = 0
    regs: int = 0


def row_tiles(rows: int, K: int, op: int, size: int, gpu: bool) -> Tiles:
    """The row kernel's tiles for ``rows`` rows of ``K`` elements of ``size`` bytes reduced by ``op``,
    on a ``gpu`` or the interpreter."""
    if not gpu:
        bk = min(next_pow2(K), _CPU_BLOCK)
        return Tiles(min(next_pow2(rows), max(_CPU_BLOCK // bk, 1)), bk, 1)
    if op in (ARGMAX, ARGMIN) and 1024 <= K <= 4096:
        # Rows of up to 4096: a step loads four blocks (the whole row) at once under a cap of 64
        # registers, ahead of one block a step, of the row as one block with a loop-free finish and
        # of two rows at 8 warps. Longer rows gain nothing from it
        # (benchmarks/results/sweeps/h200-reduction-linalg-tma.json).
        return Tiles(1, 1024, 4, 4, 1, 64)
    if K >= 1024:
        # One row per program, 1024 elements and 4 warps a load: against wider loads of 8 warps the
        # arg ops' loop gains most, sum and amax are even (benchmarks/results/sweeps/h200-reduction.json).
        return Tiles(1, 1024, 4)
    # Short rows: several per program, to fill a tile of about 4096 elements.
    bk = next_pow2(K)
    bm = min(next_pow2(rows), max(4096 // bk, 1), 64)
    return Tiles(bm, bk, 8 if bm * bk >= 2048 else 4)


def col_tiles(I: int, K: int, op: int, size: int, gpu: bool) -> Tiles:
    """The column kernel's tiles for ``I`` columns walked down ``K`` rows of ``size``-byte elements,
    reduced by ``op``, on a ``gpu`` or the interpreter."""
    if not gpu:
        bi = min(next_pow2(I), _CPU_BLOCK)
        return Tiles(bi, min(next_pow2(K), max(_CPU_BLOCK // bi, 1)), 1)
    if op in (VAR, LSE):
        # K stays whole in one program: narrow tiles give the machine enough programs.
        return Tiles(min(next_pow2(I), 16), min(next_pow2(K), 128), 4)
    # 64 columns by up to 64 rows a load, 4 warps; K is split to fill the machine. 3 pipelined
    # stages (the next loads go to shared memory while a step combines) beat one load a step and
    # 128 x 64 tiles (benchmarks/results/sweeps/h200-reduction-conv-pointwise.json).
    bi = min(next_pow2(I), 64)
    if op in (ARGMAX, ARGMIN):
        # The arg ops keep an index per lane too: 64 x 32 blocks, two loads a step issued together
        # under a cap of 64 registers (uncapped, ptxas issues half a step's loads before combining);
        # faster than 3 stages.
        # Wider elements would spill under the cap: they are pipelined instead.
        bk = min(next_pow2(K), 32)
        if size <= 4:
            return Tiles(bi, bk, 4, 2, 1, 64)
        return Tiles(bi, bk, 4, 1, 1 + min((32 << 10) // (bi * bk * size), 2))
    bk = min(next_pow2(K), 64)
    return Tiles(bi, bk, 4, 1, 1 + min((32 << 10) // (bi * bk * size), 2))


_TILE_PARAMS = ("BLOCK", "BLOCK_K", "num_warps", "UNROLL", "STAGES", "MAXNREG")
_OP_NAMES = ("sum", "prod", "max", "min", "argmax", "argmin", "var", "lse")
_SPLIT = {"PROGRAMS": 1056, "SPLIT_BLOCKS": 4}
"""A GPU launch of fewer programs than PROGRAMS splits K (1056: 8 per SM of an H200)."""


def _tunable(name: str, tiles: Any, what: str) -> Tunable:
    return Tunable(
        "reduction", name,
        {"BLOCK": "pow2", "BLOCK_K": "pow2", "num_warps": "pow2", "UNROLL": "count", "STAGES": "count0",
         "MAXNREG": "count0", "PROGRAMS": "count", "SPLIT_BLOCKS": "count", "SLICE": "count0"},
        key=lambda op, size, n, K: Key({"op": _OP_NAMES[op], "itemsize": size, what: bucket(n), "K": bucket(K)}),
        rule=lambda op, size, n, K: {**dict(zip(_TILE_PARAMS, tiles(n, K, op, size, True), strict=True)), **_SPLIT},
        interpreter=lambda op, size, n, K: {**dict(zip(_TILE_PARAMS, tiles(n, K, op, size, False), strict=True)),
                                            **_SPLIT, "SLICE": _CPU_SPLIT},
        tables=Path(__file__).with_name("configs"), optional=("SLICE",))


ROWS = _tunable("rows", row_tiles, "R")
"""The row kernel's launch (the fields of :class:`Tiles`: BLOCK rows by BLOCK_K elements a load,
warps, UNROLL, STAGES, MAXNREG), and when K splits: into slices of SLICE elements when it is set
(the interpreter's rule sets it), else when a launch has fewer programs than PROGRAMS (into slices
of at least SPLIT_BLOCKS loads). Arguments: the op code, the itemsize, the rows and K."""
COLUMNS = _tunable("columns", col_tiles, "I")
"""The column kernel's launch (BLOCK columns), as :data:`ROWS`; arguments: the op code, the
itemsize, the kept columns and K."""
