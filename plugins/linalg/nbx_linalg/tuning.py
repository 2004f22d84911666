"""nbx-linalg's sweeps (``nbx tune --family linalg``, ``benchmarks/sweep.py``): the GEMM's tiles,
the LSTM cell's and the pairwise distance kernel's.

A shape is ``MxNxK`` or ``BxMxNxK`` (a batch of products); each is tuned in two layouts: ``NN`` (mm
or bmm) and ``NT`` (linear with a bias, W stored (N, K); for a batch, attention scores q @ k^T).
The default shapes are the benchmarks': Llama-style prefill scores, BERT-base scores and FFN, a
decoding step, the large squares. Each has its own candidates (the tiles its sweeps compared); a
shape given on the command line tries :data:`nbx_linalg.configs.CANDIDATES`.

An LSTM cell shape is ``BATCHxHIDDEN``: one step from random gates and state, tried at batch and
hidden tiles around the shipped 16 x 64.

A distance shape is ``PxRxM``: cdist of P rows against R rows of M features, in the Euclidean
matrix-product form (p = 2, more than 25 rows) and a direct norm (p = 1), each tried at tiles around
its rule's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from nbx_core import dtypes as D
from nbx_core.ops.copy import copy_
from nbx_core.ops.views import expand, transpose
from nbx_core.runtime.tuner import Case, Shape, Sweep, randn, sweep_shape
from nbx_core.runtime.tuning import Config
from nbx_core.tensor import NBXTensor, empty_tensor

from . import configs
from .distance import DISTANCE, P_ONE, P_TWO_MM, cdist_into
from .lstm import LSTM_CELL, cell
from .matmul import gemm

_FIELDS = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_warps", "num_stages", "TMA", "SPLIT_K", "PERSISTENT")
_DEFAULTS = {"TMA": 0, "SPLIT_K": 1, "PERSISTENT": 0}


def _configs(rows: list[tuple[int, ...]]) -> list[dict[str, int]]:
    """(BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages, TMA[, SPLIT_K[, PERSISTENT]]) rows
    as configurations, fields at their defaults left out."""
    return [{k: v for k, v in zip(_FIELDS, row, strict=False) if _DEFAULTS.get(k) != v} for row in rows]


PTR, TMA = 0, 1
# BLOCK_K 128 reads 256 contiguous bytes per row of a K-major tile instead of 128.
_SQUARE = [(128, 256, 64, 8, 8, 3, PTR), (256, 128, 64, 8, 8, 3, PTR), (128, 128, 128, 8, 8, 3, PTR),
           (128, 256, 64, 8, 8, 3, TMA), (128, 256, 64, 8, 8, 4, TMA), (256, 128, 64, 8, 8, 3, TMA)]
# BERT's FFN (K = 768, 12 K steps, 4 to 6 waves of tiles): persistent programs overlap each tile's
# stores with the next tile's loads.
_FFN = [(128, 256, 64, 8, 8, 3, PTR), (128, 128, 64, 8, 8, 3, PTR), (128, 256, 64, 8, 8, 3, TMA),
        (128, 128, 64, 8, 8, 4, TMA), (128, 256, 64, 8, 8, 3, PTR, 1, 1), (128, 128, 64, 8, 8, 3, PTR, 1, 2),
        (128, 128, 64, 8, 8, 4, PTR, 1, 2)]
_HUGE = [(128, 256, 64, 8, 8, 3, PTR), (256, 128, 64, 8, 8, 3, PTR), (128, 256, 64, 8, 8, 3, TMA)]
# BERT scores (K = 64, one K step) and prefill scores (K = 128, two; the output dominates):
# per-tile programs against persistent ones, and the warp-specialized kernel for prefill.
_SCORES = [(64, 128, 64, 8, 4, 2, PTR), (128, 128, 64, 8, 8, 2, PTR, 1, 2), (64, 128, 64, 8, 4, 2, PTR, 1, 3),
           (128, 64, 64, 8, 4, 2, PTR, 1, 3), (64, 128, 64, 8, 4, 2, PTR, 1, 4), (128, 128, 64, 8, 8, 2, PTR, 1, 3)]
_PREFILL = [(128, 128, 64, 8, 8, 2, PTR), (64, 128, 64, 8, 4, 2, PTR, 1, 3), (64, 128, 64, 8, 4, 2, PTR, 1, 4),
            (128, 128, 64, 8, 8, 2, PTR, 1, 2), (128, 64, 64, 8, 4, 2, PTR, 1, 3), (64, 256, 64, 8, 8, 2, PTR, 1, 2),
            (64, 128, 64, 8, 4, 3, PTR, 1, 3), (128, 256, 64, 8, 8, 2, PTR, 1, 1), (256, 128, 64, 8, 8, 2, PTR, 1, 1),
            (128, 128, 64, 8, 8, 2, PTR, 1, 1), (128, 128, 128, 8, 8, 2, PTR, 1, 1), (64, 128, 128, 8, 4, 2, PTR, 1, 2),
            (128, 128, 64, 8, 4, 2, PTR, 1, 2), (64, 256, 64, 8, 4, 2, PTR, 1, 2), (64, 128, 64, 16, 4, 2, PTR, 1, 3),
            (64, 128, 64, 4, 4, 2, PTR, 1, 3), (64, 128, 64, 1, 4, 2, PTR, 1, 3)]
# Decoding (M = 16): 32 tiles of 128 columns leave most SMs idle; SPLIT_K slices K between programs.
_DECODE_NN = [(16, 32, 256, 1, 4, 4, PTR, 1), (16, 128, 64, 1, 4, 4, PTR, 8), (16, 128, 128, 1, 4, 4, PTR, 8),
              (16, 256, 64, 1, 4, 4, PTR, 16), (16, 64, 128, 1, 4, 4, PTR, 4), (16, 128, 64, 1, 4, 4, PTR, 4)]
_DECODE_NT = [(16, 32, 256, 1, 4, 6, PTR, 1), (16, 64, 256, 1, 4, 4, PTR, 4), (16, 32, 256, 1, 4, 4, PTR, 2)]
_WS = [{"BLOCK_M": 128, "BLOCK_N": bn, "BLOCK_K": 64, "GROUP_M": 1, "num_warps": 4, "num_stages": s,
        "PERSISTENT": 1, "WS": 1} for bn, s in [(256, 3), (128, 4)]]

SHAPE_CANDIDATES: dict[Shape, dict[str, list[dict[str, int]]]] = {
    (32, 2048, 2048, 128): {"NN": _configs(_PREFILL) + _WS, "NT": _configs(_PREFILL) + _WS},
    (96, 512, 512, 64): {"NN": _configs(_SCORES), "NT": _configs(_SCORES)},
    (4096, 3072, 768): {"NN": _configs(_FFN), "NT": _configs(_FFN)},
    (16, 4096, 4096): {"NN": _configs(_DECODE_NN), "NT": _configs(_DECODE_NT)},
    (4096, 4096, 4096): {"NN": _configs(_SQUARE), "NT": _configs(_SQUARE)},
    (8192, 8192, 8192): {"NT": _configs(_HUGE)},
}
"""Each default shape's candidates per layout."""


