"""nbx-reduction's sweeps (``nbx tune --family reduction``, ``benchmarks/sweep.py``): the engine's
row and column kernels, cumsum's scan and the cross-entropy kernel.

Rows: a shape ``ROWSxK`` is argmax over the last dim (the arg ops' loop is the one whose tiles
matter most), tried with one block of 1024 a step and with four loaded together under a register
cap. Columns: a shape ``KxI`` is sum over the first dim, tried at column tiles and K splits (the
program count below which K splits, the fewest loads a slice holds). Cumsum: a shape ``ROWSxN`` is
scanned along N (one column a program, longer or shorter steps) and along ROWS (column tiles by
steps). Cross-entropy: a shape ``ROWSxC`` is the unreduced loss of class-index targets, tried at
class blocks and warps.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from nbx_core import dtypes as D
from nbx_core.backend import default_device
from nbx_core.runtime.tuner import Case, Shape, Sweep, randn, sweep_shape
from nbx_core.runtime.tuning import Config
from nbx_core.tensor import NBXTensor, empty_tensor, tensor

from . import engine as E
from .losses import CLASS_INDEX, XENT, class_loss
from .scan import CUMSUM, scan

_NAMES = ("BLOCK", "BLOCK_K", "num_warps", "UNROLL", "STAGES", "MAXNREG", "PROGRAMS", "SPLIT_BLOCKS")


def _configs(rows: list[tuple[int, ...]]) -> list[dict[str, int]]:
    """(BLOCK, BLOCK_K, warps[, UNROLL, STAGES, MAXNREG], PROGRAMS, SPLIT_BLOCKS) rows as configurations."""
    out = []
    for row in rows:
        tiles, split = E.Tiles(*row[:-2]), row[-2:]
        out.append(dict(zip(_NAMES, (*tiles, *split), strict=True)))
    return out


ROW_CANDIDATES = _configs([(1, 1024, 4, 1056, 4), (1, 1024, 4, 4, 1, 64, 1056, 4)])
COLUMN_CANDIDATES = _configs([(64, 64, 4, 1, 3, 0, 1056, 4), (64, 64, 4, 1, 3, 0, 2112, 2),
                              (64, 64, 4, 1, 3, 0, 4224, 1), (128, 32, 8, 1, 3, 0, 2112, 2),
                              (256, 16, 8, 1, 3, 0, 1056, 4), (256, 32, 8, 1, 3, 0, 2112, 2)])

SCAN_ROW_CANDIDATES = [{"BLOCK_I": 1, "BLOCK_K": k, "num_warps": w}
                       for k, w in [(2048, 4), (1024, 4), (4096, 4), (2048, 8), (4096, 8)]]
SCAN_COLUMN_CANDIDATES = [{"BLOCK_I": i, "BLOCK_K": k, "num_warps": w}
                          for i, k, w in [(64, 32, 4), (32, 64, 4), (128, 16, 4), (64, 64, 8), (128, 32, 8)]]
XENT_CANDIDATES = [{"BLOCK_M": 1, "BLOCK_C": c, "num_warps": w}
                   for c, w in [(4096, 8), (2048, 4), (2048, 8), (4096, 4), (8192, 8), (8192, 16)]]


def _matrix(shape: Shape, dtype: str, what: str) -> NBXTensor:
    sweep_shape(shape, what, "two sizes", (2,))
    return randn(shape, dtype, np.random.default_rng(0))


def _row_cases(shape: Shape, dtype: str) -> list[Case]:
    x = _matrix(shape, dtype, "rows (ROWSxK)")
    return [Case(f"argmax dim=1 {'x'.join(map(str, shape))} {dtype}", (E.ARGMAX, x.dtype.itemsize, shape[0], shape[1]),
                 lambda cfg: E.reduce(x, (1,), False, E.ARGMAX, D.int64, store=2, config=cfg), ROW_CANDIDATES,
                 ("argmax", (x, 1)))]


def _column_cases(shape: Shape, dtype: str) -> list[Case]:
    x = _matrix(shape, dtype, "columns (KxI)")
    return [Case(f"sum dim=0 {'x'.join(map(str, shape))} {dtype}", (E.SUM, x.dtype.itemsize, shape[1], shape[0]),
                 lambda cfg: E.reduce(x, (0,), False, E.SUM, x.dtype, src=x.dtype, config=cfg), COLUMN_CANDIDATES,
                 ("sum", (x, 0)))]


def _cumsum_cases(shape: Shape, dtype: str) -> list[Case]:
    x = _matrix(shape, dtype, "cumsum (ROWSxN)")
    out = empty_tensor(x.shape, x.dtype, x.device)
    name = f"{'x'.join(map(str, shape))} {dtype}"

    def run(dim: int) -> Callable[[Config | None], NBXTensor]:
        return lambda cfg: scan(out, x, dim, config=cfg)

    # (I, K) of the scan along N and along ROWS, as the launch plans them.
    return [Case(f"cumsum dim={d} {name}", (x.dtype.itemsize, i, k), run(d), candidates, ("cumsum", (x, d)))
            for d, i, k, candidates in [(1, 1, shape[1], SCAN_ROW_CANDIDATES),
                                        (0, shape[1], shape[0], SCAN_COLUMN_CANDIDATES)]]


def _xent_cases(shape: Shape, dtype: str) -> list[Case]:
    x = _matrix(shape, dtype, "cross-entropy (ROWSxC)")
    rows, classes = shape
    t = tensor(np.random.default_rng(1).integers(0, classes, rows), dtype=D.int64, device=default_device())
    return [Case(f"cross_entropy reduction=none {'x'.join(map(str, shape))} {dtype}",
                 (CLASS_INDEX, x.dtype.itemsize, rows, classes),
                 lambda cfg: class_loss("cross_entropy_loss", CLASS_INDEX, x, 1, t, None, 0, -100, 0.0, config=cfg),
                 XENT_CANDIDATES, ("nn.functional.cross_entropy", (x, t, None, None, -100, None, "none")))]


SWEEPS = [Sweep(E.ROWS, [(8192, 4096), (4096, 32768)], _row_cases, "ROWSxK (argmax over K)"),
          Sweep(E.COLUMNS, [(4096, 4096)], _column_cases, "KxI (sum over K)"),
          Sweep(CUMSUM, [(4096, 4096)], _cumsum_cases, "ROWSxN (cumsum along N, then along ROWS)", ("float32",)),
          Sweep(XENT, [(4096, 32000)], _xent_cases, "ROWSxC (class-index targets, no reduction)")]
