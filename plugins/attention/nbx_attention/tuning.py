"""nbx-attention's sweeps (``nbx tune --family attention``, ``benchmarks/sweep.py``): the flash
kernel, its key splits, and softmax.

Flash: a shape is ``BxHxLxSxD``: batch, heads, query and key lengths, head dim; a shape with L == S
is tuned causal and unmasked, any other unmasked. Candidates: the (BLOCK_M, BLOCK_N, warps, stages)
tiles the benchmark compared for the head dim (decoding tiles where L is 16 or less), with the
rule's FOLD_SCALE and HEAVY_FIRST; then the rule's tiles with FOLD_SCALE flipped and, causal, with
HEAVY_FIRST flipped. A candidate runs the portable kernel (``config=``), also where the
warp-specialized kernel would take the shape: the ``shipped`` timing of benchmarks/sweep.py shows that.

Key splits: a shape is ``BxHxLxSxD`` too (decoding: L small, S long), unmasked, tried at programs
per SM below which the keys split (0: never) with the looked-up tiles. Softmax: a shape is
``ROWSxN``, softmax over the last dim, tried at rows per program (as ``TILE``) by warps.
"""

from __future__ import annotations

import math

import numpy as np

from nbx_core.runtime.tuner import Case, Shape, Sweep, randn, sweep_shape
from nbx_core.tensor import NBXTensor, empty_tensor

from .flash_attention import FLASH, SPLIT, flash_forward
from .softmax import SOFTMAX, softmax_block, softmax_rows

_TILES = {
    128: [(128, 64, 8, 3), (128, 128, 8, 3), (64, 64, 4, 3), (128, 128, 8, 4), (64, 128, 4, 3)],
    64: [(128, 64, 4, 3), (64, 64, 4, 3), (128, 64, 8, 3), (64, 128, 4, 3), (64, 32, 4, 3), (128, 32, 4, 3)],
}
_DECODE = [(16, 64, 4, 4), (16, 64, 4, 5), (16, 64, 4, 6), (16, 32, 4, 8), (16, 64, 8, 4)]


def candidates(dtype: str, L: int, S: int, D: int, causal: bool) -> list[dict[str, int]]:
    """The candidates of one case (see the module's doc)."""
    rule = FLASH.rule(dtype, L, S, D, D, causal)
    tiles = _DECODE if L <= 16 else _TILES.get(D, [])
    out = [{**rule, **dict(zip(("BLOCK_M", "BLOCK_N", "num_warps", "num_stages"), t, strict=True))} for t in tiles]
    out.append({**rule, "FOLD_SCALE": 1 - rule["FOLD_SCALE"]})
    if causal:
        out.append({**rule, "HEAVY_FIRST": 1 - rule["HEAVY_FIRST"]})
    return out


def _operands(shape: Shape, dtype: str) -> tuple[NBXTensor, NBXTensor, NBXTensor, NBXTensor]:
    """q, k, v of a ``BxHxLxSxD`` shape, and the output."""
    sweep_shape(shape, "attention", "BxHxLxSxD", (5,))
    B, H, L, S, D = shape
    rng = np.random.default_rng(0)
    q, k, v = randn((B, H, L, D), dtype, rng), randn((B, H, S, D), dtype, rng), randn((B, H, S, D), dtype, rng)
    return q, k, v, empty_tensor((B, H, L, D), q.dtype, q.device)


def _cases(shape: Shape, dtype: str) -> list[Case]:
    q, k, v, out = _operands(shape, dtype)
    B, H, L, S, D = shape
    cases = []
    for causal in (True, False) if L == S else (False,):

        def run(cfg: dict[str, int] | None, causal: bool = causal) -> NBXTensor:
            flash_forward(q, k, v, None, out, None, scale=1 / math.sqrt(D), causal=causal, masked_lse=0.0, config=cfg)
            return out

        cases.append(
            Case(
                f"{'causal' if causal else 'full'} {'x'.join(map(str, shape))} {dtype}",
                (dtype, L, S, D, D, causal),
                run,
                candidates(dtype, L, S, D, causal),
                ("nn.functional.scaled_dot_product_attention", (q, k, v, None, 0.0, causal)),
            )
        )
    return cases


def _split_cases(shape: Shape, dtype: str) -> list[Case]:
    q, k, v, out = _operands(shape, dtype)
    B, H, L, S, D = shape

    def run(cfg: dict[str, int] | None) -> NBXTensor:
        flash_forward(q, k, v, None, out, None, scale=1 / math.sqrt(D), causal=False, masked_lse=0.0, split_config=cfg)
        return out

    return [
        Case(
            f"split {'x'.join(map(str, shape))} {dtype}",
            (dtype, L, S, D),
            run,
            [{"PROGRAMS_PER_SM": p} for p in (1, 2, 4, 8, 0)],
            ("nn.functional.scaled_dot_product_attention", (q, k, v)),
        )
    ]


def _softmax_cases(shape: Shape, dtype: str) -> list[Case]:
    sweep_shape(shape, "softmax", "ROWSxN", (2,))
    x = randn(shape, dtype, np.random.default_rng(0))
    n = shape[1]
    rows = [1] if n >= 16384 else [1, 2, 4] if n >= 4096 else [4, 8, 16]
    block = softmax_block(n)
    return [
        Case(
            f"softmax {'x'.join(map(str, shape))} {dtype}",
            (dtype, n, block),
            lambda cfg: softmax_rows("softmax", x, -1, x.dtype, x.dtype, log=False, safe=False, config=cfg),
            [{"TILE": r * block, "num_warps": w} for r in rows for w in (4, 8, 16)],
            ("softmax", (x, -1)),
        )
    ]


SWEEPS = [
    Sweep(
        FLASH,
        [(4, 32, 4096, 4096, 128), (16, 12, 512, 512, 64), (16, 32, 1, 4096, 128), (1, 32, 16384, 16384, 128)],
        _cases,
        "BxHxLxSxD",
    ),
    Sweep(SPLIT, [(16, 32, 1, 4096, 128), (1, 32, 1, 32768, 128), (4, 8, 16, 16384, 128)], _split_cases, "BxHxLxSxD"),
    Sweep(SOFTMAX, [(8192, 4096), (4096, 32768), (16384, 768)], _softmax_cases, "ROWSxN"),
]