def _run(a: NBXTensor, b: NBXTensor, c: NBXTensor | None = None) -> Callable[[Config | None], Any]:
    return lambda cfg: gemm("tune", a, b, c, beta=1, config=cfg)


def _cases(shape: Shape, dtype: str) -> list[Case]:
    sweep_shape(shape, "GEMM", "MxNxK or BxMxNxK", (3, 4))
    *lead, m, n, k = shape
    rng = np.random.default_rng(0)
    a = randn((*lead, m, k), dtype, rng)
    name = f"{'x'.join(map(str, shape))} {dtype}"
    shipped = SHAPE_CANDIDATES.get(tuple(shape))
    cases = []
    for layout in shipped or ("NN", "NT"):
        if layout == "NN":
            b = randn((*lead, k, n), dtype, rng)
            label, run, reference = f"{'bmm' if lead else 'mm'} NN", _run(a, b), ("matmul", (a, b))
        elif lead:
            b = transpose(randn((*lead, n, k), dtype, rng), -1, -2)
            label, run, reference = "bmm(q, k^T) NT", _run(a, b), ("matmul", (a, b))
        else:
            w, bias = randn((n, k), dtype, rng), randn((n,), dtype, rng)
            label, run = "linear+bias NT", _run(a, transpose(w, 0, 1), expand(bias, [m, n]))
            reference = ("nn.functional.linear", (a, w, bias))
        cases.append(Case(f"{label} {name}", (dtype, m, n, k, layout), run,
                          shipped[layout] if shipped else configs.CANDIDATES, reference))
    return cases


