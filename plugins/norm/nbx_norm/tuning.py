"""nbx-norm's sweeps (``nbx tune --family norm``, ``benchmarks/sweep.py``): the row kernel's launch.

A shape is ``ROWSxN``, rows of N elements normalised over their last dim; each is tuned for layer
norm (weight and bias) and RMS norm (weight). Candidates: rows per program (as ``TILE``, that many
rows' blocks) by warps, around what suits the row length.
"""

from __future__ import annotations

import numpy as np

from nbx_core.runtime.tuner import Case, Shape, Sweep, randn, sweep_shape

from .layer_norm import ROW_NORM, row_block, row_norm


def candidates(n: int) -> list[dict[str, int]]:
    """Rows per program by warps for rows of ``n``: one row for long rows, a few for short ones."""
    block = row_block(n)
    rows = [1] if n >= 32768 else [1, 2, 4] if n >= 4096 else [4, 8, 16]
    warps = [8, 16, 32] if n >= 32768 else [2, 4, 8, 16]
    return [{"TILE": r * block, "num_warps": w} for r in rows for w in warps]


def _cases(shape: Shape, dtype: str) -> list[Case]:
    sweep_shape(shape, "row-norm", "ROWSxN", (2,))
    m, n = shape
    rng = np.random.default_rng(0)
    x, w, b = randn((m, n), dtype, rng), randn((n,), dtype, rng), randn((n,), dtype, rng)
    args = (dtype, n, row_block(n))
    name = f"{m}x{n} {dtype}"
    return [
        Case(
            f"layer_norm {name}",
            args,
            lambda cfg: row_norm("layer_norm", x, [n], w, b, 1e-5, rms=False, stats=False, config=cfg)[0],
            candidates(n),
            ("nn.functional.layer_norm", (x, [n], w, b)),
        ),
        Case(
            f"rms_norm {name}",
            args,
            lambda cfg: row_norm("rms_norm", x, [n], w, None, 1e-6, rms=True, stats=False, config=cfg)[0],
            candidates(n),
            ("nn.functional.rms_norm", (x, [n], w, 1e-6)),
        ),
    ]


SWEEPS = [Sweep(ROW_NORM, [(8192, 4096), (4096, 32768), (16384, 768)], _cases, "ROWSxN")]
