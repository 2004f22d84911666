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
