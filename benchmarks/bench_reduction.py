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
        h.compare(
            f"{name} dim={dim}",
            nbx=[lambda x=x, f=nbx_fn: f(x) for x in X],
            torch=[lambda x=x, f=torch_fn: f(x) for x in xs],
            shape=shape,
            dtype="bfloat16",
            bytes=read + written,
        )


def _cross_entropy(h, tokens: int, vocab: int) -> None:
    from nbx_reduction import losses

    logits = [h.randn((tokens, vocab), "bfloat16") for _ in range(2)]
    targets = [torch.randint(0, vocab, (tokens,), device="cuda") for _ in range(2)]
    L, T = [h.nbx(x) for x in logits], [h.nbx(t) for t in targets]
    h.compare(
        "cross_entropy_loss",
        nbx=[lambda x=x, t=t: losses.cross_entropy_loss(x, t) for x, t in zip(L, T, strict=True)],
        torch=[lambda x=x, t=t: torch.nn.functional.cross_entropy(x, t) for x, t in zip(logits, targets, strict=True)],
        shape=(tokens, vocab),
        dtype="bfloat16",
        bytes=tokens * vocab * 2 + tokens * 8 + 2,
    )


def run(h) -> None:
    """Every reduction case of the issue's performance targets."""
    _reductions(h, (8192, 4096), 1)
    _reductions(h, (4096, 32768), 1)
    _reductions(h, (4096, 4096), 0)
    _cross_entropy(h, 8192, 32000)
