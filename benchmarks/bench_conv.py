"""nbx-conv benchmarks: ResNet-50 convolutions (bf16, batch 32, channels-last) and its pooling layers.

Targets (issue 11): conv2d >= 0.7x torch (cuDNN), max_pool2d and adaptive_avg_pool2d >= 1.0x torch.
"""

from __future__ import annotations

import torch

# (name, C, K, H=W, kernel, stride, padding): the ResNet-50 layers the issue names.
CONVS = [
    ("3x3 64ch 56", 64, 64, 56, 3, 1, 1),
    ("1x1 s2 256->512 56", 256, 512, 56, 1, 2, 0),
    ("3x3 128ch 28", 128, 128, 28, 3, 1, 1),
    ("3x3 512ch 7", 512, 512, 7, 3, 1, 1),
    ("7x7 stem 3->64 224 s2", 3, 64, 224, 7, 2, 3),
]
BATCH = 32


def _cl(t: torch.Tensor) -> torch.Tensor:
    return t.contiguous(memory_format=torch.channels_last)


def _convs(h) -> None:
    from nbx_conv.convolution import conv2d

    for name, c, k, hw, r, st, pad in CONVS:
        x, w = _cl(h.randn((BATCH, c, hw, hw))), _cl(h.randn((k, c, r, r)))
        X, W = h.nbx(x), h.nbx(w)
        out = (hw + 2 * pad - r) // st + 1
        flops = 2 * BATCH * k * out * out * c * r * r
        h.compare(f"conv2d {name}", nbx=lambda X=X, W=W, st=st, pad=pad: conv2d(X, W, None, [st, st], [pad, pad]),
                  torch=lambda x=x, w=w, st=st, pad=pad: torch.nn.functional.conv2d(x, w, None, st, pad),
                  shape=(BATCH, c, hw, hw, k, r, st), dtype="bfloat16", flops=flops, note="channels-last")


def _pools(h) -> None:
    from nbx_conv.pooling import adaptive_avg_pool2d, max_pool2d

    for layout, conv in (("channels-last", _cl), ("nchw", lambda t: t)):
        x = conv(h.randn((BATCH, 64, 112, 112)))
        X = h.nbx(x)
        nbytes = x.numel() * 2 + x.numel() // 4 * 2
        h.compare(f"max_pool2d 3x3 s2 ({layout})", nbx=lambda X=X: max_pool2d(X, [3, 3], [2, 2], [1, 1]),
                  torch=lambda x=x: torch.nn.functional.max_pool2d(x, 3, 2, 1), shape=tuple(x.shape),
                  dtype="bfloat16", bytes=nbytes, note=layout)
        y = conv(h.randn((BATCH, 2048, 7, 7)))
        Y = h.nbx(y)
        h.compare(f"adaptive_avg_pool2d 1x1 ({layout})", nbx=lambda Y=Y: adaptive_avg_pool2d(Y, [1, 1]),
                  torch=lambda y=y: torch.nn.functional.adaptive_avg_pool2d(y, 1), shape=tuple(y.shape),
                  dtype="bfloat16", bytes=y.numel() * 2 + BATCH * 2048 * 2, note=layout)


def run(h) -> None:
    _convs(h)
    _pools(h)


