"""Probe: warp-specialized loops (a producer warp group issuing tensor-descriptor loads, two consumer
warp groups of 64 rows each) where the shipped kernels still trail their targets.

Triton 3.6 warp-specializes a ``tl.range(..., warp_specialize=True)`` loop on sm_90 when its loads
come from tensor descriptors built in the kernel, BLOCK_M is 128 and num_warps is 4 (checked by
compiling for sm_90 and reading ``.reqntid 384`` and ``setmaxnreg`` in the PTX). It silently does
not when a flattened loop, a 4-D descriptor reshaped to 2-D, or a second (tail) loop follows.

- bmm at the prefill-score shape: NBX's warp-specialized bmm under the table's configuration
  (128 x 256 x 64 tiles, row-major tile order, 3 stages) and under other tile orders, tile widths
  and pipeline depths.
- causal attention: the warp-specialized key loop with the causal mask applied on every key block
  (one loop: a second, masked loop, or a branch that masks only the diagonal block, turns the
  specialization off), query tiles in launch order or heaviest first. Its output is off by a
  relative error of 0.19 (results/sweeps/h200-probe-ws.json): the form is a measurement of speed
  only, and benchmarks/probe_causal.py follows it up.

Each variant's output is checked against torch in float32 before it is timed.

    python -m benchmarks.probe_ws --out DIR
"""

from __future__ import annotations

import math
import sys

import torch
import triton
import triton.language as tl

from benchmarks.harness import probe_main

LOG2E = math.log2(math.e)
CAUSAL_SHAPES = [(4, 32, 4096, 128, "sdpa causal"), (1, 32, 16384, 128, "sdpa long causal")]
"""(B, H, S, D, name) of the causal benchmarks the probes time."""


@triton.jit
def _causal_step(q, k_desc, v_desc, start_n, offs_m, m_i, l_i, acc, qk_scale, MASKED: tl.constexpr,
                 BLOCK: tl.constexpr):
    """One key tile of online softmax, masked causally (query rows ``offs_m``) when MASKED."""
    qk = tl.dot(q, k_desc.load([start_n, 0]).T)
    if MASKED:
        qk = tl.where(start_n + tl.arange(0, BLOCK)[None, :] <= offs_m[:, None], qk, float("-inf"))
    m_new = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
    p = tl.math.exp2(qk * qk_scale - m_new[:, None])
    alpha = tl.math.exp2(m_i - m_new)
    l_i = l_i * alpha + tl.sum(p, 1)
    v = v_desc.load([start_n, 0])
    acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
    return m_new, l_i, acc


@triton.jit
def _causal_kernel(q_ptr, k_ptr, v_ptr, o_ptr, H, L, S, qk_scale,
                   sqz, sqh, sqm, skz, skh, skn, svz, svh, svn, soz, soh, som,
                   D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HEAVY_FIRST: tl.constexpr):
    if HEAVY_FIRST:
        # Grid (heads, query tiles): every head's last (longest) query tile launches first.
        zh = tl.program_id(0)
        start_m = tl.num_programs(1) - 1 - tl.program_id(1)
    else:
        start_m = tl.program_id(0)
        zh = tl.program_id(1)
    z = (zh // H).to(tl.int64)
    h = (zh % H).to(tl.int64)
    q_desc = tl.make_tensor_descriptor(q_ptr + z * sqz + h * sqh, [L, D], [sqm, 1], [BLOCK_M, D])
    k_desc = tl.make_tensor_descriptor(k_ptr + z * skz + h * skh, [S, D], [skn, 1], [BLOCK_N, D])
    v_desc = tl.make_tensor_descriptor(v_ptr + z * svz + h * svh, [S, D], [svn, 1], [BLOCK_N, D])
    o_desc = tl.make_tensor_descriptor(o_ptr + z * soz + h * soh, [L, D], [som, 1], [BLOCK_M, D])
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    q = q_desc.load([start_m * BLOCK_M, 0])
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, D], tl.float32)
    hi = tl.minimum(S, (start_m + 1) * BLOCK_M)
    for start_n in tl.range(0, hi, BLOCK_N, warp_specialize=True):
        m_i, l_i, acc = _causal_step(q, k_desc, v_desc, start_n, offs_m, m_i, l_i, acc, qk_scale, True, BLOCK_N)
    o_desc.store([start_m * BLOCK_M, 0], (acc / l_i[:, None]).to(o_ptr.dtype.element_ty))


