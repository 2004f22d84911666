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


def sweep(h) -> None:
    """topk(k=50) and sort over the last dim of 4096x32000 float32: topk's in-register select at 8,
    16 and 32 warps; sort's (chunk, chunk warps, merge block, merge warps) around the shipped one
    (longer chunks were slower: benchmarks/results/sweeps/h200-index.json); then topk(k=50) of
    bfloat16 rows, whose k-th value is often tied."""
    from nbx_index import sort as S
    from nbx_index import topk as T

    base = T.WARPS, T.ROW_MAX, S.CHUNK, S.CHUNK_WARPS, S.MERGE_BLOCK, S.MERGE_WARPS
    rows, n = 4096, 32000
    try:
        xs = [h.randn((rows, n), "float32") for _ in range(2)]
        XS = [h.nbx(x) for x in xs]
        for warps in (8, 16, 32):
            T.WARPS = warps
            h.compare(f"topk k=50 select warps={warps}",
                      nbx=[lambda x=x: S.topk(x, 50, -1) for x in XS],
                      torch=[lambda x=x: torch.topk(x, 50, -1) for x in xs],
                      shape=(rows, n), dtype="float32", bytes=rows * n * 4 + rows * 50 * 12)
        T.WARPS = base[0]
        # (chunk, its warps, merge block, merge warps): log2(32768 / chunk) merge passes.
        for cfg in [(1024, 4, 2048, 4), (512, 4, 2048, 4), (512, 2, 2048, 4), (1024, 2, 2048, 4), (1024, 8, 2048, 4),
                    (1024, 4, 4096, 8), (1024, 4, 2048, 8), (1024, 4, 1024, 2)]:
            S.CHUNK, S.CHUNK_WARPS, S.MERGE_BLOCK, S.MERGE_WARPS = cfg
            h.compare("sort chunk={} warps={} merge_block={} merge_warps={}".format(*cfg),
                      nbx=[lambda x=x: S.sort(x, -1) for x in XS], torch=[lambda x=x: torch.sort(x, -1) for x in xs],
                      shape=(rows, n), dtype="float32", bytes=rows * n * (4 + 4 + 8))
        S.CHUNK, S.CHUNK_WARPS, S.MERGE_BLOCK, S.MERGE_WARPS = base[2:]
        del xs, XS
        xs = [h.randn((rows, n), "bfloat16") for _ in range(2)]
        XS = [h.nbx(x) for x in xs]
        h.compare(f"topk k=50 select warps={T.WARPS}", nbx=[lambda x=x: S.topk(x, 50, -1) for x in XS],
                  torch=[lambda x=x: torch.topk(x, 50, -1) for x in xs],
                  shape=(rows, n), dtype="bfloat16", bytes=rows * n * 2 + rows * 50 * 10)
    finally:
        T.WARPS, T.ROW_MAX, S.CHUNK, S.CHUNK_WARPS, S.MERGE_BLOCK, S.MERGE_WARPS = base
