"""Program order of tiled GEMM-like kernels (matmul, implicit-GEMM convolution)."""

from .. import launch as _launch  # noqa: F401  (configures Triton before it is imported)

# isort: split
import triton
import triton.language as tl


@triton.jit
def grouped_tile(pid, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    """(row tile, column tile) of program ``pid`` in grouped order: GROUP_M row tiles sweep every
    column tile in turn, so the tiles running at once share their operand tiles in L2."""
    num_m = tl.cdiv(M, BLOCK_M)
    num_n = tl.cdiv(N, BLOCK_N)
    width = GROUP_M * num_n
    first_m = (pid // width) * GROUP_M
    size_m = tl.minimum(num_m - first_m, GROUP_M)
    return first_m + (pid % width) % size_m, (pid % width) // size_m