def _rel_err(out: torch.Tensor, ref: torch.Tensor) -> float:
    return float((out.float() - ref).norm() / ref.norm())


def _tried(h, label: str, fn) -> bool:
    try:
        fn()
        torch.cuda.synchronize()
    except Exception as e:  # a configuration that does not compile or fit is reported, not fatal
        h.errors.append({"name": label, "error": f"{type(e).__name__}: {e}"})
        print(f"  {label}: FAILED {type(e).__name__}: {str(e)[:200]}", flush=True)
        return False
    return True


def _causal(h, B: int, H: int, S: int, D: int, name: str) -> None:
    q, k, v = (h.randn((B, H, S, D)) for _ in range(3))
    scale = 1 / math.sqrt(D)
    flops = 2 * B * H * S * S * D
    ref = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=True)
    for heavy, stages in ((False, 2), (True, 2)):
        out = torch.full_like(q, float("nan"))
        grid = (B * H, S // 128) if heavy else (S // 128, B * H)

        def fn(out=out, grid=grid, heavy=heavy, stages=stages):
            _causal_kernel[grid](q, k, v, out, H, S, S, scale * LOG2E, *q.stride()[:3], *k.stride()[:3],
                                 *v.stride()[:3], *out.stride()[:3], D=D, BLOCK_M=128, BLOCK_N=128,
                                 HEAVY_FIRST=heavy, num_warps=4, num_stages=stages)

        label = f"{name} heavy_first={heavy} stages={stages}"
        if _tried(h, label, fn):
            h.compare(label, nbx=fn, torch=lambda: torch.nn.functional.scaled_dot_product_attention(
                q, k, v, is_causal=True), shape=(B, H, S, S, D), dtype="bfloat16", flops=flops,
                note=f"rel err {_rel_err(out, ref):.2e}")


def _bmm(h, batches: int, m: int, n: int, k: int, b_t: bool) -> None:
    from nbx_linalg.matmul import gemm

    from nbx_core.ops.views import transpose

    a = h.randn((batches, m, k))
    b = h.randn((batches, n, k)) if b_t else h.randn((batches, k, n))
    bb = b.transpose(1, 2) if b_t else b
    A, B = h.nbx(a), h.nbx(b)
    BB = transpose(B, 1, 2) if b_t else B
    ref = torch.bmm(a.float(), bb.float())
    flops = 2 * batches * m * n * k
    layout = "NT" if b_t else "NN"
    for bn, group, stages in ((256, 1, 3), (256, 8, 3), (128, 1, 4), (128, 8, 4)):
        cfg = {"BLOCK_M": 128, "BLOCK_N": bn, "BLOCK_K": 64, "GROUP_M": group, "num_warps": 4, "num_stages": stages,
               "PERSISTENT": 1, "WS": 1}
        label = f"nbx bmm {batches}x{m}x{n}x{k} {layout} tiles={(128, bn, 64)} group={group} stages={stages}"
        out = torch.full((batches, m, n), float("nan"), dtype=torch.bfloat16, device="cuda")
        OUT = h.nbx(out)
        if _tried(h, label, lambda cfg=cfg, OUT=OUT: gemm("probe", A, BB, config=cfg, out=OUT)):
            h.compare(label, nbx=lambda cfg=cfg, OUT=OUT: gemm("probe", A, BB, config=cfg, out=OUT),
                      torch=lambda: torch.bmm(a, bb), shape=(batches, m, n, k), dtype="bfloat16", flops=flops,
                      note=f"rel err {_rel_err(out, ref):.2e}")


def run(h) -> None:
    _bmm(h, 32, 2048, 2048, 128, False)
    _bmm(h, 32, 2048, 2048, 128, True)
    for shape in CAUSAL_SHAPES:
        _causal(h, *shape)


if __name__ == "__main__":
    sys.exit(probe_main(__doc__, "ws", run))