# Sweep candidates per layer: (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages, GROUP_M, parts), parts > 1
# splitting the reduction, for the 3x3 layers (the others' candidates: benchmarks/results/sweeps/h200-conv.json).
# With the taps loop's address work cut in half, BLOCK_K 64 (one step per tap at 64 channels) and
# narrower splits of the 7x7 layer are worth timing again. Each layer also runs the shipped heuristic ("default").
CONV_TILES = {
    "3x3 64ch 56": [(256, 64, 32, 8, 4, 8, 1), (128, 64, 64, 4, 4, 8, 1), (128, 64, 64, 4, 2, 8, 1),
                    (128, 64, 64, 4, 3, 4, 1), (128, 64, 64, 4, 3, 16, 1), (64, 64, 64, 4, 3, 8, 1)],
    "3x3 128ch 28": [(128, 128, 64, 4, 3, 8, 1), (128, 128, 64, 4, 4, 8, 1), (64, 128, 64, 4, 3, 8, 1),
                     (128, 128, 64, 8, 3, 8, 1), (256, 128, 64, 8, 4, 8, 1)],
    "3x3 512ch 7": [(128, 128, 64, 8, 4, 8, 2), (128, 128, 64, 4, 3, 8, 2), (128, 128, 64, 4, 4, 8, 3),
                    (128, 256, 64, 8, 3, 8, 3), (128, 128, 64, 8, 4, 8, 3), (64, 128, 64, 4, 3, 8, 2)],
}
# Global average pool: (BLOCK_R, BLOCK_C, num_warps).
POOL_TILES = [(64, 64, 4), (32, 128, 4), (16, 256, 4), (64, 256, 8), (64, 128, 8)]


def sweep(h) -> None:
    """Time the conv kernel's tile candidates on the five layers (channels-last) and the global
    average pool's on [32, 2048, 7, 7], each against torch; restores the shipped choices after."""
    from nbx_conv import convolution as cv
    from nbx_conv import pooling as pl
    from nbx_conv.convolution import conv2d
    from nbx_conv.pooling import adaptive_avg_pool2d, max_pool2d

    base = cv._config
    for name, c, k, hw, r, st, pad in CONVS:
        if name not in CONV_TILES:
            continue
        x, w = _cl(h.randn((BATCH, c, hw, hw))), _cl(h.randn((k, c, r, r)))
        X, W = h.nbx(x), h.nbx(w)
        out = (hw + 2 * pad - r) // st + 1
        flops = 2 * BATCH * k * out * out * c * r * r
        runs = [("default", base)] + [(str(t), lambda *a, t=t: t) for t in CONV_TILES[name]]
        for tag, config in runs:
            cv._config = config
            h.compare(f"conv2d {name} tiles={tag}",
                      nbx=lambda X=X, W=W, st=st, pad=pad: conv2d(X, W, None, [st, st], [pad, pad]),
                      torch=lambda x=x, w=w, st=st, pad=pad: torch.nn.functional.conv2d(x, w, None, st, pad),
                      shape=(BATCH, c, hw, hw, k, r, st), dtype="bfloat16", flops=flops, note="channels-last")
    cv._config = base

    base = pl._global_config
    for layout, conv in (("channels-last", _cl), ("nchw", lambda t: t)):
        y = conv(h.randn((BATCH, 2048, 7, 7)))
        Y = h.nbx(y)
        for cfg in [None, *(POOL_TILES if layout == "channels-last" else [])]:
            pl._global_config = base if cfg is None else (lambda hw, c, t=cfg: t)
            h.compare(f"adaptive_avg_pool2d 1x1 ({layout}) tiles={cfg or 'default'}",
                      nbx=lambda Y=Y: adaptive_avg_pool2d(Y, [1, 1]),
                      torch=lambda y=y: torch.nn.functional.adaptive_avg_pool2d(y, 1), shape=tuple(y.shape),
                      dtype="bfloat16", bytes=y.numel() * 2 + BATCH * 2048 * 2, note=layout)
        x = conv(h.randn((BATCH, 64, 112, 112)))
        X = h.nbx(x)
        h.compare(f"max_pool2d 3x3 s2 ({layout})", nbx=lambda X=X: max_pool2d(X, [3, 3], [2, 2], [1, 1]),
                  torch=lambda x=x: torch.nn.functional.max_pool2d(x, 3, 2, 1), shape=tuple(x.shape),
                  dtype="bfloat16", bytes=x.numel() * 2 + x.numel() // 4 * 2, note=layout)
    pl._global_config = base
