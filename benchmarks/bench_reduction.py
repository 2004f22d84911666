"""Reduction benchmarks: sum, mean, amax, argmax over the last and the first dim, and cross-entropy.

Shapes: bf16 8192x4096 and 4096x32768 (rows of a Llama-style hidden state and of a vocab-sized
logit block) reduced over the last dim, 4096x4096 reduced over the first dim, and cross-entropy
over 8192 tokens x 32000 classes. Bytes count what the op must read plus what it writes.
"""

from __future__ import annotations

import torch


def _reductions(h, shape: tuple[int, int], dim: int) -> None:
    from nbx_reduction import basic

    xs = [h.randn(shape, "bfloat16") for _ in range(2)]
    X = [h.nbx(x) for x in xs]
    kept = shape[1 - dim]
    read = shape[0] * shape[1] * 2
    cases = [
        ("sum", lambda x: basic.sum(x, [dim]), lambda x: x.sum(dim), kept * 2),
        ("mean", lambda x: basic.mean(x, [dim]), lambda x: x.mean(dim), kept * 2),
        ("amax", lambda x: basic.amax(x, [dim]), lambda x: x.amax(dim), kept * 2),
        ("argmax", lambda x: basic.argmax(x, dim), lambda x: x.argmax(dim), kept * 8),
    ]
    for name, nbx_fn, torch_fn, written in cases:
        h.compare(f"{name} dim={dim}", nbx=[lambda x=x, f=nbx_fn: f(x) for x in X],
                  torch=[lambda x=x, f=torch_fn: f(x) for x in xs], shape=shape, dtype="bfloat16",
                  bytes=read + written)


def _cross_entropy(h, tokens: int, vocab: int) -> None:
    from nbx_reduction import losses

    logits = [h.randn((tokens, vocab), "bfloat16") for _ in range(2)]
    targets = [torch.randint(0, vocab, (tokens,), device="cuda") for _ in range(2)]
    L, T = [h.nbx(x) for x in logits], [h.nbx(t) for t in targets]
    h.compare("cross_entropy_loss", nbx=[lambda x=x, t=t: losses.cross_entropy_loss(x, t) for x, t in zip(L, T,
                                                                                                         strict=True)],
              torch=[lambda x=x, t=t: torch.nn.functional.cross_entropy(x, t) for x, t in zip(logits, targets,
                                                                                              strict=True)],
              shape=(tokens, vocab), dtype="bfloat16", bytes=tokens * vocab * 2 + tokens * 8 + 2)


def run(h) -> None:
    """Every reduction case of the issue's performance targets."""
    _reductions(h, (8192, 4096), 1)
    _reductions(h, (4096, 32768), 1)
    _reductions(h, (4096, 4096), 0)
    _cross_entropy(h, 8192, 32000)


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


