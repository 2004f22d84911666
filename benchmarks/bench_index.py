"""nbx-index benchmarks: embedding / index_select / gather (Llama-3-style 128000 x 4096 vocabulary,
8192 tokens, bf16) and sort / topk(k=50) over the last dim of 4096 x 32000 float32 logits.

Targets (issue 10): the gathers at least 1.0x torch, sort and topk at least 0.7x. Every NBX call
checks its indices on the device; the flag is read at the next host wait (nbx_core.runtime.checks), as
torch's device asserts are.
"""

from __future__ import annotations

import torch


def run(h) -> None:
    from nbx_index.embedding import embedding
    from nbx_index.gather import gather, index_select
    from nbx_index.sort import sort, topk

    vocab, dim, tokens = 128000, 4096, 8192
    w = h.randn((vocab, dim), "bfloat16")
    W = h.nbx(w)
    ids = [torch.randint(0, vocab, (tokens,), device="cuda") for _ in range(2)]
    IDS = [h.nbx(i) for i in ids]
    row_bytes = tokens * dim * 2 * 2 + tokens * 8
    h.compare("embedding", nbx=[lambda i=i: embedding(W, i) for i in IDS],
              torch=[lambda i=i: torch.nn.functional.embedding(i, w) for i in ids],
              shape=(vocab, dim, tokens), dtype="bfloat16", bytes=row_bytes)
    h.compare("index_select", nbx=[lambda i=i: index_select(W, 0, i) for i in IDS],
              torch=[lambda i=i: torch.index_select(w, 0, i) for i in ids],
              shape=(vocab, dim, tokens), dtype="bfloat16", bytes=row_bytes)
    gidx = [torch.randint(0, vocab, (tokens, dim), device="cuda") for _ in range(2)]
    GIDX = [h.nbx(g) for g in gidx]
    h.compare("gather", nbx=[lambda g=g: gather(W, 0, g) for g in GIDX],
              torch=[lambda g=g: torch.gather(w, 0, g) for g in gidx],
              shape=(vocab, dim, tokens), dtype="bfloat16", bytes=tokens * dim * (2 + 2 + 8))
    del gidx, GIDX

    rows, n = 4096, 32000
    xs = [h.randn((rows, n), "float32") for _ in range(2)]
    XS = [h.nbx(x) for x in xs]
    h.compare("sort", nbx=[lambda x=x: sort(x, -1) for x in XS], torch=[lambda x=x: torch.sort(x, -1) for x in xs],
              shape=(rows, n), dtype="float32", bytes=rows * n * (4 + 4 + 8))
    h.compare("topk k=50", nbx=[lambda x=x: topk(x, 50, -1) for x in XS],
              torch=[lambda x=x: torch.topk(x, 50, -1) for x in xs],
              shape=(rows, n), dtype="float32", bytes=rows * n * 4 + rows * 50 * 12)