CELL_CANDIDATES = [{"BLOCK_B": b, "BLOCK_H": h, "num_warps": w}
                   for b, h, w in [(16, 64, 4), (8, 128, 4), (16, 128, 4), (32, 64, 4), (32, 128, 8), (4, 256, 4)]]


def _cell_cases(shape: Shape, dtype: str) -> list[Case]:
    sweep_shape(shape, "LSTM cell", "BATCHxHIDDEN", (2,))
    batch, hidden = shape
    rng = np.random.default_rng(0)
    x, h0, c0 = (randn((batch, hidden), dtype, rng) for _ in range(3))
    w_ih, w_hh = randn((4 * hidden, hidden), dtype, rng), randn((4 * hidden, hidden), dtype, rng)
    b_ih, b_hh = randn((4 * hidden,), dtype, rng), randn((4 * hidden,), dtype, rng)
    # The step's gates as the LSTM computes them (float32, float64 for float64); the cell adds b_hh.
    gates = gemm("tune", x, transpose(w_ih, 0, 1), b_ih, beta=1, out_dtype=D.float64 if x.dtype is D.float64
                 else D.float32)
    gemm("tune", h0, transpose(w_hh, 0, 1), gates, beta=1, out=gates)
    c, h = empty_tensor(c0.shape, c0.dtype, c0.device), empty_tensor(h0.shape, h0.dtype, h0.device)

    def run(cfg: Config | None) -> NBXTensor:
        copy_(c, c0)  # the cell updates c in place: every run starts from c0
        cell(gates, b_hh, c, h, config=cfg)
        return h

    return [Case(f"lstm cell {batch}x{hidden} {dtype}", (x.dtype.itemsize, batch, hidden), run, CELL_CANDIDATES,
                 ("lstm_cell", (x, [h0, c0], w_ih, w_hh, b_ih, b_hh)))]


DISTANCE_CANDIDATES = {
    P_TWO_MM.value: [{"BLOCK_P": p, "BLOCK_R": r, "BLOCK_M": m, "num_warps": w}
                     for p, r, m, w in [(64, 64, 32, 4), (128, 64, 32, 4), (64, 128, 32, 4), (128, 128, 32, 8),
                                        (64, 64, 64, 4)]],
    P_ONE.value: [{"BLOCK_P": p, "BLOCK_R": r, "BLOCK_M": m, "num_warps": w}
                  for p, r, m, w in [(32, 32, 8, 4), (16, 32, 8, 4), (32, 16, 16, 4), (32, 32, 4, 4), (64, 32, 4, 8)]],
}


def _distance_cases(shape: Shape, dtype: str) -> list[Case]:
    sweep_shape(shape, "distance", "PxRxM", (3,))
    rows1, rows2, m = shape
    rng = np.random.default_rng(0)
    x1, x2 = randn((rows1, m), dtype, rng), randn((rows2, m), dtype, rng)
    res = empty_tensor((rows1, rows2), x1.dtype, x1.device)
    name = f"{'x'.join(map(str, shape))} {dtype}"

    def run(p: float, norm: int) -> Callable[[Config | None], NBXTensor]:
        return lambda cfg: cdist_into(res, x1, x2, p, norm, config=cfg)

    return [Case(f"cdist p={p:g} {name}", (norm, x1.dtype.itemsize, rows1, rows2, m), run(p, norm),
                 DISTANCE_CANDIDATES[norm], ("cdist", (x1, x2, p)))
            for p, norm in [(2.0, P_TWO_MM.value), (1.0, P_ONE.value)]]


SWEEPS = [Sweep(configs.GEMM, list(SHAPE_CANDIDATES), _cases, "MxNxK, or BxMxNxK for a batch"),
          Sweep(LSTM_CELL, [(64, 1024), (256, 2048)], _cell_cases, "BATCHxHIDDEN (one step)", ("float32",)),
          Sweep(DISTANCE, [(4096, 4096, 128)], _distance_cases, "PxRxM (cdist, p = 2 and p = 1)", ("float32",))]
