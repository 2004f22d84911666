"""Export the example graph ``examples/encoder_block.nbx``: one transformer encoder block.

    python examples/make_encoder_block.py          # rewrites examples/encoder_block.nbx
    nbx run examples/encoder_block.nbx             # runs it (inputs generated)

A ``torch.nn.TransformerEncoderLayer`` (d_model 32, 2 heads, feed-forward 64, batch-first) in
eval mode, with a key-padding mask; the sequence length is dynamic (``seq``, 2..64; exported at 8),
batch is 2. Small enough for the CPU interpreter. The graph targets a full NBX installation: ops
are kept whenever some NBX family owns them (``available=``), so it does not depend on which
plugins happen to be installed where it is made. Needs torch (``pip install nbx-core[export]``).
"""

from __future__ import annotations

from pathlib import Path

import torch

from nbx_core import opnames
from nbx_core.graph.export import export


def build() -> tuple[torch.nn.Module, torch.Tensor, torch.Tensor]:
    torch.manual_seed(0)
    block = torch.nn.TransformerEncoderLayer(32, 2, dim_feedforward=64, batch_first=True).eval()
    src = torch.randn(2, 8, 32)
    mask = torch.zeros(2, 8, dtype=torch.bool)
    mask[1, 6:] = True  # the second sequence is 6 tokens long
    return block, src, mask


def main() -> None:
    block, src, mask = build()
    seq = torch.export.Dim("seq", min=2, max=64)
    ep = torch.export.export(
        block,
        (src,),
        {"src_key_padding_mask": mask},
        dynamic_shapes={"src": {1: seq}, "src_key_padding_mask": {1: seq}},
    )
    every_family = [name for family in opnames.FAMILIES for name in opnames.opset(family)]
    path = export(ep, Path(__file__).with_name("encoder_block.nbx"), available=every_family)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
