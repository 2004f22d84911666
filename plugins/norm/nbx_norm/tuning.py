"""nbx-norm's sweeps (``nbx tune --family norm``, ``benchmarks/sweep.py``): the row kernel's launch,
and the moments and per-channel apply of batch and group norm.

Row norm: a shape is ``ROWSxN``, rows of N elements normalised over their last dim; each is tuned
for layer norm (weight and bias) and RMS norm (weight). Candidates: rows per program (as ``TILE``,
that many rows' blocks) by warps, around what suits the row length.

Moments and apply: a shape is ``NxCxHW``. Moments are taken per channel (batch norm's units, N
segments of HW) and per sample (one segment of C*HW, group norm's units with one group), tried at
chunks, program targets and warps; the apply normalises each channel by its moments (batch norm's
second pass), tried at tiles by warps.
"""

from __future__ import annotations

import numpy as np

from nbx_core.runtime.tuner import Case, Shape, Sweep, randn, sweep_shape
from nbx_core.tensor import empty_tensor

from .layer_norm import ROW_NORM, row_block, row_norm
from .moments import APPLY, MOMENTS, apply_channels, moments

MOMENTS_CANDIDATES = [
    {"CHUNK": c, "PROGRAMS": p, "num_warps": w}
    for c, p, w in [(4096, 1024, 4), (2048, 1024, 8), (8192, 1024, 8), (4096, 512, 8), (4096, 2048, 8), (4096, 4096, 8)]
]
APPLY_CANDIDATES = [{"TILE": t, "num_warps": w} for t in (1024, 2048, 4096, 8192) for w in (4, 8)]


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


def _moments_cases(shape: Shape, dtype: str) -> list[Case]:
    sweep_shape(shape, "moments", "NxCxHW", (3,))
    n, c, hw = shape
    x = randn(shape, dtype, np.random.default_rng(0))
    name = f"{'x'.join(map(str, shape))} {dtype}"
    cases = []
    # Units of segments: per channel, N segments of HW (batch norm); per sample, one of C*HW.
    for what, dims, units, rows, row_len in [("channel", [0, 2], c, n, hw), ("sample", [1, 2], n, 1, c * hw)]:

        def run(cfg: dict[str, int] | None, units: int = units, rows: int = rows, row_len: int = row_len) -> object:
            return moments(x, units, rows, row_len, row_len, c * hw, config=cfg)[1]

        cases.append(
            Case(
                f"moments per {what} {name}",
                (dtype, units, rows, rows * row_len),
                run,
                MOMENTS_CANDIDATES,
                ("var_mean", (x, dims, False)),
            )
        )
    return cases


def _apply_cases(shape: Shape, dtype: str) -> list[Case]:
    sweep_shape(shape, "apply_channels", "NxCxHW", (3,))
    n, c, hw = shape
    rng = np.random.default_rng(0)
    x, w, b = randn(shape, dtype, rng), randn((c,), dtype, rng), randn((c,), dtype, rng)
    mean, var, rstd = moments(x, c, n, hw, hw, c * hw, 1e-5)
    out = empty_tensor(x.shape, x.dtype, x.device)

    def run(cfg: dict[str, int] | None) -> object:
        apply_channels(x, out, mean, rstd, w, b, c, hw, 0, 1, config=cfg)
        return out

    return [
        Case(
            f"apply_channels {'x'.join(map(str, shape))} {dtype}",
            (dtype, hw),
            run,
            APPLY_CANDIDATES,
            ("nn.functional.batch_norm", (x, mean, var, w, b, False, 0.1, 1e-5)),
        )
    ]


SWEEPS = [
    Sweep(ROW_NORM, [(8192, 4096), (4096, 32768), (16384, 768)], _cases, "ROWSxN"),
    Sweep(MOMENTS, [(32, 256, 3136), (4, 64, 262144), (256, 2048, 49)], _moments_cases, "NxCxHW"),
    Sweep(APPLY, [(32, 256, 3136), (256, 2048, 49)], _apply_cases, "NxCxHW"),
]
