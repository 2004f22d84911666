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
        h.compare(
            f"conv2d {name}",
            nbx=lambda X=X, W=W, st=st, pad=pad: conv2d(X, W, None, [st, st], [pad, pad]),
            torch=lambda x=x, w=w, st=st, pad=pad: torch.nn.functional.conv2d(x, w, None, st, pad),
            shape=(BATCH, c, hw, hw, k, r, st),
            dtype="bfloat16",
            flops=flops,
            note="channels-last",
        )


def _pools(h) -> None:
    from nbx_conv.pooling import adaptive_avg_pool2d, max_pool2d

    for layout, conv in (("channels-last", _cl), ("nchw", lambda t: t)):
        x = conv(h.randn((BATCH, 64, 112, 112)))
        X = h.nbx(x)
        nbytes = x.numel() * 2 + x.numel() // 4 * 2
        h.compare(
            f"max_pool2d 3x3 s2 ({layout})",
            nbx=lambda X=X: max_pool2d(X, [3, 3], [2, 2], [1, 1]),
            torch=lambda x=x: torch.nn.functional.max_pool2d(x, 3, 2, 1),
            shape=tuple(x.shape),
            dtype="bfloat16",
            bytes=nbytes,
            note=layout,
        )
        y = conv(h.randn((BATCH, 2048, 7, 7)))
        Y = h.nbx(y)
        h.compare(
            f"adaptive_avg_pool2d 1x1 ({layout})",
            nbx=lambda Y=Y: adaptive_avg_pool2d(Y, [1, 1]),
            torch=lambda y=y: torch.nn.functional.adaptive_avg_pool2d(y, 1),
            shape=tuple(y.shape),
            dtype="bfloat16",
            bytes=y.numel() * 2 + BATCH * 2048 * 2,
            note=layout,
        )


def run(h) -> None:
    _convs(h)
    _pools(h)
