"""Probe: why bf16 bmm with a short reduction (K = 64, 128) reaches only ~0.56x torch on the H200.

Those products write far more than they read ((32, 2048, 2048) bf16 out of K = 128 is 268 MB of
output against 34 MB of input), so the store side decides. Standalone variants of a batched GEMM,
each changing one thing: no loads (store-only), no store (loads and dots only), the output stored
through a tensor descriptor (the copy engine's asynchronous bulk store), and persistent programs
that walk the tiles (so one tile's store overlaps the next tile's loads). Timings only: the
store-free and load-free variants compute nothing useful on purpose.

    python -m benchmarks.probe_bmm --out DIR
"""

from __future__ import annotations

import sys

import torch
import triton
import triton.language as tl

from benchmarks.harness import probe_main

SMS = 132


@triton.jit
def _tile(t, tiles_m, tiles_n, GROUP_M: tl.constexpr):
    # (batch, row tile, column tile) of linear tile t, grouped within a batch.
    per_batch = tiles_m * tiles_n
    b = t // per_batch
    p = t % per_batch
    width = GROUP_M * tiles_n
    first = (p // width) * GROUP_M
    size = tl.minimum(tiles_m - first, GROUP_M)
    return b, first + (p % width) % size, (p % width) // size


@triton.jit
def _probe_kernel(a_ptr, b_ptr, c_ptr, batches, M, N, K: tl.constexpr,
                  LOADS: tl.constexpr, STORE: tl.constexpr, PERSIST: tl.constexpr, FLATTEN: tl.constexpr,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    # STORE 0: none (a masked-off store keeps the math alive); 1: pointers; 2: tensor descriptor.
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    total = batches * tiles_m * tiles_n
    rk = tl.arange(0, BLOCK_K)
    if PERSIST:
        first = tl.program_id(0)
        step = tl.num_programs(0)
    else:
        first = tl.program_id(0)
        step = total
    for t in tl.range(first, total, step, flatten=FLATTEN):
        b, pm, pn = _tile(t, tiles_m, tiles_n, GROUP_M)
        b = b.to(tl.int64)
        rm = pm * BLOCK_M + tl.arange(0, BLOCK_M)
        rn = pn * BLOCK_N + tl.arange(0, BLOCK_N)
        acc = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
        if LOADS:
            a_ptrs = a_ptr + b * M * K + rm[:, None] * K + rk[None, :]
            b_ptrs = b_ptr + b * K * N + rk[:, None] * N + rn[None, :]
            for _ in range(0, K // BLOCK_K):
                acc = tl.dot(tl.load(a_ptrs), tl.load(b_ptrs), acc)
                a_ptrs += BLOCK_K
                b_ptrs += BLOCK_K * N
        else:
            acc += (rm[:, None] + rn[None, :]).to(tl.float32)
        out = acc.to(c_ptr.dtype.element_ty)
        if STORE == 0:
            tl.store(c_ptr + b * M * N + rm[:, None] * N + rn[None, :], out, mask=acc == 12345.0)
        elif STORE == 1:
            tl.store(c_ptr + b * M * N + rm[:, None] * N + rn[None, :], out)
        else:
            desc = tl.make_tensor_descriptor(c_ptr + b * M * N, [M, N], [N, 1], [BLOCK_M, BLOCK_N])
            desc.store([pm * BLOCK_M, pn * BLOCK_N], out)


def run(h) -> None:
    base = dict(LOADS=1, STORE=1, PERSIST=0, FLATTEN=False)
    variants = [("full", {}), ("no store", dict(STORE=0)), ("no loads", dict(LOADS=0)),
                ("descriptor store", dict(STORE=2)),
                ("persistent", dict(PERSIST=1)), ("persistent flattened", dict(PERSIST=1, FLATTEN=True)),
                ("persistent, descriptor store", dict(PERSIST=1, STORE=2)),
                ("persistent flattened, descriptor store", dict(PERSIST=1, FLATTEN=True, STORE=2))]
    tiles = [(128, 128, 64, 8, 2), (64, 128, 64, 4, 2)]
    for batches, m, n, k in [(32, 2048, 2048, 128), (96, 512, 512, 64)]:
        a = h.randn((batches, m, k))
        bt = h.randn((batches, k, n))
        c = torch.empty((batches, m, n), dtype=torch.bfloat16, device="cuda")
        for name, change in variants:
            for bm, bn, bk, warps, stages in tiles:
                kw = {**base, **change}
                total = batches * triton.cdiv(m, bm) * triton.cdiv(n, bn)
                for per_sm in ((2, 3) if kw["PERSIST"] else (0,)):
                    grid = (min(total, SMS * per_sm),) if per_sm else (total,)

                    def fn(kw=kw, grid=grid, args=(a, bt, c, batches, m, n, k), bm=bm, bn=bn, bk=bk, warps=warps,
                           stages=stages):
                        _probe_kernel[grid](*args, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
                                            GROUP_M=8, num_warps=warps, num_stages=stages, **kw)

                    label = f"bmm {batches}x{m}x{n}x{k} {name} tiles={(bm, bn, bk, warps, stages)}"
                    label += f" per_sm={per_sm}" if per_sm else ""
                    h.compare(label, nbx=fn, torch=lambda a=a, bt=bt: torch.bmm(a, bt),
                              shape=(batches, m, n, k), dtype="bfloat16",
                              bytes=2 * batches * (m * k + k * n + m * n), flops=2 * batches * m * n * k)


if __name__ == "__main__":
    sys.exit(probe_main(__doc__, "bmm", run))
