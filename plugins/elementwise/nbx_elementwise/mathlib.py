"""Device math built from the ``tl.*`` primitives Triton's interpreter runs (no libdevice).

Each function works in the dtype of its argument (float32 or float64) and is written for
accuracy at that precision: small-argument cancellation is avoided (expm1, log1p, tanh) and
inverse trigonometry uses Cephes' range reduction with a rational approximation.
"""

import triton
import triton.language as tl

import nbx_core.runtime.launch  # noqa: F401  (configures Triton before the kernels below)
from nbx_core.runtime.kernels import precise as P

PI = tl.constexpr(3.141592653589793)
PIO2 = tl.constexpr(1.5707963267948966)
PIO4 = tl.constexpr(0.7853981633974483)
LN2 = tl.constexpr(0.6931471805599453)


@triton.jit
def signbit(x):
    """Whether ``x`` is negative, -0.0 included (1/-0 is -inf)."""
    return (x < 0) | ((x == 0) & (1.0 / tl.where(x == 0, x, 1.0) < 0))


@triton.jit
def expm1(x):
    """exp(x) - 1 without cancellation near 0 (Kahan: (u - 1) * x / log(u), u = exp(x))."""
    u = P.exp(x)
    um1 = u - 1.0
    safe = tl.where((um1 == 0) | (u == float("inf")), 1.0, um1)
    r = um1 * x / P.log(tl.where(safe == 1.0, 2.0, u))
    r = tl.where(um1 == 0, x, r)
    r = tl.where(um1 == -1.0, -1.0, r)
    return tl.where(u == float("inf"), u, r)


@triton.jit
def log1p(x):
    """log(1 + x) without cancellation near 0 (log(u) * x / (u - 1), u = 1 + x)."""
    u = 1.0 + x
    d = u - 1.0
    r = P.log(u) * x / tl.where(d == 0, 1.0, d)
    r = tl.where(d == 0, x, r)
    return tl.where(u == float("inf"), u, r)


@triton.jit
def tanh(x):
    """tanh via expm1(-2|x|): exact near 0, saturates to ±1, keeps NaN."""
    a = tl.abs(x)
    e = expm1(-2.0 * a)
    r = -e / (2.0 + e)
    return tl.where(x < 0, -r, r)


@triton.jit
def _atan_pos(a):
    # Cephes atan: reduce a >= 0 to |t| <= 0.66, then a degree 4/5 rational in t^2.
    big = a > 2.414213562373095
    mid = (a > 0.66) & (~big)
    t = tl.where(big, -1.0 / tl.where(a == 0, 1.0, a), tl.where(mid, (a - 1.0) / (a + 1.0), a))
    base = tl.where(big, PIO2, tl.where(mid, PIO4, 0.0))
    z = t * t
    p = (
        ((-8.750608600031904122785e-1 * z - 1.615753718733365076637e1) * z - 7.500855792314704667340e1) * z
        - 1.228866684490136173410e2
    ) * z - 6.485021904942025371773e1
    q = (
        (((z + 2.485846490142306297962e1) * z + 1.650270098316988542046e2) * z + 4.328810604912902668951e2) * z
        + 4.853903996359136964868e2
    ) * z + 1.945506571482613964425e2
    return base + (t + t * z * p / q)


@triton.jit
def atan(x):
    """arctan(x), odd: range reduction on |x|."""
    r = _atan_pos(tl.abs(x))
    return tl.where(x < 0, -r, r)


@triton.jit
def atan2(y, x):
    """atan2(y, x) with C's special cases: signed zeros, infinities, NaN."""
    ax = tl.abs(x)
    ay = tl.abs(y)
    hi = tl.maximum(ax, ay)
    lo = tl.minimum(ax, ay)
    both_inf = (ax == float("inf")) & (ay == float("inf"))
    t = tl.where(both_inf, 1.0, lo / tl.where(hi == 0, 1.0, hi))
    r = _atan_pos(t)
    r = tl.where(ay > ax, PIO2 - r, r)
    r = tl.where(signbit(x), PI - r, r)
    r = tl.where((x != x) | (y != y), x + y, r)
    return tl.where(signbit(y), -r, r)


@triton.jit
def asin(x):
    """arcsin via atan(x / sqrt((1 - x)(1 + x))); NaN outside [-1, 1]."""
    d = tl.sqrt((1.0 - x) * (1.0 + x))
    r = atan(x / tl.where(d == 0, 1.0, d))
    return tl.where(d == 0, tl.where(x < 0, -PIO2, PIO2), r)


@triton.jit
def acos(x):
    """arccos via 2 atan(sqrt((1 - x) / (1 + x))); NaN outside [-1, 1]."""
    s = tl.sqrt((1.0 - x) / tl.where(x == -1.0, 1.0, 1.0 + x))
    return tl.where(x == -1.0, PI, 2.0 * atan(s))


@triton.jit
def asinh(x):
    """arcsinh: log1p form for moderate |x| (exact near 0), log(2|x|) where |x|^2 would overflow."""
    a = tl.abs(x)
    small = log1p(a + a * a / (1.0 + tl.sqrt(1.0 + a * a)))
    r = tl.where(a > 1e10, P.log(a) + LN2, small)
    return tl.where(x < 0, -r, r)


@triton.jit
def acosh(x):
    """arccosh: log1p(t + sqrt(2t + t^2)) with t = x - 1; NaN below 1."""
    t = x - 1.0
    r = log1p(t + tl.sqrt(2.0 * t + t * t))
    return tl.where(x > 1e10, P.log(x) + LN2, r)


@triton.jit
def atanh(x):
    """arctanh: 0.5 log1p(2|x| / (1 - |x|)), odd; ±inf at ±1, NaN beyond."""
    a = tl.abs(x)
    r = 0.5 * log1p(2.0 * a / (1.0 - a))
    return tl.where(x < 0, -r, r)


@triton.jit
def sinh(x):
    """sinh through expm1 (exact near 0); e^(|x|/2) squared where e^|x| alone would overflow."""
    a = tl.abs(x)
    u = expm1(a)
    small = 0.5 * (u + u / (u + 1.0))
    h = P.exp(0.5 * a)
    r = tl.where(a > 20.0, (0.5 * h) * h, small)
    return tl.where(x < 0, -r, r)


@triton.jit
def cosh(x):
    """cosh; e^(|x|/2) squared where e^|x| alone would overflow."""
    a = tl.abs(x)
    e = P.exp(a)
    h = P.exp(0.5 * a)
    return tl.where(a > 20.0, (0.5 * h) * h, 0.5 * (e + 1.0 / e))


@triton.jit
def rint(x):
    """Round half to even (C's nearbyint), for floats."""
    f = tl.floor(x)
    d = x - f
    odd = (f - 2.0 * tl.floor(0.5 * f)) == 1.0
    up = (d > 0.5) | ((d == 0.5) & odd)
    return tl.where(up, f + 1.0, f)


@triton.jit
def trunc(x):
    """Round toward zero, for floats."""
    return tl.where(x < 0, tl.ceil(x), tl.floor(x))


@triton.jit
def sigmoid(x):
    """1 / (1 + e^-x)."""
    return 1.0 / (1.0 + P.exp(-x))
