"""Float32-accurate matrix products on tf32 tensor cores (three passes).

An operand is split as ``hi + lo`` with ``hi`` exact in tf32 (10 mantissa bits, rounded to nearest)
and ``lo`` the float32 remainder; ``lo*hi + hi*lo + hi*hi`` (small terms first) then misses only the
``lo*lo`` term, about 2^-22 of the product. This is Triton's ``tf32x3``, spelled out so that a
kernel can split an operand once and reuse the halves (the row FFT splits each DFT table once per
program, not once per product).
"""

import triton
import triton.language as tl


@triton.jit
def split(x):
    """(hi, lo) of a float32 tensor: hi exact in tf32, x == hi + lo exactly for finite x. An infinity
    or NaN is its own hi (rounding its bits would turn an infinity into a NaN and carry some NaNs
    into the sign bit, a zero); its lo is then NaN, which ``dot3`` drops."""
    rounded = ((x.to(tl.uint32, bitcast=True) + 0x1000) & 0xFFFFE000).to(tl.float32, bitcast=True)
    hi = tl.where(x - x == 0.0, rounded, x)
    return hi, x - hi


@triton.jit
def dot3(a_hi, a_lo, b_hi, b_lo, zero):
    """(a_hi + a_lo) @ (b_hi + b_lo) without the lo @ lo term, in three tf32 products; ``zero`` is a
    zero tile of the result's shape. Callers add the result to any running sum themselves: tensor
    cores accumulate in float32 with truncation, which over long chains (K = 400) cost ~1e-5."""
    small = tl.dot(a_hi, b_lo, tl.dot(a_lo, b_hi, zero, input_precision="tf32"), input_precision="tf32")
    # An infinite input makes its lo part NaN (inf - inf); the hi product alone carries the infinity.
    small = tl.where(small == small, small, 0.0)
    return tl.dot(a_hi, b_hi, small, input_precision="tf32")

