"""nbx-conv's sweeps (``nbx tune --family conv``, ``benchmarks/sweep.py``): convolution and global
average pool launches, on channels-last inputs as ResNet-50 runs them.

A convolution shape is ``NxCxHxKxRxSTRIDExPAD``: batch, input channels, height (= width), output
channels, kernel size, stride, padding. The default shapes are the benchmark's ResNet-50 layers
that the H200 sweeps tuned, each with the candidates they compared; another shape tries all of
them. A pool shape is ``NxCxHxW``. The split reduction's second pass (``PARTSxMxK``: PARTS partial
sums of M output pixels by K output channels into a channels-last output) tries pixel and channel
tiles around the rule's.
"""

from __future__ import annotations

import numpy as np

from nbx_core.ops.views import permute, reshape, squeeze, unsqueeze
from nbx_core.runtime.tuner import Case, Shape, Sweep, randn, sweep_shape
from nbx_core.tensor import NBXTensor, empty_tensor

from .convolution import _PARAMS, CONV, SUM_PARTS, _conv, sum_parts
from .pooling import GLOBAL_AVG, _global_avg


def _rows(rows: list[tuple[int, ...]]) -> list[dict[str, int]]:
    return [dict(zip(_PARAMS, row, strict=True)) for row in rows]


# (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages, GROUP_M, PARTS), PARTS > 1 splitting the reduction.
LAYERS: dict[Shape, list[dict[str, int]]] = {
    (32, 64, 56, 64, 3, 1, 1): _rows([
        (256, 64, 32, 8, 4, 8, 1), (128, 64, 64, 4, 4, 8, 1), (128, 64, 64, 4, 2, 8, 1), (128, 64, 64, 4, 3, 4, 1),
        (128, 64, 64, 4, 3, 16, 1), (64, 64, 64, 4, 3, 8, 1)]),
    (32, 128, 28, 128, 3, 1, 1): _rows([
        (128, 128, 64, 4, 3, 8, 1), (128, 128, 64, 4, 4, 8, 1), (64, 128, 64, 4, 3, 8, 1), (128, 128, 64, 8, 3, 8, 1),
        (256, 128, 64, 8, 4, 8, 1)]),
    (32, 512, 7, 512, 3, 1, 1): _rows([
        (128, 128, 64, 8, 4, 8, 2), (128, 128, 64, 4, 3, 8, 2), (128, 128, 64, 4, 4, 8, 3), (128, 256, 64, 8, 3, 8, 3),
        (128, 128, 64, 8, 4, 8, 3), (64, 128, 64, 4, 3, 8, 2)]),
}
"""The ResNet-50 layers' candidates (3x3 convolutions of 64, 128 and 512 channels, batch 32)."""
POOL_TILES = [{"BLOCK_R": r, "BLOCK_C": c, "num_warps": w}
              for r, c, w in [(64, 64, 4), (32, 128, 4), (16, 256, 4), (64, 256, 8), (64, 128, 8)]]


def _channels_last(shape: tuple[int, int, int, int], dtype: str, rng: np.random.Generator) -> NBXTensor:
    """An (N, C, H, W) tensor stored channels-last."""
    n, c, h, w = shape
    return permute(randn((n, h, w, c), dtype, rng), 0, 3, 1, 2)


def _conv_cases(shape: Shape, dtype: str) -> list[Case]:
    sweep_shape(shape, "convolution", "NxCxHxKxRxSTRIDExPAD", (7,))
    n, c, hw, k, r, st, pad = shape
    rng = np.random.default_rng(0)
    x, w = _channels_last((n, c, hw, hw), dtype, rng), _channels_last((k, c, r, r), dtype, rng)
    out = (hw + 2 * pad - r) // st + 1
    args = (dtype, n * out * out, k, 1, c, r * r, c < 16)
    candidates = LAYERS.get(tuple(shape)) or [cfg for layer in LAYERS.values() for cfg in layer]
    return [Case(f"conv2d {'x'.join(map(str, shape))} {dtype}", args,
                 lambda cfg: _conv("conv2d", x, w, None, (st, st), (pad, pad), (1, 1), False, (0, 0), 1, config=cfg),
                 candidates, ("nn.functional.conv2d", (x, w, None, st, pad)))]


def _pool_cases(shape: Shape, dtype: str) -> list[Case]:
    sweep_shape(shape, "pool", "NxCxHxW", (4,))
    n, c, h, w = shape
    x = _channels_last((n, c, h, w), dtype, np.random.default_rng(0))
    out = empty_tensor((n, c, 1, 1, 1), x.dtype, x.device)

    def run(cfg: dict[str, int] | None) -> NBXTensor:
        _global_avg(unsqueeze(x, 2), out, config=cfg)
        return squeeze(out, 2)

    return [Case(f"adaptive_avg_pool2d 1x1 {'x'.join(map(str, shape))} {dtype}", (dtype, h * w, c), run, POOL_TILES,
                 ("nn.functional.adaptive_avg_pool2d", (x, 1)))]


def _sum_parts_cases(shape: Shape, dtype: str) -> list[Case]:
    sweep_shape(shape, "sum of parts", "PARTSxMxK", (3,))
    parts, m, k = shape
    partial = randn((parts, m, k), dtype, np.random.default_rng(0))
    flat = empty_tensor((1, 1, m, k), partial.dtype, partial.device)
    out = permute(flat, 0, 3, 1, 2)  # (1, K, 1, M), channels-last

    def run(cfg: dict[str, int] | None) -> NBXTensor:
        sum_parts(partial, None, out, False, config=cfg)
        return reshape(flat, (m, k))

    return [Case(f"sum of parts {'x'.join(map(str, shape))} {dtype}", (partial.dtype.itemsize, m, k), run,
                 [{"BLOCK_M": bm, "BLOCK_N": bn, "num_warps": w}
                  for bm, bn, w in [(16, 256, 4), (32, 128, 4), (8, 512, 4), (32, 256, 8), (64, 64, 4)]],
                 ("sum", (partial, 0)))]


SWEEPS = [Sweep(CONV, list(LAYERS), _conv_cases, "NxCxHxKxRxSTRIDExPAD (H = W, channels-last)"),
          Sweep(GLOBAL_AVG, [(32, 2048, 7, 7)], _pool_cases, "NxCxHxW (channels-last)"),
          Sweep(SUM_PARTS, [(2, 1568, 512), (3, 1568, 512)], _sum_parts_cases, "PARTSxMxK (float32 partial sums)",
                ("float32",))]
