"""Hopper's GEMM for half types: persistent, warp-specialized programs over tensor descriptors.

One program per SM walks the output tiles of a stack of row-major matrices. Its tile loop is
warp-specialized (Triton 3.6 and later on sm_90): a producer warp group issues the copy engine's
loads of the next tiles' operands while two consumer warp groups, 64 rows each, run the wgmmas of
this tile and store it, so loads, products and stores of consecutive tiles overlap. It is for
products whose output dominates, such as prefill attention scores (a few K steps, a large output),
where a flattened pointer-load loop stalls on its stores. The number of K steps is a compile-time
constant (a kernel per value; the products this serves have few, and at least two) and tiles go
in row-major order (GROUP_M 1: every operand of a 2048 x 2048 product fits in L2, and grouping
only cost time).

The batch is folded into the rows of 2-D descriptors ((batches * M, K) and so on), so
:func:`applies` asks for contiguous stacks and for tiles that never straddle two matrices;
``gemm`` falls back to its general kernel everywhere else. Warp specialization needs BLOCK_M 128
and four warps; a second loop after the tile loop silently turns it off, so the epilogue is only
``alpha``.
"""

from __future__ import annotations

from nbx_core import dtypes as D
from nbx_core.runtime.kernels.descriptors import tma_readable
from nbx_core.runtime.kernels.dot import dot_operand
from nbx_core.runtime.kernels.tiles import grouped_tile
from nbx_core.runtime.launch import launch
from nbx_core.tensor import NBXTensor

# isort: split
import triton
import triton.language as tl

_INT32_MAX = 2**31 - 1


@triton.jit
def _ws_gemm_kernel(a_ptr, b_ptr, out_ptr, batches, M, N, K, sa, sb, so, alpha,
                    K_STEPS: tl.constexpr, B_T: tl.constexpr, SCALE: tl.constexpr, BLOCK_M: tl.constexpr,
                    BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    # A is (batches * M, K) with rows sa apart; B is (batches * K, N) or, B_T, (batches * N, K),
    # rows sb apart; the output (batches * M, N), rows so apart. The copy engine zero-fills reads
    # past the stack's edges and clips writes there.
    a_desc = tl.make_tensor_descriptor(a_ptr, [batches * M, K], [sa, 1], [BLOCK_M, BLOCK_K])
    if B_T:
        b_desc = tl.make_tensor_descriptor(b_ptr, [batches * N, K], [sb, 1], [BLOCK_N, BLOCK_K])
    else:
        b_desc = tl.make_tensor_descriptor(b_ptr, [batches * K, N], [sb, 1], [BLOCK_K, BLOCK_N])
    o_desc = tl.make_tensor_descriptor(out_ptr, [batches * M, N], [so, 1], [BLOCK_M, BLOCK_N])
    tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
    for t in tl.range(tl.program_id(0), batches * tiles, tl.num_programs(0), warp_specialize=True):
        batch = t // tiles
        pid_m, pid_n = grouped_tile(t % tiles, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        row = batch * M + pid_m * BLOCK_M
        col = pid_n * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
        # K_STEPS is cdiv(K, BLOCK_K), known to the compiler, so the short reductions this kernel
        # is for unroll, which made them faster.
        for k in range(0, K_STEPS):
            a = a_desc.load([row, k * BLOCK_K])
            if B_T:
                b = b_desc.load([batch * N + col, k * BLOCK_K]).T
            else:
                b = b_desc.load([batch * K + k * BLOCK_K, col])
            acc = tl.dot(dot_operand(a), dot_operand(b), acc)
        if SCALE:
            acc = acc * alpha
        o_desc.store([row, col], acc.to(out_ptr.dtype.element_ty))


def applies(a: NBXTensor, b: NBXTensor, out: NBXTensor, mnk: tuple[int, int, int], a_st: tuple[int, ...],
            b_st: tuple[int, ...], o_st: tuple[int, ...], batch_strides: tuple[tuple[int, ...], ...],
            batches: int, config: dict[str, int], b_t: bool) -> bool:
    """Whether this kernel computes the (M, N, K) = ``mnk`` product ``a @ b`` into ``out`` under
    tile ``config``.

    ``a_st``, ``b_st``, ``o_st`` are the operands' strides as ``gemm`` sees them (batch dims
    broadcast) and ``batch_strides`` their coalesced batch strides, (a, b, out), at most one each.
    Needs float16/bfloat16 operands and output of their dtype (a float32 output tile would not fit
    in shared memory beside the pipeline); A and the output row-major, B row-major or, ``b_t``, stored
    (N, K); every operand TMA-readable and each stack of matrices dense (matrix i + 1 right after
    matrix i); tiles that stay inside one matrix (M a multiple of BLOCK_M and, for a row-major B, K
    a multiple of BLOCK_K, unless there is one matrix); BLOCK_M 128 and four warps (what warp
    specialization splits into two consumers); at least two K steps (Triton 3.6's warp
    specialization fails to compile a one-step K loop); and coordinates that fit the copy engine's
    int32.
    """
    m, n, k = mnk
    bm, bk = config["BLOCK_M"], config["BLOCK_K"]
    if a.dtype not in (D.float16, D.bfloat16) or b.dtype is not a.dtype or out.dtype is not a.dtype:
        return False
    if bm != 128 or config["num_warps"] != 4 or max(batches * m, batches * k, batches * n) > _INT32_MAX:
        return False
    if triton.cdiv(k, bk) < 2:
        return False
    if len(batch_strides[0]) > 1:
        return False
    sa, sb, so = a_st[-2], (b_st[-1] if b_t else b_st[-2]), o_st[-2]
    if a_st[-1] != 1 or o_st[-1] != 1 or (b_st[-2] if b_t else b_st[-1]) != 1:
        return False
    if batches > 1:
        a_bs, b_bs, o_bs = (s[0] for s in batch_strides)
        if (a_bs, b_bs, o_bs) != (m * sa, (n if b_t else k) * sb, m * so):
            return False
        if m % bm or (not b_t and k % bk):
            return False
    return tma_readable(a, 1, sa) and tma_readable(b, 1, sb) and tma_readable(out, 1, so)


def ws_gemm(a: NBXTensor, b: NBXTensor, out: NBXTensor, mnk: tuple[int, int, int], a_st: tuple[int, ...],
            b_st: tuple[int, ...], o_st: tuple[int, ...], batches: int, alpha: float, config: dict[str, int],
            b_t: bool, programs: int) -> None:
    """``out = alpha * (a @ b)`` on at most ``programs`` persistent programs; :func:`applies` must
    hold (and the caller provides descriptor memory)."""
    m, n, k = mnk
    tiles = triton.cdiv(m, config["BLOCK_M"]) * triton.cdiv(n, config["BLOCK_N"])
    launch(_ws_gemm_kernel, (min(programs, batches * tiles),), a, b, out, batches, m, n, k,
           a_st[-2], b_st[-1] if b_t else b_st[-2], o_st[-2], float(alpha),
           K_STEPS=triton.cdiv(k, config["BLOCK_K"]), B_T=b_t, SCALE=alpha != 1, BLOCK_M=config["BLOCK_M"],
           BLOCK_N=config["BLOCK_N"], BLOCK_K=config["BLOCK_K"], GROUP_M=config["GROUP_M"],
           num_warps=config["num_warps"], num_stages=config["num_stages"])
