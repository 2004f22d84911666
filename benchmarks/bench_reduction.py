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
    """The engine's tiles for sum, amax and argmax (bf16): the row kernel's (BLOCK_M, BLOCK_K, warps)
    over the last dim of 8192x4096 and 4096x32768; the column kernel's (BLOCK_I, BLOCK_K, warps)
    over the first dim of 4096x4096 with the split knobs (the program count below which K is split,
    the fewest tiles a slice of K holds). Bytes are the input's."""
    from nbx_reduction import basic
    from nbx_reduction import engine as E

    base = E.row_tiles, E.col_tiles, E._GPU_PROGRAMS, E._SPLIT_BLOCKS
    cases = [("sum", lambda x, d: basic.sum(x, [d]), lambda x, d: x.sum(d)),
             ("amax", lambda x, d: basic.amax(x, [d]), lambda x, d: x.amax(d)),
             ("argmax", lambda x, d: basic.argmax(x, d), lambda x, d: x.argmax(d))]

    def run(xs, X, dim: int, tag: str) -> None:
        E._steps._plans.clear()
        shape = tuple(xs[0].shape)
        for name, f, g in cases:
            h.compare(f"{name} dim={dim} {tag}", nbx=[lambda x=x, f=f: f(x, dim) for x in X],
                      torch=[lambda x=x, g=g: g(x, dim) for x in xs], shape=shape, dtype="bfloat16",
                      bytes=shape[0] * shape[1] * 2)

    try:
        for shape in [(8192, 4096), (4096, 32768)]:
            xs = [h.randn(shape) for _ in range(2)]
            X = [h.nbx(x) for x in xs]
            for bm, bk, warps in [(1, 4096, 8), (1, 2048, 8), (1, 4096, 16), (2, 2048, 8), (1, 1024, 4)]:
                E.row_tiles = lambda rows, K, t=(bm, bk, warps): t
                run(xs, X, 1, f"bm={bm} bk={bk} warps={warps}")
            E.row_tiles = base[0]
            del xs, X
        xs = [h.randn((4096, 4096)) for _ in range(3)]
        X = [h.nbx(x) for x in xs]
        # (BLOCK_I, BLOCK_K, warps, programs, slice tiles): with 16 column tiles, K splits into
        # min(programs / 16, 4096 / (BLOCK_K * slice tiles)) slices.
        for bi, bk, warps, programs, blocks in [(256, 32, 8, 1056, 4), (256, 32, 8, 1056, 2), (256, 32, 8, 2112, 1),
                                                (128, 64, 8, 1056, 4), (512, 16, 8, 1056, 4), (256, 16, 4, 1056, 4),
                                                (64, 64, 8, 1056, 2)]:
            E.col_tiles = lambda I, K, s, t=(bi, bk, warps): t
            E._GPU_PROGRAMS, E._SPLIT_BLOCKS = programs, blocks
            run(xs, X, 0, f"bi={bi} bk={bk} warps={warps} programs={programs} blocks={blocks}")
    finally:
        E.row_tiles, E.col_tiles, E._GPU_PROGRAMS, E._SPLIT_BLOCKS = base
        E._steps._plans.clear()
