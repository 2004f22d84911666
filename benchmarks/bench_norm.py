"""nbx-norm benchmarks: layer, RMS, group and batch norm against torch eager on one GPU.

``bytes`` is the ideal traffic, one read of the input and one write of the output (parameters
included), so GB/s compares directly with the device-copy ceiling. Two input sets per case keep
the 64-128 MB activations from being served out of L2 across repetitions.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

ROWS = [(8192, 4096), (4096, 32768), (16384, 768)]
"""Llama-style hidden sizes (4096, and a 32768 row longer than one block) and BERT-base."""


def _pairs(h, shape, dtype, sets: int = 2):
    xs = [h.randn(shape, dtype) for _ in range(sets)]
    return xs, [h.nbx(x) for x in xs]


def _rows(h, m: int, n: int, layer_norm, rms_norm) -> None:
    xs, X = _pairs(h, (m, n), "bfloat16")
    w, b = h.randn((n,), "bfloat16"), h.randn((n,), "bfloat16")
    W, B = h.nbx(w), h.nbx(b)
    io = 2 * m * n * 2 + n * 2
    h.compare(
        "layer_norm",
        nbx=[lambda x=x: layer_norm(x, [n], W, B) for x in X],
        torch=[lambda x=x: F.layer_norm(x, (n,), w, b) for x in xs],
        shape=(m, n),
        dtype="bfloat16",
        bytes=io + n * 2,
    )
    h.compare(
        "rms_norm",
        nbx=[lambda x=x: rms_norm(x, [n], W, 1e-6) for x in X],
        torch=[lambda x=x: F.rms_norm(x, (n,), w, 1e-6) for x in xs],
        shape=(m, n),
        dtype="bfloat16",
        bytes=io,
    )


def run(h) -> None:
    """Run every norm comparison on ``h`` (benchmarks.harness.Harness)."""
    from nbx_core.registry import get_registry

    reg = get_registry()
    layer_norm = reg.lookup("aten::layer_norm")
    rms_norm = reg.lookup("aten::rms_norm")
    group_norm = reg.lookup("aten::group_norm")
    batch_norm = reg.lookup("aten::_native_batch_norm_legit_no_training")

    for m, n in ROWS:
        _rows(h, m, n, layer_norm, rms_norm)

    shape, groups = (32, 512, 64, 64), 32
    xs, X = _pairs(h, shape, "bfloat16")
    c = shape[1]
    w, b = h.randn((c,), "bfloat16"), h.randn((c,), "bfloat16")
    W, B = h.nbx(w), h.nbx(b)
    numel = 32 * 512 * 64 * 64
    h.compare(
        "group_norm",
        nbx=[lambda x=x: group_norm(x, groups, W, B) for x in X],
        torch=[lambda x=x: F.group_norm(x, groups, w, b) for x in xs],
        shape=shape,
        dtype="bfloat16",
        bytes=2 * numel * 2,
        note="32 groups",
    )

    # ResNet-50 stage-2 activation, inference (what torch.export emits for eval-mode BatchNorm2d).
    shape = (32, 256, 56, 56)
    xs, X = _pairs(h, shape, "bfloat16")
    c = shape[1]
    params = [h.randn((c,), "float32") for _ in range(3)] + [torch.rand(c, device="cuda") + 0.5]
    P = [h.nbx(p) for p in params]
    numel = 32 * 256 * 56 * 56
    h.compare(
        "batch_norm (eval)",
        nbx=[lambda x=x: batch_norm(x, *P, 0.1, 1e-5) for x in X],
        torch=[lambda x=x: torch.ops.aten._native_batch_norm_legit_no_training(x, *params, 0.1, 1e-5) for x in xs],
        shape=shape,
        dtype="bfloat16",
        bytes=2 * numel * 2,
        note="float32 params",
    )
