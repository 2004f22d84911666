"""nbx-linalg benchmarks: GEMMs at the issue's shapes (BERT-base, Llama-style decode) against cuBLAS.

Targets (issue 7): bf16 mm/addmm/linear at 4096^3, 8192^3 and 4096x3072x768 at least 0.9x torch;
decode 16x4096x4096 at least 0.9x; bmm at attention shapes at least 0.9x.
"""

from __future__ import annotations

# (M, N, K): square, large square, BERT-base FFN up-projection (4096 tokens, 768 -> 3072), decode.
MM_SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (4096, 3072, 768), (16, 4096, 4096)]
# (batch * heads, M, N, K): BERT-base scores and context (batch 8, 12 heads, 512 tokens, head 64),
# Llama-style prefill scores (32 heads, 2048 tokens, head 128).
BMM_SHAPES = [(96, 512, 512, 64), (96, 512, 64, 512), (32, 2048, 2048, 128)]


def run(h) -> None:
    import torch
    from nbx_linalg.einsum import einsum
    from nbx_linalg.matmul import addmm, bmm, linear, mm

    from nbx_core.ops.views import transpose

    for m, n, k in MM_SHAPES:
        a, b, w, bias = h.randn((m, k)), h.randn((k, n)), h.randn((n, k)), h.randn((n,))
        A, B, W, Bias = h.nbx(a), h.nbx(b), h.nbx(w), h.nbx(bias)
        flops = 2 * m * n * k
        h.compare("mm", nbx=lambda A=A, B=B: mm(A, B), torch=lambda a=a, b=b: a @ b, shape=(m, n, k),
                  dtype="bfloat16", flops=flops)
        h.compare("addmm", nbx=lambda A=A, B=B, Bias=Bias: addmm(Bias, A, B),
                  torch=lambda a=a, b=b, bias=bias: bias.addmm(a, b), shape=(m, n, k), dtype="bfloat16",
                  flops=flops)
        h.compare("linear", nbx=lambda A=A, W=W, Bias=Bias: linear(A, W, Bias),
                  torch=lambda a=a, w=w, bias=bias: torch.nn.functional.linear(a, w, bias),
                  shape=(m, n, k), dtype="bfloat16", flops=flops)

    for batch, m, n, k in BMM_SHAPES:
        a, b = h.randn((batch, m, k)), h.randn((batch, k, n))
        A, B = h.nbx(a), h.nbx(b)
        flops = 2 * batch * m * n * k
        h.compare("bmm", nbx=lambda A=A, B=B: bmm(A, B), torch=lambda a=a, b=b: a.bmm(b),
                  shape=(batch, m, n, k), dtype="bfloat16", flops=flops)
        # Scores as attention writes them: q @ k^T with k stored (batch, n, k), a transposed operand.
        kt = h.randn((batch, n, k))
        KT = h.nbx(kt)
        h.compare("bmm(q, k^T)", nbx=lambda A=A, KT=KT: bmm(A, transpose(KT, 1, 2)),
                  torch=lambda a=a, kt=kt: a.bmm(kt.transpose(1, 2)), shape=(batch, m, n, k), dtype="bfloat16",
                  flops=flops)
        del a, b, kt, A, B, KT

    # float32 at IEEE precision (torch's default; no TF32 on either side).
    a, b = h.randn((4096, 4096), "float32"), h.randn((4096, 4096), "float32")
    A, B = h.nbx(a), h.nbx(b)
    h.compare("mm", nbx=lambda: mm(A, B), torch=lambda: a @ b, shape=(4096, 4096, 4096), dtype="float32",
              flops=2 * 4096**3)
    q, kk = h.randn((8, 12, 512, 64)), h.randn((8, 12, 512, 64))
    Q, K = h.nbx(q), h.nbx(kk)
    h.compare("einsum bhqd,bhkd->bhqk", nbx=lambda: einsum("bhqd,bhkd->bhqk", [Q, K]),
              torch=lambda: torch.einsum("bhqd,bhkd->bhqk", q, kk), shape=(8, 12, 512, 512, 64),
              dtype="bfloat16", flops=2 * 96 * 512 * 512 * 64)


# Sweep candidates, (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages, TMA[, SPLIT_K[, PERSISTENT]]):
# TMA 0 loads the operands with pointers (cp.async), 1 with the copy engine (descriptors built on the
# device); SPLIT_K slices K between programs; PERSISTENT n launches n programs per SM that walk the
# tiles. The first of each list is what h200.json shipped before the persistent programs. Each
# compiles a kernel variant per layout (about 1 s each); groups run most important first.
PTR, TMA_ = 0, 1
# BLOCK_K 128 reads 256 contiguous bytes per row of a K-major tile instead of 128.
SQUARE = [(128, 256, 64, 8, 8, 3, PTR), (256, 128, 64, 8, 8, 3, PTR), (128, 128, 128, 8, 8, 3, PTR),
          (128, 256, 64, 8, 8, 3, TMA_), (128, 256, 64, 8, 8, 4, TMA_), (256, 128, 64, 8, 8, 3, TMA_)]
