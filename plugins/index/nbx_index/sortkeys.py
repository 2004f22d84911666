"""Sort keys shared by ``sort`` and ``topk``: values as int32 in torch's order, and packed keys.

A packed key is ``key32(value) << 32 | position``: distinct per element, so ascending order of
packed keys is a stable sort, and ``key & LOW`` gives the position back.
"""

# nbx_core.runtime.launch picks the backend, which must happen before Triton is first imported.
import nbx_core.runtime.launch  # noqa: F401

# isort: split
import triton
import triton.language as tl

PAD = tl.constexpr(2**63 - 1)
"""The packed key of a lane past a row's end: larger than every real key."""
LOW = tl.constexpr(0xFFFFFFFF)
"""Mask of the position in a packed key's low 32 bits."""


@triton.jit
def key32(x, DESC: tl.constexpr):
    """Values as int32 whose signed order is torch's sort order (NaN largest, -0.0 == 0.0): the
    magnitude bits, negated for negative values. Half types keep their own 16 bits, so that their
    keys span 2**16 values (topk bisects over them). Bit tests only: no float compare to trust."""
    if x.dtype.is_floating():
        if x.dtype.primitive_bitwidth == 16:
            bits = x.to(tl.int16, bitcast=True).to(tl.int32)
            mag: tl.constexpr = 0x7FFF
            inf: tl.constexpr = 0x7C00 if x.dtype.is_fp16() else 0x7F80
        else:
            bits = x.to(tl.float32).to(tl.int32, bitcast=True)
            mag: tl.constexpr = 0x7FFFFFFF
            inf: tl.constexpr = 0x7F800000
        a = bits & mag
        k = tl.where(a > inf, mag, tl.where(bits < 0, -a, a))
    else:
        k = x.to(tl.int32)
    if DESC:
        k = ~k
    return k
