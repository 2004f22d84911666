"""``topk`` of rows that fit in registers: one program per row finds the k-th key by bisection.

A program loads its row once as 32-bit order keys (``sortkeys.key32``; for ``largest`` the keys are
flipped, so the wanted elements are always the ``k`` smallest keys) and bisects for a threshold
``T`` with ``count(key < T) <= k <= count(key <= T)``: each step is one count over the row, at most
32 steps for float32, 16 for half types, fewer for small integers, and a step that counts exactly
``k`` keys ends it. Every key below ``T`` is taken and, of the keys equal to ``T``, the first
``k - count(key < T)`` by position (among equal values the earlier position comes first), which a
bisection over positions finds when there are more.

The ``k`` taken positions go to the index output, which serves as scratch, at slots from an
atomic counter per row (in a small int32 scratch the program zeroes itself), are read back after
a barrier, sorted in registers by packed key (key << 32 | position) and written as positions and
values: the result does not depend on the order the slots were handed out in.

Lanes past the row's end hold the largest key with positions ``>= n``: in (key, position) order
they come after every element, so they are never taken, even when the row holds that key too.
"""

from collections.abc import Mapping
from pathlib import Path

# nbx_core.runtime.launch picks the backend, which must happen before Triton is first imported.
from nbx_core.runtime.launch import launch, next_pow2

# isort: split
import triton
import triton.language as tl

from nbx_core import dtypes as D
from nbx_core.runtime.tuning import Key, Tunable, bucket
from nbx_core.tensor import NBXTensor, empty_tensor

from .sortkeys import LOW, PAD, key32