# BERT's FFN (K = 768, 12 K steps, 4 to 6 waves of tiles): persistent programs overlap each tile's
# stores with the next tile's loads.
FFN = [(128, 256, 64, 8, 8, 3, PTR), (128, 128, 64, 8, 8, 3, PTR), (128, 256, 64, 8, 8, 3, TMA_),
       (128, 128, 64, 8, 8, 4, TMA_), (128, 256, 64, 8, 8, 3, PTR, 1, 1), (128, 128, 64, 8, 8, 3, PTR, 1, 2),
       (128, 128, 64, 8, 8, 4, PTR, 1, 2)]
HUGE_NT = [(128, 256, 64, 8, 8, 3, PTR), (256, 128, 64, 8, 8, 3, PTR), (128, 256, 64, 8, 8, 3, TMA_)]
# BERT scores (K = 64, one K step) and prefill scores (K = 128, two; the 268 MB output dominates):
# per-tile programs against persistent ones (benchmarks/probe_bmm.py: a standalone persistent,
# flattened kernel took prefill from 0.40-0.44x to 0.75x torch).
SCORES = [(64, 128, 64, 8, 4, 2, PTR), (128, 128, 64, 8, 8, 2, PTR, 1, 2), (64, 128, 64, 8, 4, 2, PTR, 1, 3),
          (128, 64, 64, 8, 4, 2, PTR, 1, 3), (64, 128, 64, 8, 4, 2, PTR, 1, 4), (128, 128, 64, 8, 8, 2, PTR, 1, 3)]
PREFILL = [(128, 128, 64, 8, 8, 2, PTR), (64, 128, 64, 8, 4, 2, PTR, 1, 3), (64, 128, 64, 8, 4, 2, PTR, 1, 4),
           (128, 128, 64, 8, 8, 2, PTR, 1, 2), (128, 64, 64, 8, 4, 2, PTR, 1, 3), (64, 256, 64, 8, 8, 2, PTR, 1, 2),
           (64, 128, 64, 8, 4, 3, PTR, 1, 3), (128, 256, 64, 8, 8, 2, PTR, 1, 1), (256, 128, 64, 8, 8, 2, PTR, 1, 1),
           (128, 128, 64, 8, 8, 2, PTR, 1, 1), (128, 128, 128, 8, 8, 2, PTR, 1, 1), (64, 128, 128, 8, 4, 2, PTR, 1, 2),
           (128, 128, 64, 8, 4, 2, PTR, 1, 2), (64, 256, 64, 8, 4, 2, PTR, 1, 2), (64, 128, 64, 16, 4, 2, PTR, 1, 3),
           (64, 128, 64, 4, 4, 2, PTR, 1, 3), (64, 128, 64, 1, 4, 2, PTR, 1, 3)]
# Decoding (M = 16): 32 tiles of 128 columns leave most SMs idle; SPLIT_K (the 8th field) slices K
# between programs. The first NN candidate is what h200.json shipped before (narrow, unsplit).
DECODE_NN = [(16, 32, 256, 1, 4, 4, PTR, 1), (16, 128, 64, 1, 4, 4, PTR, 8), (16, 128, 128, 1, 4, 4, PTR, 8),
             (16, 256, 64, 1, 4, 4, PTR, 16), (16, 64, 128, 1, 4, 4, PTR, 4), (16, 128, 64, 1, 4, 4, PTR, 4)]
DECODE_NT = [(16, 32, 256, 1, 4, 6, PTR, 1), (16, 64, 256, 1, 4, 4, PTR, 4), (16, 32, 256, 1, 4, 4, PTR, 2)]
_SWEEP_BUDGET_S = 240.0


