"""Probe: can a streaming bf16 add beat torch's? Standalone Triton kernels (not NBX's launcher):
plain grid, persistent grid-stride loops, streaming store hints. python -m benchmarks.probe_stream --out DIR"""

from __future__ import annotations

import sys

import torch
import triton
import triton.language as tl

from benchmarks.harness import probe_main


@triton.jit
def _plain(a_ptr, b_ptr, o_ptr, BLOCK: tl.constexpr, STORE_CS: tl.constexpr):
    idx = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    y = (tl.load(a_ptr + idx).to(tl.float32) + tl.load(b_ptr + idx).to(tl.float32)).to(o_ptr.dtype.element_ty)
    if STORE_CS:
        tl.store(o_ptr + idx, y, cache_modifier=".cs")
    else:
        tl.store(o_ptr + idx, y)


@triton.jit
def _persistent(a_ptr, b_ptr, o_ptr, nblocks, BLOCK: tl.constexpr):
    for blk in range(tl.program_id(0), nblocks, tl.num_programs(0)):
        idx = blk.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
        y = (tl.load(a_ptr + idx).to(tl.float32) + tl.load(b_ptr + idx).to(tl.float32)).to(o_ptr.dtype.element_ty)
        tl.store(o_ptr + idx, y)


def _probe(h, dtype: str) -> None:
    n = 1 << 28
    a, b = h.randn((n,), dtype), h.randn((n,), dtype)
    out = torch.empty_like(a)
    size = a.element_size()
    nbytes = dict(shape=(n,), dtype=dtype, bytes=3 * n * size)
    for elems, warps in [(2048, 4), (1024, 4), (4096, 8)] if size == 2 else [(1024, 4), (512, 4)]:
        for cs in (False, True):
            h.compare(
                f"probe add plain block={elems} warps={warps} store_cs={cs}",
                nbx=lambda e=elems, w=warps, c=cs: _plain[(n // e,)](a, b, out, BLOCK=e, STORE_CS=c, num_warps=w),
                torch=lambda: torch.add(a, b),
                **nbytes,
            )
        for per_sm in (4, 8, 16):
            grid = 132 * per_sm
            h.compare(
                f"probe add persistent block={elems} warps={warps} programs={grid}",
                nbx=lambda e=elems, w=warps, g=grid: _persistent[(g,)](a, b, out, n // e, BLOCK=e, num_warps=w),
                torch=lambda: torch.add(a, b),
                **nbytes,
            )
    h.compare("probe torch add out=", nbx=lambda: torch.add(a, b, out=out), torch=lambda: torch.add(a, b), **nbytes)


def run(h) -> None:
    for dtype in ("bfloat16", "float32"):
        _probe(h, dtype)


if __name__ == "__main__":
    sys.exit(probe_main(__doc__, "stream", run, reps=40))
