"""Correctly rounded or libm-accurate math for kernels, on every backend.

On a GPU Triton's ``tl.exp``/``tl.log`` are fast approximations (an exp2 of ``x * log2(e)``, whose
relative error grows with ``|x|``), ``x / y`` on float32 is approximate division and float ``%``
is not C's fmod. torch's CUDA kernels use CUDA's libm: so do these, through libdevice. The
interpreter has no libdevice, and numpy's functions are already accurate there.
"""

import triton
import triton.language as tl
from triton.language.extra import libdevice

from ..launch import TRAITS

_LIBDEVICE = tl.constexpr(TRAITS.has_libdevice)


@triton.jit
def exp(x):
    if _LIBDEVICE:
        return libdevice.exp(x)
    else:
        return tl.exp(x)


@triton.jit
def log(x):
    if _LIBDEVICE:
        return libdevice.log(x)
    else:
        return tl.log(x)


@triton.jit
def pow(x, y):
    """``x ** y`` for floating ``x`` and ``y`` with libm's special cases."""
    if _LIBDEVICE:
        return libdevice.pow(x, y)
    else:
        return tl.exp2(y * tl.log2(x))


@triton.jit
def div(x, y):
    """IEEE division (round to nearest) for floats; the operator itself for integers."""
    if x.dtype == tl.float32:
        return tl.math.div_rn(x, y)
    else:
        return x / y


@triton.jit
def fmod(x, y):
    """C's fmod for floats (the dividend's sign, exact); C's remainder ``%`` for integers."""
    if _LIBDEVICE and x.dtype.is_floating():
        return libdevice.fmod(x, y)
    else:
        return x % y
