"""nbx-reduction's sweeps (``nbx tune --family reduction``, ``benchmarks/sweep.py``): the engine's
row and column kernels.

Rows: a shape ``ROWSxK`` is argmax over the last dim (the arg ops' loop is the one whose tiles
matter most), tried with one block of 1024 a step and with four loaded together under a register
cap. Columns: a shape ``KxI`` is sum over the first dim, tried at column tiles and K splits (the
program count below which K splits, the fewest loads a slice holds).
"""

from __future__ import annotations

import numpy as np

from nbx_core import dtypes as D
from nbx_core.errors import NbxValueError
from nbx_core.runtime.tuner import Case, Shape, Sweep, randn
from nbx_core.tensor import NBXTensor

from . import engine as E

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


def _matrix(shape: Shape, dtype: str, what: str) -> NBXTensor:
    if len(shape) != 2:
        raise NbxValueError(f"a {what} shape is two sizes, got {'x'.join(map(str, shape))}")
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


SWEEPS = [Sweep(E.ROWS, [(8192, 4096), (4096, 32768)], _row_cases, "ROWSxK (argmax over K)"),
          Sweep(E.COLUMNS, [(4096, 4096)], _column_cases, "KxI (sum over K)")]
