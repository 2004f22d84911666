"""nbx-core's sweeps (``nbx tune --family core``, ``benchmarks/sweep.py``): generated pointwise kernels.

A shape is ``N``, a flat tensor of N elements, tuned in bfloat16 and float32 (the key is the widest
operand's itemsize). Each runs memory-bound math (add, mul, where) and math heavier in compute
(sigmoid, silu, gelu), written here as the elementwise plugin writes them, through
:func:`nbx_core.runtime.pointwise.pointwise` with each candidate (bytes per thread, warps).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import triton
import triton.language as tl

from .. import dtypes as D
from ..runtime.pointwise import POINTWISE, pointwise
from ..runtime.tuner import Case, Shape, Sweep, randn, sweep_shape


@triton.jit
def _positive(x, sc):
    return x > 0


@triton.jit
def _add(x, y, sc):
    return x + y


@triton.jit
def _mul(x, y, sc):
    return x * y


@triton.jit
def _where(c, x, y, sc):
    return tl.where(c != 0, x, y)


@triton.jit
def _sigmoid(x, sc):
    return 1.0 / (1.0 + tl.exp(-x))


@triton.jit
def _silu(x, sc):
    return x / (1.0 + tl.exp(-x))


@triton.jit
def _gelu(x, sc):
    return 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476))


CANDIDATES = [
    {"THREAD_BYTES": b, "num_warps": w}
    for b, w in [(4, 4), (8, 4), (8, 8), (16, 2), (16, 4), (16, 8), (32, 4), (64, 2)]
]


def _cases(shape: Shape, dtype: str) -> list[Case]:
    sweep_shape(shape, "pointwise", "N (elements)", (1,))
    rng = np.random.default_rng(0)
    a, b = randn(shape, dtype, rng), randn(shape, dtype, rng)
    c = pointwise("tune", _positive, randn(shape, "float32", rng), out_dtype=D.bool_)
    widest = D.as_dtype(dtype).itemsize
    name = f"{shape[0]} {dtype}"
    ops = [
        ("add", _add, (a, b), ("add", (a, b))),
        ("mul", _mul, (a, b), ("mul", (a, b))),
        ("where", _where, (c, a, b), ("where", (c, a, b))),
        ("sigmoid", _sigmoid, (a,), ("sigmoid", (a,))),
        ("silu", _silu, (a,), ("nn.functional.silu", (a,))),
        ("gelu", _gelu, (a,), ("nn.functional.gelu", (a,))),
    ]

    def runner(op: str, fn: Any, args: tuple) -> Callable[[Any], Any]:
        return lambda cfg: pointwise(op, fn, *args, dtype=D.as_dtype(dtype), config=cfg)

    return [Case(f"{op} {name}", (widest,), runner(op, fn, args), CANDIDATES, ref) for op, fn, args, ref in ops]


SWEEPS = [Sweep(POINTWISE, [(1 << 28,)], _cases, "N (elements)", ("bfloat16", "float32"))]
