"""Elementwise benchmarks (H200): add, mul, gelu, silu, sigmoid and where on 2^28 elements in
bfloat16 and float32, a broadcast row vector + matrix, and a transposed input, against torch eager.

Targets (issue 6): >= 1.0x torch and >= 90% of device copy bandwidth on the 2^28 cases; >= 1.0x
(broadcast) and >= 0.8x (transposed) torch. ``bytes`` counts bytes read + written.
"""

from __future__ import annotations

import torch

N = 1 << 28
ROWS, COLS = 1 << 14, 1 << 14


def _flat(h, ops: dict, dtype: str) -> None:
    """The 2^28-element cases in one dtype."""
    size = torch.empty((), dtype=getattr(torch, dtype)).element_size()
    a, b, c = h.randn((N,), dtype), h.randn((N,), dtype), h.randn((N,), "bool")
    A, B, C = h.nbx(a), h.nbx(b), h.nbx(c)
    binary = dict(shape=(N,), dtype=dtype, bytes=3 * N * size)
    h.compare("add", nbx=lambda: ops["add"](A, B), torch=lambda: torch.add(a, b), **binary)
    h.compare("mul", nbx=lambda: ops["mul"](A, B), torch=lambda: torch.mul(a, b), **binary)
    h.compare(
        "where",
        nbx=lambda: ops["where"](C, A, B),
        torch=lambda: torch.where(c, a, b),
        shape=(N,),
        dtype=dtype,
        bytes=3 * N * size + N,
    )
    unary = dict(shape=(N,), dtype=dtype, bytes=2 * N * size)
    h.compare("gelu", nbx=lambda: ops["gelu"](A), torch=lambda: torch.nn.functional.gelu(a), **unary)
    h.compare("silu", nbx=lambda: ops["silu"](A), torch=lambda: torch.nn.functional.silu(a), **unary)
    h.compare("sigmoid", nbx=lambda: ops["sigmoid"](A), torch=lambda: torch.sigmoid(a), **unary)


def _strided(h, add) -> None:
    """Broadcast row vector + matrix, and a transposed operand, in bfloat16."""
    m, row = h.randn((ROWS, COLS), "bfloat16"), h.randn((1, COLS), "bfloat16")
    M, R = h.nbx(m), h.nbx(row)
    h.compare(
        "add broadcast row+matrix",
        nbx=lambda: add(M, R),
        torch=lambda: torch.add(m, row),
        shape=((ROWS, COLS), (1, COLS)),
        dtype="bfloat16",
        bytes=2 * (2 * ROWS * COLS + COLS),
    )
    mt = h.randn((COLS, ROWS), "bfloat16")
    MT = h.nbx(mt)
    h.compare(
        "add transposed",
        nbx=lambda: add(MT.t(), M),
        torch=lambda: torch.add(mt.t(), m),
        shape=((ROWS, COLS), (ROWS, COLS)),
        dtype="bfloat16",
        bytes=2 * 3 * ROWS * COLS,
    )


def run(h) -> None:
    """Record every comparison on ``h`` (a benchmarks.harness.Harness)."""
    from nbx_core.registry import get_registry

    reg = get_registry()
    ops = {name: reg.lookup(f"aten::{name}") for name in ("add", "mul", "where", "gelu", "silu", "sigmoid")}
    for dtype in ("bfloat16", "float32"):
        _flat(h, ops, dtype)
    _strided(h, ops["add"])
