"""Attention whose offsets within one (batch, head) slice pass 2**31: the kernels index it in int64."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from nbx_core import dtypes as D
from nbx_core.backend import current
from nbx_core.memory.host import HostStorage
from nbx_core.runtime.kernels.indexing import slice_needs_int64
from nbx_core.tensor import NBXTensor
from nbx_core.testing import check_op, from_torch, make, numeric, run_op, to_torch

SDPA = "aten::scaled_dot_product_attention"


class _Geometry:
    """A tensor's shape and strides, with no storage behind them."""

    def __init__(self, shape: tuple[int, ...], strides: tuple[int, ...]) -> None:
        self.shape, self._strides = shape, strides

    def stride(self) -> tuple[int, ...]:
        return self._strides


def test_slice_needs_int64_reads_the_slice_dims_only():
    wide = _Geometry((4, 8, 3, 5), (2**40, 2**35, 2**29, 1))
    assert not slice_needs_int64((wide, 2), (None, 2))  # 2 * 2**29 + 4 fits
    assert slice_needs_int64((_Geometry((4, 8, 5, 5), (0, 0, 2**29, 1)), 2))  # 4 * 2**29 + 4 does not
    assert slice_needs_int64((None, 2), (wide, 0))  # the batch dims count when the slice starts there
    assert not slice_needs_int64((_Geometry((1, 2**31), (0, 1)), 1))  # its last element is 2**31 - 1
    assert slice_needs_int64((_Geometry((3, 2), (-(2**30), 2**30)), 0))  # negative strides reach too


@pytest.mark.skipif(current() == "cuda", reason="a 4 GiB host mask view; the cpu backend compares, aot compiles")
@pytest.mark.parametrize("S", [16, 200])  # one key block, and several (the mask's block lists too)
def test_a_mask_whose_rows_lie_2_31_elements_apart(S):
    # Row 2 of this (L, S) mask slice lies 2 * (2**30 + 1) elements from row 0: in 32 bits that
    # offset wraps to 2**31 elements *before* the slice, where this buffer holds the opposite mask.
    # The buffer is 4 GiB of address space of which only the written pages are ever touched.
    L, E, smm, base = 3, 16, 2**30 + 1, 2**31
    raw = np.empty(base + (L - 1) * smm + S, np.uint8)
    g = torch.Generator().manual_seed(0)
    keep = torch.rand(L, S, generator=g) > 0.3
    keep[:, 0] = True
    for r in range(L):
        raw[base + r * smm : base + r * smm + S] = keep[r].numpy()
        wrapped = (r * smm + 2**31) % 2**32 - 2**31
        if wrapped != r * smm:
            raw[base + wrapped : base + wrapped + S] = ~keep[r].numpy()
    mask = NBXTensor(HostStorage(raw), (1, 1, L, S), (0, 0, smm, 1), base, D.bool_)
    q, k, v = (torch.randn(1, 2, n, E, generator=g) for n in (L, S, S))
    got = run_op(SDPA, from_torch(q), from_torch(k), from_torch(v), mask)
    if numeric():
        want = torch.nn.functional.scaled_dot_product_attention(q.double(), k.double(), v.double(), keep)
        torch.testing.assert_close(to_torch(got).double(), want, rtol=1e-5, atol=1e-5)


def test_the_int64_variant_in_every_mask_layout(monkeypatch):
    # The int64 kernels on small tensors: masks loaded as a row, a column and a tile (bool and
    # additive), block lists, causal attention, and keys split between programs.
    import nbx_attention.flash_attention as fa
    import nbx_attention.mask_blocks as mb

    asked = []
    monkeypatch.setattr(fa, "slice_needs_int64", lambda *parts: asked.append(len(parts)) or True)
    monkeypatch.setattr(mb, "slice_needs_int64", lambda *parts: asked.append(len(parts)) or True)
    q, k, v = make((2, 2, 40, 16), seed=0), make((2, 2, 150, 16), seed=1), make((2, 2, 150, 16), seed=2)
    g = torch.Generator().manual_seed(4)
    tile = torch.rand(2, 1, 40, 150, generator=g) < 0.6
    tile[..., 0] = True
    row = torch.ones(2, 1, 1, 150, dtype=torch.bool)
    row[0, ..., 90:] = False
    column = torch.where(torch.arange(40) % 7 == 3, -2.5, 0.0).view(1, 1, 40, 1).expand(2, 1, 40, 150)
    for mask in (tile, row, column, torch.zeros(tile.shape).masked_fill(~tile, -math.inf)):
        check_op(SDPA, q, k, v, mask)
    check_op(SDPA, q, k, v, None, 0.0, True)
    assert set(asked) == {6, 1}  # flash asks about q, k, v, out, mask and lse; mask_blocks about the mask

    splits, launch = [], fa.launch
    monkeypatch.setattr(fa.SPLIT, "lookup", lambda *a, **kw: {"PROGRAMS_PER_SM": 1})
    monkeypatch.setattr(fa, "MIN_SPLIT_KEYS", 16)
    monkeypatch.setattr(
        fa, "launch", lambda kernel, grid, *a, **kw: splits.append(grid[2]) or launch(kernel, grid, *a, **kw)
    )
    check_op(SDPA, q[:1, :, :1], k[:1], v[:1], None, 0.0, True)
    assert splits and all(n > 1 for n in splits)