ROW_MAX = 32768
"""Longest row (rounded up to a power of two) held in registers; longer rows take the chunk path."""
K_MAX = 4096
"""Largest ``k`` (rounded up to a power of two) sorted in registers at the end."""
TOPK = Tunable(
    "index", "topk", {"num_warps": "pow2"},
    key=lambda size, n: Key({"itemsize": size, "N": bucket(n)}),
    # At least 8 keys per thread: a short row gets fewer warps rather than idle, replicated ones.
    rule=lambda size, n: {"num_warps": max(1, min(32, next_pow2(n) // 256))},
    interpreter=lambda size, n: {"num_warps": 1}, tables=Path(__file__).with_name("configs"))
"""Warps of a row program of the in-register select (configs/h200.json's source measured 8 to 32
on long rows). Arguments: the itemsize and the row length."""


@triton.jit(do_not_specialize=["x_step"])
def _select_kernel(val_ptr, idx_ptr, count_ptr, x_ptr, n, k, x_row, x_step, DESC: tl.constexpr, E: tl.constexpr,
                   TW: tl.constexpr, KP: tl.constexpr):
    # The row is held as [E, TW] with position e * TW + t: TW is the program's thread count, so a
    # thread holds a whole column, and sums over axis 0 stay in the thread. x_step is never
    # specialized to 1: a vectorized load would spread columns over several threads and cost a
    # layout conversion; loads across a row are coalesced all the same.
    row = tl.program_id(0).to(tl.int64)
    pos = tl.arange(0, E)[:, None] * TW + tl.arange(0, TW)[None, :]
    m = pos < n
    x = tl.load(x_ptr + row * x_row + pos.to(tl.int64) * x_step, mask=m)
    key = tl.where(m, key32(x, DESC), 2147483647)
    # Bisection over [min key, max real key] keeping count(key <= hi) >= k; the bounds are int64 so
    # that their midpoint cannot overflow, each probe compares in int32. A probe that counts exactly
    # k ends it early: the k smallest are then the keys <= mid, all of them.
    lo = tl.min(tl.min(key, axis=0), axis=0).to(tl.int64)
    hi = tl.max(tl.max(tl.where(m, key, -2147483648), axis=0), axis=0).to(tl.int64)
    while lo < hi:
        mid = lo + ((hi - lo) >> 1)
        cnt = tl.sum(tl.sum((key <= mid.to(tl.int32)).to(tl.int32), axis=0), axis=0)
        hi = tl.where(cnt >= k, mid, hi)
        lo = tl.where(cnt >= k, tl.where(cnt == k, mid, lo), mid + 1)
    t_key = lo.to(tl.int32)
    need = k - tl.sum(tl.sum((key < t_key).to(tl.int32), axis=0), axis=0)
    # Of the keys equal to T the first `need` by position: a second bisection finds the position
    # bound P, skipped (P = n - 1) when all of them are needed, as without ties. Registers hold the
    # keys only: `pos <= P` is tested as `thread <= P - e * TW`, so no [E, TW] position tensor (or
    # comparison result) stays live, which would double the registers per key and spill.
    tid = tl.arange(0, TW)[None, :]
    e_base = tl.arange(0, E)[:, None] * TW
    n_eq = tl.sum(tl.sum((key == t_key).to(tl.int32), axis=0), axis=0)
    p_lo = tl.where(n_eq == need, n - 1, 0)
    p_hi = n - 1
    while p_lo < p_hi:
        p_mid = (p_lo + p_hi) >> 1
        cnt = tl.sum(tl.sum(((key == t_key) & (tid <= p_mid - e_base)).to(tl.int32), axis=0), axis=0)
        p_hi = tl.where(cnt >= need, p_mid, p_hi)
        p_lo = tl.where(cnt >= need, tl.where(cnt == need, p_mid, p_lo), p_mid + 1)
    # Exactly k taken, each given a slot by an atomic increment of the row's counter (the slot order
    # varies between runs, which does not matter: the k are sorted next). The row is read again, a
    # TW slice at a time from L2: flags, slots and 64-bit addresses for all of [E, TW] at once
    # would not fit in registers beside the keys.
    count = count_ptr + row
    tl.store(count, 0)
    tl.debug_barrier()
    out = idx_ptr + row * k
    t_pos = tl.arange(0, TW)
    for e in range(0, E):
        p = e * TW + t_pos
        kp = tl.where(p < n, key32(tl.load(x_ptr + row * x_row + p.to(tl.int64) * x_step, mask=p < n), DESC),
                      2147483647)
        take = (p < n) & ((kp < t_key) | ((kp == t_key) & (p <= p_lo)))
        slot = tl.atomic_add(count + tl.zeros([TW], tl.int32), 1, mask=take, sem="relaxed", scope="cta")
        tl.store(out + slot, p.to(tl.int64), mask=take)
    # The barrier makes every thread's slots visible to the whole program before they are read back.
    tl.debug_barrier()
    t = tl.arange(0, KP)
    mt = t < k
    p = tl.load(out + t, mask=mt, other=0)
    v = tl.load(x_ptr + row * x_row + p * x_step, mask=mt)
    p = tl.sort(tl.where(mt, (key32(v, DESC).to(tl.int64) << 32) | p, PAD), 0) & LOW
    # Threads holding copies of a slot all read it: none may overwrite it before all have.
    tl.debug_barrier()
    tl.store(out + t, p, mask=mt)
    tl.store(val_ptr + row * k + t, tl.load(x_ptr + row * x_row + p * x_step, mask=mt), mask=mt)


def fits(n: int, k: int, itemsize: int) -> bool:
    """Whether rows of ``n`` elements of ``itemsize`` bytes take the in-register select for ``k``."""
    return itemsize <= 4 and 0 < k and next_pow2(n) <= ROW_MAX and next_pow2(k) <= K_MAX


def select_rows(vals: NBXTensor, idx: NBXTensor, src: NBXTensor, R: int, n: int, k: int, row: int, step: int,
                desc: bool, config: Mapping[str, int] | None = None) -> None:
    """The first ``k`` of each of ``R`` rows of ``src`` (``n`` elements, strides ``row`` and ``step``)
    in sorted order: values into ``vals`` and int64 positions into ``idx``, both ``(R, k)`` contiguous.
    ``config`` replaces :data:`TOPK`'s lookup."""
    np2 = next_pow2(n)
    warps = TOPK.choose(config, src.dtype.itemsize, n)["num_warps"]
    tw = min(np2, 32 * warps)
    count = empty_tensor((R,), D.int32, src.device)
    launch(_select_kernel, (R,), vals, idx, count, src, n, k, row, step, DESC=desc, E=np2 // tw, TW=tw, KP=next_pow2(k),
           num_warps=warps)
