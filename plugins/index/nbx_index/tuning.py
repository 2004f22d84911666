"""nbx-index's sweeps (``nbx tune --family index``, ``benchmarks/sweep.py``): sort and topk.

A shape is ``ROWSxN``, float32 rows of N elements. topk (k = 50, largest) tries the in-register
select at 8, 16 and 32 warps; sort (ascending, whole rows) tries (chunk, chunk warps, merge block,
merge warps) around the shipped one: a longer chunk costs more per key and saves merge passes.
"""

from __future__ import annotations

import numpy as np

from nbx_core import dtypes as D
from nbx_core.errors import NbxValueError
from nbx_core.runtime.tuner import Case, Shape, Sweep, randn
from nbx_core.tensor import NBXTensor, empty_tensor

from .sort import SORT, _sort_rows
from .topk import TOPK, select_rows

TOPK_K = 50
SORT_CANDIDATES = [{"CHUNK": c, "CHUNK_WARPS": cw, "MERGE_BLOCK": mb, "MERGE_WARPS": mw}
                   for c, cw, mb, mw in [(1024, 4, 2048, 4), (512, 4, 2048, 4), (512, 2, 2048, 4), (1024, 2, 2048, 4),
                                         (1024, 8, 2048, 4), (1024, 4, 4096, 8), (1024, 4, 2048, 8),
                                         (1024, 4, 1024, 2)]]


def _rows(shape: Shape, dtype: str, k: int) -> tuple[NBXTensor, NBXTensor, NBXTensor]:
    if len(shape) != 2:
        raise NbxValueError(f"a sort or topk shape is ROWSxN, got {'x'.join(map(str, shape))}")
    x = randn(shape, dtype, np.random.default_rng(0))
    return x, empty_tensor((shape[0], k), x.dtype, x.device), empty_tensor((shape[0], k), D.int64, x.device)


def _topk_cases(shape: Shape, dtype: str) -> list[Case]:
    (rows, n), k = shape, min(TOPK_K, shape[1])
    x, vals, idx = _rows(shape, dtype, k)

    def run(cfg: dict[str, int] | None) -> NBXTensor:
        select_rows(vals, idx, x, rows, n, k, n, 1, True, config=cfg)
        return vals

    return [Case(f"topk k={k} {'x'.join(map(str, shape))} {dtype}", (x.dtype.itemsize, n), run,
                 [{"num_warps": w} for w in (8, 16, 32)], ("topk", (x, k)))]


def _sort_cases(shape: Shape, dtype: str) -> list[Case]:
    rows, n = shape
    x, vals, idx = _rows(shape, dtype, n)

    def run(cfg: dict[str, int] | None) -> NBXTensor:
        _sort_rows(vals, idx, x, rows, n, n, n, 1, False, config=cfg)
        return vals

    return [Case(f"sort {'x'.join(map(str, shape))} {dtype}", (x.dtype.itemsize, n), run, SORT_CANDIDATES,
                 ("sort", (x, -1)))]


SWEEPS = [Sweep(TOPK, [(4096, 32000)], _topk_cases, "ROWSxN (k = 50)", ("float32",)),
          Sweep(SORT, [(4096, 32000)], _sort_cases, "ROWSxN", ("float32",))]
