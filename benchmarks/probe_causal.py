"""Probe: where the diagonal key tile of causal attention can go so that Triton still
warp-specializes the key loop (a producer warp group of tensor-descriptor loads, two consumer warp
groups of 64 query rows).

Forms, each at B4 H32 S4096 and B1 H32 S16384 (D128, bf16), query tiles heaviest first:

- ``mask every block``: one loop over all visible key tiles, the causal mask applied on each;
- ``diagonal first``: the masked diagonal tile as straight-line code before an unmasked loop;
- ``diagonal last``: the same after the loop.

Each result notes whether the PTX has the producer warp group (``.reqntid 384``) and the output's
error against torch in float32. On the H200 under Triton 3.6 (results/sweeps/h200-probe-causal.json)
both diagonal forms crash the compiler's warp-specialization pass ("PassManager::run failed" in
NVGPUWarpSpecialization), as they do under Triton 3.9 compiling for sm_90 without a GPU; the
masked-every-block form specializes but its output is off by a relative error of 0.19 at both
shapes. The same loop without the mask, shipped as nbx_attention.warp_specialized, matches torch
on the H200; whether the compiler or this probe's mask is at fault is not settled (the form was
not run with ``warp_specialize=False``). It is no faster than the shipped portable kernel at
S4096 (1.176 ms against 1.157 in results/attention.json). Causal attention therefore stays on the portable kernel.

    python -m benchmarks.probe_causal --out DIR
"""

from __future__ import annotations

import math
import sys

import torch
import triton
import triton.language as tl

from benchmarks.harness import probe_main
from benchmarks.probe_ws import CAUSAL_SHAPES, _causal_step, _rel_err, _tried

LOG2E = math.log2(math.e)
FORMS = {0: "mask every block", 1: "diagonal first", 2: "diagonal last"}


@triton.jit
def _causal_kernel(q_ptr, k_ptr, v_ptr, o_ptr, H, L, S, qk_scale,
                   sqz, sqh, sqm, skz, skh, skn, svz, svh, svn, soz, soh, som,
                   D: tl.constexpr, BLOCK: tl.constexpr, FORM: tl.constexpr):
    start_m = tl.num_programs(0) - 1 - tl.program_id(0)
    zh = tl.program_id(1)
    z = (zh // H).to(tl.int64)
    h = (zh % H).to(tl.int64)
    q_desc = tl.make_tensor_descriptor(q_ptr + z * sqz + h * sqh, [L, D], [sqm, 1], [BLOCK, D])
    k_desc = tl.make_tensor_descriptor(k_ptr + z * skz + h * skh, [S, D], [skn, 1], [BLOCK, D])
    v_desc = tl.make_tensor_descriptor(v_ptr + z * svz + h * svh, [S, D], [svn, 1], [BLOCK, D])
    o_desc = tl.make_tensor_descriptor(o_ptr + z * soz + h * soh, [L, D], [som, 1], [BLOCK, D])
    offs_m = start_m * BLOCK + tl.arange(0, BLOCK)
    diag = start_m * BLOCK
    q = q_desc.load([diag, 0])
    m_i = tl.full([BLOCK], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK], tl.float32)
    acc = tl.zeros([BLOCK, D], tl.float32)
    if FORM == 1:
        m_i, l_i, acc = _causal_step(q, k_desc, v_desc, diag, offs_m, m_i, l_i, acc, qk_scale, True, BLOCK)
    # Form 0 runs the diagonal tile inside the loop, masking every tile.
    hi = diag + BLOCK if FORM == 0 else diag
    for start_n in tl.range(0, hi, BLOCK, warp_specialize=True):
        m_i, l_i, acc = _causal_step(q, k_desc, v_desc, start_n, offs_m, m_i, l_i, acc, qk_scale, FORM == 0, BLOCK)
    if FORM == 2:
        m_i, l_i, acc = _causal_step(q, k_desc, v_desc, diag, offs_m, m_i, l_i, acc, qk_scale, True, BLOCK)
    o_desc.store([diag, 0], (acc / l_i[:, None]).to(o_ptr.dtype.element_ty))


def _causal(h, B: int, H: int, S: int, D: int, name: str) -> None:
    q, k, v = (h.randn((B, H, S, D)) for _ in range(3))
    scale = 1 / math.sqrt(D)
    ref = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=True)
    for form, label in FORMS.items():
        out = torch.full_like(q, float("nan"))

        def fn(out=out, form=form):
            return _causal_kernel[(S // 128, B * H)](q, k, v, out, H, S, S, scale * LOG2E, *q.stride()[:3],
                                                     *k.stride()[:3], *v.stride()[:3], *out.stride()[:3], D=D,
                                                     BLOCK=128, FORM=form, num_warps=4, num_stages=2)

        tag = f"{name} {label}"
        if not _tried(h, tag, fn):
            continue
        specialized = ".reqntid 384" in fn().asm["ptx"]  # the launch returns its (cached) compiled kernel
        h.compare(tag, nbx=fn, torch=lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True),
                  shape=(B, H, S, S, D), dtype="bfloat16", flops=2 * B * H * S * S * D,
                  note=f"warp-specialized={specialized} rel err {_rel_err(out, ref):.2e}")


def run(h) -> None:
    for shape in CAUSAL_SHAPES:
        _causal(h, *shape)


if __name__ == "__main__":
    sys.exit(probe_main(__doc__, "causal", run))
