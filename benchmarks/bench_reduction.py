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


def sweep(h) -> None:
    """Loads in flight in the engine's loops over K, bf16, bytes the input's. The column kernel over
    the first dim of 4096x4096 (sum, amax, argmax): each candidate sets the tiles of the sums and
    extremes, those of the arg ops (BLOCK_I, BLOCK_K, warps, unroll, stages, register cap; see
    ``engine.Tiles``), the program count below which K is split and the fewest blocks of BLOCK_K a
    slice holds. The row kernel's arg ops over the last dim of 8192x4096 (argmax; the first two
    candidates on 4096x32768 too): each candidate sets their tiles (BLOCK_M, BLOCK_K, warps,
    unroll, stages, register cap). The first candidate
    of each is the tiling shipped before these knobs (its argmax already has the one-pass final
    reduction of value and index), the second the new default."""
    from nbx_reduction import basic
    from nbx_reduction import engine as E

    base = E.row_tiles, E.col_tiles, E._GPU_PROGRAMS, E._SPLIT_BLOCKS
    arg = (E.ARGMAX, E.ARGMIN)
    cases = {"sum": (lambda x, d: basic.sum(x, [d]), lambda x, d: x.sum(d)),
             "amax": (lambda x, d: basic.amax(x, [d]), lambda x, d: x.amax(d)),
             "argmax": (lambda x, d: basic.argmax(x, d), lambda x, d: x.argmax(d))}

    def run(xs, X, dim: int, names: tuple[str, ...], tag: str) -> None:
        E._steps._plans.clear()
        shape = tuple(xs[0].shape)
        for name in names:
            f, g = cases[name]
            h.compare(f"{name} dim={dim} {tag}", nbx=[lambda x=x, f=f: f(x, dim) for x in X],
                      torch=[lambda x=x, g=g: g(x, dim) for x in xs], shape=shape, dtype="bfloat16",
                      bytes=shape[0] * shape[1] * 2)

    # (sums and extremes, arg ops, programs, slice blocks). With 32 column tiles of 128 (64 of 64),
    # K splits into min(programs / tiles, 4096 / (BLOCK_K * blocks)) slices, rounded to whole steps.
    columns = [
        ((128, 64, 8), (128, 64, 8), 1056, 4),                        # before: 512 programs, 4 loads each
        ((128, 64, 8, 1, 3), (64, 32, 4, 1, 3), 1056, 4),             # default: 3 stages
        ((128, 64, 8, 1, 2), (64, 32, 4, 1, 2), 1056, 4),
        ((128, 64, 8, 1, 4), (64, 32, 4, 1, 4), 1056, 4),
        ((128, 64, 8, 1, 1, 64), (64, 32, 4, 2, 1, 64), 1056, 4),     # a step's loads issued together
        ((128, 64, 8, 2, 1, 80), (128, 16, 8, 4, 1, 64), 528, 4),     # 2 (4) loads a step, 3 (4) programs an SM
        ((128, 64, 8, 1, 3), (128, 32, 8, 1, 3), 264, 4),             # fewer, longer slices: 256 (288) programs
        ((64, 64, 4, 1, 3), (64, 16, 4, 4, 1, 64), 1056, 4),          # 4 warps, 1024 programs
        ((256, 32, 8, 1, 3), (128, 32, 8, 1, 3), 1056, 4),            # wider rows of 512 bytes
    ]
    rows = [
        (1, 1024, 4),                                                 # before
        (1, 1024, 4, 4, 1, 64),                                       # default: a row of 4096 in flight
        (1, 1024, 4, 1, 3),
        (1, 1024, 4, 2, 2),
        (1, 512, 4, 4, 1, 64),
    ]
    try:
        xs = [h.randn((4096, 4096)) for _ in range(3)]
        X = [h.nbx(x) for x in xs]
        for tiles, arg_tiles, programs, blocks in columns:
            E.col_tiles = lambda I, K, op, size, t=tiles, a=arg_tiles: a if op in arg else t
            E._GPU_PROGRAMS, E._SPLIT_BLOCKS = programs, blocks
            run(xs, X, 0, ("sum", "amax", "argmax"), f"tiles={tiles} arg={arg_tiles} programs={programs} "
                f"blocks={blocks}")
        E.col_tiles, E._GPU_PROGRAMS, E._SPLIT_BLOCKS = base[1:]
        del xs, X
        # The long rows of 4096x32768 check the default against the tiles before it.
        for shape, candidates in (((8192, 4096), rows), ((4096, 32768), rows[:2])):
            xs = [h.randn(shape) for _ in range(2)]
            X = [h.nbx(x) for x in xs]
            for tiles in candidates:
                E.row_tiles = lambda n, K, op, size, t=tiles: t if op in arg else base[0](n, K, op, size)
                run(xs, X, 1, ("argmax",), f"arg={tiles}")
            del xs, X
    finally:
        E.row_tiles, E.col_tiles, E._GPU_PROGRAMS, E._SPLIT_BLOCKS = base
        E._steps._plans.clear()
