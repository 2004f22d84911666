"""Hopper's flash attention for unmasked, non-causal half-type attention at head dim 128.

The key loop is warp-specialized (Triton 3.6 and later on sm_90): a producer warp group issues
the copy engine's loads of the next key and value tiles while two consumer warp groups, 64 query
rows each, run the two products and the online softmax of this one. It is faster than the portable
kernel at head dim 128 and was not at head dim 64, so the portable kernel serves head dim 64 along
with everything else :func:`applies` refuses.

Tiles load through 2-D descriptors over one (z, h) head's rows, so :func:`applies` asks for
strides the copy engine can read and a key length of whole 128-key tiles (no key is masked: a
zero-filled key would score 0, not -inf). The scale rides in the softmax's fused multiply-add
(scores are in base 2, the scale pre-multiplied by log2(e)).
"""

from __future__ import annotations

import math

from nbx_core import dtypes as D
from nbx_core.runtime.kernels.descriptors import descriptor_memory, tma_readable
from nbx_core.runtime.kernels.dot import dot_operand
from nbx_core.runtime.launch import cdiv, launch
from nbx_core.tensor import NBXTensor

# isort: split
import triton
import triton.language as tl

BLOCK_M, BLOCK_N, HEAD_DIM, WARPS, STAGES = 128, 128, 128, 4, 2
"""The one configuration: BLOCK_M 128 over four warps is what the compiler splits between two
consumers; 64-key tiles were slower."""


@triton.jit
def _ws_attn_kernel(q_ptr, k_ptr, v_ptr, o_ptr, H, L, S, GK, GV, qk_scale,
                    sqz, sqh, sqm, skz, skh, skn, svz, svh, svn, soz, soh, som,
                    DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    start_m = tl.program_id(0)
    zh = tl.program_id(1)
    z = (zh // H).to(tl.int64)
    h = zh % H
    q_desc = tl.make_tensor_descriptor(q_ptr + z * sqz + h.to(tl.int64) * sqh, [L, DIM], [sqm, 1], [BLOCK_M, DIM])
    k_desc = tl.make_tensor_descriptor(k_ptr + z * skz + (h // GK).to(tl.int64) * skh, [S, DIM], [skn, 1],
                                       [BLOCK_N, DIM])
    v_desc = tl.make_tensor_descriptor(v_ptr + z * svz + (h // GV).to(tl.int64) * svh, [S, DIM], [svn, 1],
                                       [BLOCK_N, DIM])
    o_desc = tl.make_tensor_descriptor(o_ptr + z * soz + h.to(tl.int64) * soh, [L, DIM], [som, 1], [BLOCK_M, DIM])
    # Query rows past L load as zeros and are clipped at the store.
    q = q_desc.load([start_m * BLOCK_M, 0])
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, DIM], tl.float32)
    for start_n in tl.range(0, S, BLOCK_N, warp_specialize=True):
        qk = tl.dot(dot_operand(q), dot_operand(k_desc.load([start_n, 0]).T))
        m_new = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
        p = tl.math.exp2(qk * qk_scale - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = v_desc.load([start_n, 0])
        acc = tl.dot(dot_operand(p.to(v.dtype)), dot_operand(v), acc * alpha[:, None])
        m_i = m_new
    o_desc.store([start_m * BLOCK_M, 0], (acc / l_i[:, None]).to(o_ptr.dtype.element_ty))


def _readable(t: NBXTensor) -> bool:
    z, h, rows, inner = t.stride()
    return tma_readable(t, inner, rows, (z, h))


def applies(q: NBXTensor, k: NBXTensor, v: NBXTensor, mask: NBXTensor | None, out: NBXTensor,
            lse: NBXTensor | None, *, scale: float, causal: bool) -> bool:
    """Whether this kernel computes the attention ``flash_forward`` was asked for: no mask, not
    causal, no logsumexp, float16/bfloat16, head dim 128 for queries and values, at least one query
    tile, a key length of whole key tiles, a finite positive scale, every operand readable by the
    copy engine.

    The logsumexp (the fused variants' second output) is left to the portable kernel: stored after
    the warp-specialized loop, the second consumer's rows of it came out wrong on the H200 (Triton
    3.6), while the output tile beside it was right.
    """
    L, E = q.shape[2:]
    S, EV = k.shape[2], v.shape[3]
    if mask is not None or lse is not None or causal or q.dtype not in (D.float16, D.bfloat16):
        return False
    if (E, EV) != (HEAD_DIM, HEAD_DIM):
        return False
    if L < BLOCK_M or S == 0 or S % BLOCK_N or not 0 < scale < math.inf:
        return False
    return all(t.dtype is q.dtype and _readable(t) for t in (q, k, v, out))


def ws_forward(q: NBXTensor, k: NBXTensor, v: NBXTensor, out: NBXTensor, *, qk_scale: float) -> None:
    """``flash_forward`` for what :func:`applies` accepts; ``qk_scale`` is the scale times log2(e)."""
    Z, H, L, E = q.shape
    with descriptor_memory(q.device):
        launch(_ws_attn_kernel, (cdiv(L, BLOCK_M), Z * H), q, k, v, out, H, L, k.shape[2], H // k.shape[1],
               H // v.shape[1], qk_scale, *q.stride()[:3], *k.stride()[:3], *v.stride()[:3], *out.stride()[:3],
               DIM=E, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, num_warps=WARPS, num_stages=STAGES)