def sweep(h) -> None:
    """The last pieces of issue 8, bf16; bytes are read plus written, so each GB/s compares with copy.

    (a) argmax over dim 1 of 8192x4096 and 4096x32768: the arg ops' row tiles (BLOCK_M, BLOCK_K,
    warps, unroll, stages, register cap: ``engine.Tiles``): one block of 1024 a step, and four
    loaded together under a register cap (the default for rows of up to 4096). The H200 run in
    results/sweeps/h200-reduction-linalg-tma.json also timed two variants since removed: the loop
    finished by one reduction of (value, index) pairs (``pairs=True``; 24.7 us against 23.0 for
    the two reductions that ship) and each row loaded as one block with a loop-free finish
    (``arg=(1, 4096, ...)``; 20.9 us at best, against 20.8 for the default). A later run
    (results/sweeps/h200-reduction-argmax-keys.json) timed argmax of bf16 as one max of int32 keys
    (the value's order in the high half, the position in the low): 30.9 us against 20.9 for the
    lanes, the per-element integer work costing more than the index it saves; it was removed. So
    was a warp per row (blocks of 256, 2 to 8 rows a program, 8 or 16 loads a step), whose finish
    needs no barrier: 21.3 to 26.1 us against 20.7
    (results/sweeps/h200-reduction-argmax-warp-rows.json).
    (b) mean against sum over dim 1 of 8192x4096: in one comparison (nbx = mean, torch = sum, so
    ratio = sum ms / mean ms), each against torch, and mean dividing by its count (a count of
    4095, not a power of two, keeps the division that mean over 4096 ran before the engine turned
    it into a multiply by the exact reciprocal).
    (c) sum over dim 0 of 4096x4096 (32 MB): column tiles and K splits (tiles, the program count
    below which K splits, the fewest blocks a slice holds; the programs each makes are noted).
    Then how fast 32 MB can be read at all: the read probe (``_read_probe``) at a few (chunk,
    BLOCK, warps, stages) against torch's ``x.sum()`` of every element; the probe over 8 KB (one
    program: a launch's fixed cost), 64 MB and 256 MB, to fit time = fixed + bytes / bandwidth;
    and clone of the 32 MB (NBX against torch). If no probe reaches 80% of copy (3.36 TB/s) at
    32 MB, no reduction kernel will.
    """
    import torch
    from nbx_reduction import basic
    from nbx_reduction import engine as E

    from nbx_core import dtypes as D
    from nbx_core.ops.copy import clone

    base = E.row_tiles, E.col_tiles, E._GPU_PROGRAMS, E._SPLIT_BLOCKS
    arg = (E.ARGMAX, E.ARGMIN)

    def argmax_rows(shape: tuple[int, int], candidates) -> None:
        xs = [h.randn(shape) for _ in range(2)]
        X = [h.nbx(x) for x in xs]
        for tiles in candidates:
            E._steps._plans.clear()
            E.row_tiles = lambda n, K, op, size, t=tiles: E.Tiles(*t) if op in arg else base[0](n, K, op, size)
            h.compare(f"argmax dim=1 arg={tiles}", nbx=[lambda x=x: basic.argmax(x, 1) for x in X],
                      torch=[lambda x=x: x.argmax(1) for x in xs], shape=shape, dtype="bfloat16",
                      bytes=shape[0] * shape[1] * 2 + shape[0] * 8)

    loops = [(1, 1024, 4),              # one block a step (the default for rows longer than 4096)
             (1, 1024, 4, 4, 1, 64)]    # four in flight under a register cap (up to 4096)
    try:
        argmax_rows((8192, 4096), loops)
        argmax_rows((4096, 32768), loops)
        E.row_tiles = base[0]
        E._steps._plans.clear()

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
        # (sum's column tiles, programs, slice blocks): K splits into min(programs / column tiles,
        # 4096 / (BLOCK_K * blocks)) slices, rounded to whole steps.
        columns = [((64, 64, 4, 1, 3), 1056, 4, "64 tiles x 16 slices of 256 rows"),       # default
                   ((64, 64, 4, 1, 3), 2112, 2, "64 tiles x 32 slices of 128 rows"),
                   ((64, 64, 4, 1, 3), 4224, 1, "64 tiles x 64 slices of one step"),
                   ((128, 32, 8, 1, 3), 2112, 2, "32 tiles x 64 slices of 64 rows"),
                   ((256, 16, 8, 1, 3), 1056, 4, "16 tiles x 64 slices of 64 rows"),
                   ((256, 32, 8, 1, 3), 2112, 2, "16 tiles x 64 slices of 64 rows")]
        for tiles, programs, blocks, made in columns:
            E._steps._plans.clear()
            E.col_tiles = lambda I, K, op, size, t=tiles: E.Tiles(*t) if op not in arg else base[1](I, K, op, size)
            E._GPU_PROGRAMS, E._SPLIT_BLOCKS = programs, blocks
            h.compare(f"sum dim=0 tiles={tiles} programs={programs} blocks={blocks} ({made})",
                      nbx=[lambda x=x: basic.sum(x, [0]) for x in X], torch=[lambda x=x: x.sum(0) for x in xs],
                      shape=shape, dtype="bfloat16", bytes=read + shape[1] * 2)
        E.col_tiles, E._GPU_PROGRAMS, E._SPLIT_BLOCKS = base[1:4]
        E._steps._plans.clear()

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
    finally:
        E.row_tiles, E.col_tiles, E._GPU_PROGRAMS, E._SPLIT_BLOCKS = base
        E._steps._plans.clear()
