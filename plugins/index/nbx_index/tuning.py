"""nbx-index's sweeps (``nbx tune --family index``, ``benchmarks/sweep.py``): sort, topk,
embedding_bag, multinomial and the row copy of index_select and embedding.

A sort or topk shape is ``ROWSxN``, float32 rows of N elements. topk (k = 50, largest) tries the
in-register select at 8, 16 and 32 warps; sort (ascending, whole rows) tries (chunk, chunk warps,
merge block, merge warps) around the shipped one: a longer chunk costs more per key and saves merge
passes. embedding_bag (``BAGSxPER_BAGxDIMxVOCAB``, sum mode, random indices) tries 64 to 1024 columns
a program. multinomial (``ROWSxNxSAMPLES``, with replacement) tries (samples, categories) tiles
around the rule's; each row has one positive weight, at a random place, so that the draws are
known (that category, as torch draws too) while the kernel still walks the whole row. The row copy
(``ROWSxDIMxVOCAB``, index_select of random rows of a VOCABxDIM table) tries row and column tiles
around the rule's.
"""

from __future__ import annotations

import numpy as np

from nbx_core import dtypes as D
from nbx_core.backend import default_device
from nbx_core.runtime.tuner import Case, Shape, Sweep, randn, sweep_shape
from nbx_core.tensor import NBXTensor, empty_tensor, tensor

from .embedding import EMBEDDING_BAG, bags
from .gather import TAKE_ROWS, take_rows
from .random import MULTINOMIAL, sample_rows
from .sort import SORT, _sort_rows
from .topk import TOPK, select_rows

TOPK_K = 50
SORT_CANDIDATES = [{"CHUNK": c, "CHUNK_WARPS": cw, "MERGE_BLOCK": mb, "MERGE_WARPS": mw}
                   for c, cw, mb, mw in [(1024, 4, 2048, 4), (512, 4, 2048, 4), (512, 2, 2048, 4), (1024, 2, 2048, 4),
                                         (1024, 8, 2048, 4), (1024, 4, 4096, 8), (1024, 4, 2048, 8),
                                         (1024, 4, 1024, 2)]]


def _rows(shape: Shape, dtype: str, k: int) -> tuple[NBXTensor, NBXTensor, NBXTensor]:
    x = randn(shape, dtype, np.random.default_rng(0))
    return x, empty_tensor((shape[0], k), x.dtype, x.device), empty_tensor((shape[0], k), D.int64, x.device)


def _topk_cases(shape: Shape, dtype: str) -> list[Case]:
    rows, n = sweep_shape(shape, "sort or topk", "ROWSxN", (2,))
    k = min(TOPK_K, n)
    x, vals, idx = _rows(shape, dtype, k)

    def run(cfg: dict[str, int] | None) -> NBXTensor:
        select_rows(vals, idx, x, rows, n, k, n, 1, True, config=cfg)
        return vals

    return [Case(f"topk k={k} {'x'.join(map(str, shape))} {dtype}", (x.dtype.itemsize, n), run,
                 [{"num_warps": w} for w in (8, 16, 32)], ("topk", (x, k)))]


def _sort_cases(shape: Shape, dtype: str) -> list[Case]:
    rows, n = sweep_shape(shape, "sort or topk", "ROWSxN", (2,))
    x, vals, idx = _rows(shape, dtype, n)

    def run(cfg: dict[str, int] | None) -> NBXTensor:
        _sort_rows(vals, idx, x, rows, n, n, n, 1, False, config=cfg)
        return vals

    return [Case(f"sort {'x'.join(map(str, shape))} {dtype}", (x.dtype.itemsize, n), run, SORT_CANDIDATES,
                 ("sort", (x, -1)))]


