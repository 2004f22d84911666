"""Attention benchmarks: softmax, sdpa forward (prefill shapes, causal and not) and decoding.

Shapes: softmax bf16 8192x4096 (Llama-style logits block); sdpa bf16 (B, H, S, D) = (4, 32, 4096,
128) causal and not, (16, 12, 512, 64) (BERT-base), (1, 32, 16384, 128) (long context); decoding
with one query against 4096 keys, 32 heads, D 128, batch 16 (and batch 1, where the keys split).
Torch runs its default sdpa backend (cuDNN or flash on an H200). FLOPs count the two matmuls,
4*B*H*L*S*D, halved for causal; bytes count what the op must read plus what it writes.
"""

from __future__ import annotations

import torch


def _softmax(h) -> None:
    from nbx_attention import softmax

    shape = (8192, 4096)
    xs = [h.randn(shape, "bfloat16") for _ in range(2)]
    X = [h.nbx(x) for x in xs]
    nbytes = 2 * shape[0] * shape[1] * 2
    h.compare("softmax dim=-1", nbx=[lambda x=x: softmax.softmax(x, -1) for x in X],
              torch=[lambda x=x: torch.softmax(x, -1) for x in xs], shape=shape, dtype="bfloat16", bytes=nbytes)
    h.compare("log_softmax dim=-1", nbx=[lambda x=x: softmax.log_softmax(x, -1) for x in X],
              torch=[lambda x=x: torch.log_softmax(x, -1) for x in xs], shape=shape, dtype="bfloat16",
              bytes=nbytes)


def _sdpa(h, B: int, H: int, L: int, S: int, D: int, causal: bool, name: str) -> None:
    from nbx_attention import sdpa

    q, k, v = h.randn((B, H, L, D)), h.randn((B, H, S, D)), h.randn((B, H, S, D))
    Q, K, V = h.nbx(q), h.nbx(k), h.nbx(v)
    flops = 4 * B * H * L * S * D // (2 if causal else 1)
    nbytes = (B * H * L * D * 2 + 2 * B * H * S * D) * 2
    h.compare(name, nbx=lambda: sdpa.scaled_dot_product_attention(Q, K, V, None, 0.0, causal),
              torch=lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal),
              shape=(B, H, L, S, D), dtype="bfloat16", flops=flops if L > 1 else None,
              bytes=nbytes if L == 1 else None, note="causal" if causal else "")


def run(h) -> None:
    _softmax(h)
    _sdpa(h, 4, 32, 4096, 4096, 128, False, "sdpa")
    _sdpa(h, 4, 32, 4096, 4096, 128, True, "sdpa causal")
    _sdpa(h, 16, 12, 512, 512, 64, False, "sdpa bert-base")
    _sdpa(h, 1, 32, 16384, 16384, 128, True, "sdpa long causal")
    _sdpa(h, 1, 32, 16384, 16384, 128, False, "sdpa long")
    _sdpa(h, 16, 32, 1, 4096, 128, False, "sdpa decode")
    # Batch 1: 32 programs would leave the GPU idle, so the keys split (the last split merges).
    _sdpa(h, 1, 32, 1, 4096, 128, False, "sdpa decode b1")