def sweep(h) -> None:
    """Time GEMM load paths and tiles for linear's K-major weight (layout NT) against mm (NN).

    ``matmul._config`` is swapped for each candidate (and restored). Decoding (16x4096x4096): mm
    and addmm (NN) over narrow unsplit tiles and wider tiles with K split (``SPLIT_K``), linear
    (NT) likewise. Per square and BERT shape: mm
    (NN) and linear with a bias (NT, W stored (N, K)) for each candidate; at 4096^3 also linear
    without a bias (the case Triton 3.6 used to compile with serialised wgmmas); linear at 8192^3;
    attention scores q @ k^T (batched NT). Names carry the op, layout, load path (ptr: cp.async
    pointer loads, tma: tensor descriptors) and tile; ``table`` marks what the shipped table picks.
    A group that would start past the time budget is skipped and reported as an error;
    ``NBX_SWEEP_GROUPS=prefill,bert`` (names' first words) runs only those groups.
    """
    import os
    import time

    import torch
    import torch.nn.functional as F
    from nbx_linalg import configs
    from nbx_linalg import matmul as M

    from nbx_core.ops.views import transpose

    start, base = time.perf_counter(), M._config
    keys = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_warps", "num_stages", "TMA", "SPLIT_K", "PERSISTENT")
    defaults = (1, 0)

    def timed(name, cand, nbx, ref, shape, flops, m, n, k, layout):
        cand = (*cand, *defaults[len(cand) - 7:])
        cfg = dict(zip(keys, cand, strict=True))
        shipped = configs.lookup("bfloat16", m, n, k, layout)
        table = tuple(shipped.get(key, {"SPLIT_K": 1}.get(key, 0)) for key in keys) == cand
        split = f" split_k={cand[7]}" if cand[7] > 1 else ""
        split += f" persistent={cand[8]}" if cand[8] else ""
        tag = f"{'tma' if cand[6] else 'ptr'} cfg={cand[:6]}{split}{' table' if table else ''}"
        M._config = lambda *args: dict(cfg)
        return h.compare(f"{name} {tag}", nbx=nbx, torch=ref, shape=shape, dtype="bfloat16", flops=flops)

    only = [g for g in os.environ.get("NBX_SWEEP_GROUPS", "").split(",") if g]

    def within_budget(group):
        if only and group.split()[0] not in only:
            return False
        if time.perf_counter() - start < _SWEEP_BUDGET_S:
            return True
        h.errors.append({"name": f"sweep linalg {group}", "error": "skipped: past the sweep's time budget"})
        print(f"  {group}: skipped, past the sweep's time budget", flush=True)
        return False

    def gemms(group, m, n, k, cands, ops=("mm", "linear+bias"), nobias=(), nt_cands=None):
        if not within_budget(group):
            return
        a, b, w, bias = h.randn((m, k)), h.randn((k, n)), h.randn((n, k)), h.randn((n,))
        A, B, W, Bias = h.nbx(a), h.nbx(b), h.nbx(w), h.nbx(bias)
        flops, shape = 2 * m * n * k, (m, n, k)
        for cand in cands:
            if "mm" in ops:
                timed("mm NN", cand, lambda: M.mm(A, B), lambda: a @ b, shape, flops, m, n, k, "NN")
            if "addmm" in ops:
                timed("addmm NN+bias", cand, lambda: M.addmm(Bias, A, B), lambda: bias.addmm(a, b), shape, flops,
                      m, n, k, "NN")
            if "linear+bias" in ops and nt_cands is None:
                timed("linear NT+bias", cand, lambda: M.linear(A, W, Bias), lambda: F.linear(a, w, bias), shape,
                      flops, m, n, k, "NT")
        for cand in nt_cands or ():
            timed("linear NT+bias", cand, lambda: M.linear(A, W, Bias), lambda: F.linear(a, w, bias), shape,
                  flops, m, n, k, "NT")
        for cand in nobias:
            timed("linear NT", cand, lambda: M.linear(A, W), lambda: F.linear(a, w), shape, flops, m, n, k, "NT")

    def scores(group, batch, m, n, k, cands):
        if not within_budget(group):
            return
        q, kt, kn = h.randn((batch, m, k)), h.randn((batch, n, k)), h.randn((batch, k, n))
        Q, KT, KN = h.nbx(q), h.nbx(kt), h.nbx(kn)
        flops, shape = 2 * batch * m * n * k, (batch, m, n, k)
        for cand in cands:
            timed("bmm NN", cand, lambda: M.bmm(Q, KN), lambda: q.bmm(kn), shape, flops, m, n, k, "NN")
            timed("bmm(q, k^T) NT", cand, lambda: M.bmm(Q, transpose(KT, 1, 2)), lambda: q.bmm(kt.transpose(1, 2)),
                  shape, flops, m, n, k, "NT")

    try:
        scores("prefill scores", 32, 2048, 2048, 128, PREFILL)
        scores("bert scores", 96, 512, 512, 64, SCORES)
        gemms("bert ffn", 4096, 3072, 768, FFN)
        gemms("decode", 16, 4096, 4096, DECODE_NN, ops=("mm", "addmm"), nt_cands=DECODE_NT)
        gemms("4096^3", 4096, 4096, 4096, SQUARE, nobias=[SQUARE[0], SQUARE[3]])
        gemms("8192^3", 8192, 8192, 8192, HUGE_NT, ops=("linear+bias",))
    finally:
        M._config = base
        torch.cuda.empty_cache()
    print(f"  linalg sweep: {time.perf_counter() - start:.1f} s", flush=True)
