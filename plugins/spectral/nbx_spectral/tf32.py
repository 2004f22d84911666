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
    """(hi, lo) of a float32 tensor: hi exact in tf32, x == hi + lo exactly for finite x. A NaN or an
    infinity leaves a NaN in lo (its rounded bits may even carry into the sign bit and make hi a
    zero), and ``dot3`` lets that NaN through to every product it touches, so it is never lost."""
    hi = ((x.to(tl.uint32, bitcast=True) + 0x1000) & 0xFFFFE000).to(tl.float32, bitcast=True)
    return hi, x - hi


@triton.jit
def dot3(a_hi, a_lo, b_hi, b_lo, zero):
    """(a_hi + a_lo) @ (b_hi + b_lo) without the lo @ lo term, in three tf32 products; ``zero`` is a
    zero tile of the result's shape. Callers add the result to any running sum themselves: tensor
    cores accumulate in float32 with truncation, which over long chains (K = 400) cost ~1e-5."""
    # No select on the small terms: a non-finite input's NaN lo must reach the result, and the row
    # FFT has no registers to spare for one (an extra live tile there spills).
    small = tl.dot(a_hi, b_lo, tl.dot(a_lo, b_hi, zero, input_precision="tf32"), input_precision="tf32")
    return tl.dot(a_hi, b_hi, small, input_precision="tf32")
