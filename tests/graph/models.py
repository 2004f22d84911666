"""The real torch models the end-to-end tests export, with inputs and the plugins they need."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class Case:
    name: str
    module: nn.Module
    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)
    dynamic_shapes: Any = None
    runs: list[tuple[tuple[Any, ...], dict[str, Any]]] = field(default_factory=list)  # inputs to compare on
    plugins: tuple[str, ...] = ()


def encoder() -> Case:
    torch.manual_seed(0)
    m = nn.TransformerEncoderLayer(32, 2, dim_feedforward=64, batch_first=True).eval()
    x = torch.randn(2, 8, 32)
    mask = torch.zeros(2, 8, dtype=torch.bool)
    mask[1, 5:] = True
    return Case(
        "encoder",
        m,
        (x,),
        {"src_key_padding_mask": mask},
        runs=[((x,), {"src_key_padding_mask": mask})],
        plugins=("elementwise", "linalg", "norm", "attention"),
    )


class GPTBlock(nn.Module):
    def __init__(self, d: int = 32, heads: int = 2) -> None:
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


def gpt_block() -> Case:
    torch.manual_seed(1)
    seq = torch.export.Dim("seq", min=2, max=32)
    runs = [((torch.randn(2, t, 32),), {}) for t in (5, 8)]
    return Case(
        "gpt_block",
        GPTBlock().eval(),
        (torch.randn(2, 6, 32),),
        dynamic_shapes=({1: seq},),
        runs=runs,
        plugins=("elementwise", "linalg", "norm", "attention"),
    )


class SmallCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 4, 3, padding=1),
            nn.BatchNorm2d(4),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(4, 8, 3, padding=1),
            nn.BatchNorm2d(8),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
        )
        self.head = nn.Linear(8, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.flatten(self.features(x), 1))


def cnn() -> Case:
    torch.manual_seed(2)
    m = SmallCNN()
    for bn in (m.features[1], m.features[5]):  # non-trivial running statistics
        bn.running_mean.uniform_(-0.5, 0.5)
        bn.running_var.uniform_(0.5, 2.0)
    x = torch.randn(2, 3, 8, 8)
    return Case("cnn", m.eval(), (x,), runs=[((x,), {})], plugins=("elementwise", "linalg", "norm", "conv"))


class IndexNorm(nn.Module):
    """Embedding + layer norm + advanced indexing + gather + log_softmax + group norm + diff."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(20, 16)
        self.ln = nn.LayerNorm(16)
        self.gn = nn.GroupNorm(2, 4)
        self.head = nn.Linear(16, 12)

    def forward(self, ids: torch.Tensor, targets: torch.Tensor, rows: torch.Tensor) -> tuple[torch.Tensor, ...]:
        h = self.ln(self.emb(ids))  # [2, 4, 16]
        logp = torch.log_softmax(self.head(h), dim=-1)  # [2, 4, 12]
        picked = torch.gather(logp, -1, targets.unsqueeze(-1)).squeeze(-1)
        chosen = h[:, rows]  # aten.index
        grouped = self.gn(h.transpose(1, 2).reshape(2, 4, 4, 4))  # channels 4, groups 2
        return picked, chosen.sum(-1), torch.diff(grouped, dim=-1)


def index_norm() -> Case:
    torch.manual_seed(3)
    ids = torch.tensor([[1, 5, 7, 19], [0, 3, 3, 12]])
    targets = torch.tensor([[0, 11, 4, 2], [7, 7, 1, 9]])
    rows = torch.tensor([3, 0, 2])
    return Case(
        "index_norm",
        IndexNorm().eval(),
        (ids, targets, rows),
        runs=[((ids, targets, rows), {})],
        plugins=("elementwise", "linalg", "norm", "index", "attention", "reduction"),
    )


CASES = {c.__name__: c for c in (encoder, gpt_block, cnn, index_norm)}
