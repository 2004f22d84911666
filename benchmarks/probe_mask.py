"""Probe: what an attention mask given as data costs the flash kernel, at the models' shapes.

Each shape runs NBX's sdpa and torch's with no mask and with the mask its model builds (a mask is
summarised into block lists once per Program run: the probe times calls inside one run, as a
model's layers see it), plus the portable kernel's tiles at ViT's odd length (L = S = 197):

- ViT-B/16, batch 32: transformers passes an all-True bool mask (B, 1, L, S), strides (0, L, 1, 0);
- BERT-base, batch 8, sequence 512: a padding mask (B, 1, L, S), a quarter of the keys padded
  (materialized, as transformers builds it; and as one row (B, 1, 1, S) for comparison);
- Llama, batch 1, 2048 tokens, 32 heads of 64: the causal mask as data (1, 1, L, S).

    python -m benchmarks.probe_mask --out DIR
"""

from __future__ import annotations

import math
import sys

import torch

from benchmarks.harness import probe_main

SHAPES = {"vit": (32, 12, 197, 197, 64), "bert": (8, 12, 512, 512, 64), "llama": (1, 32, 2048, 2048, 64)}
VIT_TILES = [
    (64, 64, 4, 3),
    (128, 64, 4, 3),
    (128, 64, 8, 3),
    (64, 32, 4, 3),
    (128, 32, 4, 3),
    (64, 128, 4, 3),
    (32, 64, 4, 3),
    (64, 64, 4, 2),
]


def _masks(model: str, B: int, L: int, S: int) -> dict[str, torch.Tensor]:
    """The mask the model passes (as transformers builds it), and for BERT the same mask broadcast
    over the query rows, the layout the kernel loads one row of."""
    if model == "vit":
        # One value per query row, expanded over the keys.
        return {"mask": (torch.arange(L, device="cuda") >= 0).view(1, 1, L, 1).expand(B, 1, L, S)}
    if model == "bert":
        keep = torch.ones(B, 1, 1, S, dtype=torch.bool, device="cuda")
        keep[..., 3 * S // 4 :] = False
        return {"mask": keep.expand(B, 1, L, S).contiguous(), "mask as one row": keep}
    return {"mask": torch.ones(L, S, dtype=torch.bool, device="cuda").tril().expand(1, 1, L, S)}


def _case(h, model: str) -> None:
    from nbx_attention import sdpa
    from nbx_attention.flash_attention import flash_forward

    from nbx_core.runtime.memo import run_memo

    B, H, L, S, D = SHAPES[model]
    # The models' layout: heads split out of a (B, L, H * D) projection.
    q, k, v = (h.randn((B, L, H, D)).transpose(1, 2) for _ in range(3))
    Q, K, V = h.nbx(q), h.nbx(k), h.nbx(v)
    flops = 4 * B * H * L * S * D
    shape = (B, H, L, S, D)
    f = torch.nn.functional.scaled_dot_product_attention
    with run_memo():
        h.compare(
            f"{model} no mask",
            nbx=lambda: sdpa.scaled_dot_product_attention(Q, K, V),
            torch=lambda: f(q, k, v),
            shape=shape,
            dtype="bfloat16",
            flops=flops,
        )
        for label, mask in _masks(model, B, L, S).items():
            M = h.nbx(mask)
            h.compare(
                f"{model} {label}",
                nbx=lambda M=M: sdpa.scaled_dot_product_attention(Q, K, V, M),
                torch=lambda mask=mask: f(q, k, v, mask),
                shape=shape,
                dtype="bfloat16",
                flops=flops,
            )
    if model != "vit":
        return
    out = h.nbx(torch.empty_like(q))
    for bm, bn, warps, stages in VIT_TILES:
        cfg = {
            "BLOCK_M": bm,
            "BLOCK_N": bn,
            "num_warps": warps,
            "num_stages": stages,
            "FOLD_SCALE": 0,
            "HEAVY_FIRST": 0,
        }
        h.compare(
            f"vit no mask {bm}x{bn} w{warps} s{stages}",
            nbx=lambda cfg=cfg: flash_forward(
                Q, K, V, None, out, None, scale=1 / math.sqrt(D), causal=False, masked_lse=0.0, config=cfg
            ),
            torch=lambda: f(q, k, v),
            shape=shape,
            dtype="bfloat16",
            flops=flops,
        )


def run(h) -> None:
    for model in SHAPES:
        _case(h, model)


if __name__ == "__main__":
    sys.exit(probe_main(__doc__, "mask", run))
