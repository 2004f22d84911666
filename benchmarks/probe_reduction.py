"""Probe: how fast the reduction engine's mean divides and how fast 32 MB can be read at all.

    python -m benchmarks.probe_reduction --out DIR

(a) mean against sum over dim 1 of bf16 8192x4096: in one comparison (nbx = mean, torch = sum, so
ratio = sum ms / mean ms), each against torch, and mean dividing by its count (a count of 4095,
not a power of two, keeps the division that mean over 4096 would run without the engine's exact
reciprocal). (b) the read probe (``_read_probe``) over 32 MB at a few (chunk, BLOCK, warps,
stages) against torch's ``x.sum()`` of every element, then over 8 KB (one program: a launch's
fixed cost), 64 MB and 256 MB, to fit time = fixed + bytes / bandwidth; and clone of the 32 MB
(NBX against torch). If no probe reaches 80% of copy at 32 MB, no reduction kernel will. The
engine's tiles are swept by ``python -m benchmarks.sweep --only reduction``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch


def _read_probe():
    """A minimal Triton kernel reading a flat bf16 tensor as fast as it can: program p sums the
    elements [p * chunk, (p + 1) * chunk) BLOCK at a time and stores one float (no second pass).
    Built on first use: Triton is imported after NBX has chosen its backend."""
    import triton
    import triton.language as tl

    @triton.jit
    def read_chunks(x_ptr, out_ptr, n, chunk, BLOCK: tl.constexpr):
        start = tl.program_id(0).to(tl.int64) * chunk
        acc = tl.zeros([BLOCK], tl.float32)
        for k in range(0, chunk, BLOCK):
            idx = start + k + tl.arange(0, BLOCK)
            acc += tl.load(x_ptr + idx, mask=idx < n, other=0.0).to(tl.float32)
        tl.store(out_ptr + tl.program_id(0), tl.sum(acc))

    return read_chunks


def run(h) -> None:
    from nbx_reduction import basic
    from nbx_reduction import engine as E

    from nbx_core import dtypes as D
    from nbx_core.ops.copy import clone

    shape = (8192, 4096)
    xs = [h.randn(shape) for _ in range(2)]
    X = [h.nbx(x) for x in xs]
    io = dict(shape=shape, dtype="bfloat16", bytes=shape[0] * shape[1] * 2 + shape[0] * 2)
    mean = [lambda x=x: basic.mean(x, [1]) for x in X]
    total = [lambda x=x: basic.sum(x, [1]) for x in X]
    divide = [lambda x=x: E.reduce(x, (1,), False, E.SUM, D.bfloat16, src=D.bfloat16, post=E.Q_MEAN,
                                   count=4095) for x in X]
    h.compare("mean dim=1 (nbx) vs sum dim=1 (torch column: nbx sum)", nbx=mean, torch=total, **io)
    h.compare("mean dim=1", nbx=mean, torch=[lambda x=x: x.mean(1) for x in xs], **io)
    h.compare("sum dim=1", nbx=total, torch=[lambda x=x: x.sum(1) for x in xs], **io)
    h.compare("mean dim=1 dividing (count 4095) vs sum dim=1 (torch column: nbx sum)", nbx=divide,
              torch=total, **io)
    del xs, X

    shape = (4096, 4096)
    read = shape[0] * shape[1] * 2
    xs = [h.randn(shape) for _ in range(3)]
    X = [h.nbx(x) for x in xs]
    probe = _read_probe()

    def read_all(xs, chunk: int, block: int, warps: int, stages: int, name: str) -> None:
        n = xs[0].numel()
        grid = -(-n // chunk)
        out = torch.empty(grid, device="cuda", dtype=torch.float32)
        h.compare(f"{name} (nbx column: read probe chunk={chunk} block={block} warps={warps} stages={stages}, "
                  f"{grid} programs; torch column: x.sum())",
                  nbx=[lambda x=x: probe[(grid,)](x, out, n, chunk, BLOCK=block, num_warps=warps,
                                                  num_stages=stages) for x in xs],
                  torch=[lambda x=x: x.sum() for x in xs], shape=tuple(xs[0].shape), dtype="bfloat16",
                  bytes=n * 2 + grid * 4)

    for chunk, block, warps, stages in [(4096, 4096, 4, 1), (8192, 8192, 8, 1), (16384, 4096, 4, 1),
                                        (16384, 4096, 4, 3), (16384, 16384, 8, 1), (32768, 8192, 8, 3)]:
        read_all(xs, chunk, block, warps, stages, "read 32 MB")
    h.compare("clone 32 MB", nbx=[lambda x=x: clone(x) for x in X], torch=[lambda x=x: x.clone() for x in xs],
              shape=shape, dtype="bfloat16", bytes=2 * read)
    del xs, X
    for size, name in [((4096,), "read 8 KB"), ((8192, 4096), "read 64 MB"), ((4096, 32768), "read 256 MB")]:
        read_all([h.randn(size) for _ in range(2)], 4096, 4096, 4, 1, name)


def main(argv: list[str] | None = None) -> int:
    from benchmarks.harness import probe_main

    return probe_main(__doc__, "reduction", run, argv)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent.parent))
    sys.exit(main())