def _bag_cases(shape: Shape, dtype: str) -> list[Case]:
    sweep_shape(shape, "embedding_bag", "BAGSxPER_BAGxDIMxVOCAB", (4,))
    n_bags, per_bag, dim, vocab = shape
    rng = np.random.default_rng(0)
    weight = randn((vocab, dim), dtype, rng)
    indices = tensor(rng.integers(0, vocab, n_bags * per_bag), dtype=D.int64, device=weight.device)
    offsets = tensor(np.arange(0, n_bags * per_bag, per_bag), dtype=D.int64, device=weight.device)

    def run(cfg: dict[str, int] | None) -> NBXTensor:
        return bags("aten::_embedding_bag", weight, indices, offsets, 0, None, False, -1, config=cfg)[0]

    return [Case(f"embedding_bag sum {'x'.join(map(str, shape))} {dtype}", (weight.dtype.name, dim), run,
                 [{"BLOCK_D": b} for b in (64, 128, 256, 512, 1024)],
                 ("embedding_bag", (weight, indices, offsets, False, 0)))]


def _multinomial_cases(shape: Shape, dtype: str) -> list[Case]:
    sweep_shape(shape, "multinomial", "ROWSxNxSAMPLES", (3,))
    rows, n, samples = shape
    rng = np.random.default_rng(0)
    weights = np.zeros((rows, n), dtype=np.float32)
    weights[np.arange(rows), rng.integers(0, n, rows)] = rng.uniform(0.5, 2.0, rows)
    p = tensor(weights, dtype=D.as_dtype(dtype), device=default_device())
    out = empty_tensor((rows, samples), D.int64, p.device)

    def run(cfg: dict[str, int] | None) -> NBXTensor:
        sample_rows(out, p, rows, n, samples, p.stride(0), p.stride(1), seed=1, config=cfg)
        return out

    return [Case(f"multinomial {'x'.join(map(str, shape))} {dtype}", (p.dtype.name, n, samples), run,
                 [{"BLOCK_S": s, "BLOCK_N": b} for s, b in [(64, 128), (32, 128), (64, 64), (32, 256), (16, 256),
                                                             (16, 512)]],
                 ("multinomial", (p, samples, True)))]


def _take_cases(shape: Shape, dtype: str) -> list[Case]:
    sweep_shape(shape, "row copy", "ROWSxDIMxVOCAB", (3,))
    rows, dim, vocab = shape
    rng = np.random.default_rng(0)
    table = randn((vocab, dim), dtype, rng)
    index = tensor(rng.integers(0, vocab, rows), dtype=D.int64, device=table.device)

    def run(cfg: dict[str, int] | None) -> NBXTensor:
        return take_rows("aten::index_select", "index", table, index, vocab, table.stride(0), ((), ()),
                         ((dim,), (table.stride(1),)), (rows, dim), config=cfg)

    return [Case(f"index_select {'x'.join(map(str, shape))} {dtype}", (table.dtype.itemsize, rows, dim), run,
                 [{"BLOCK_R": r, "BLOCK_Q": q, "num_warps": w}
                  for r, q, w in [(8, 512, 4), (4, 1024, 4), (16, 256, 4), (8, 1024, 8), (16, 512, 8), (2, 2048, 8)]],
                 ("index_select", (table, 0, index)))]


SWEEPS = [Sweep(TOPK, [(4096, 32000)], _topk_cases, "ROWSxN (k = 50)", ("float32",)),
          Sweep(SORT, [(4096, 32000)], _sort_cases, "ROWSxN", ("float32",)),
          Sweep(EMBEDDING_BAG, [(4096, 32, 512, 100000)], _bag_cases, "BAGSxPER_BAGxDIMxVOCAB", ("float32",)),
          Sweep(MULTINOMIAL, [(1024, 32000, 64)], _multinomial_cases, "ROWSxNxSAMPLES", ("float32",)),
          Sweep(TAKE_ROWS, [(32768, 4096, 32000)], _take_cases, "ROWSxDIMxVOCAB", ("float32", "bfloat16"))]
