"""The flash kernel's launch and key splits and softmax's launch as data (nbx_attention.flash_attention's
FLASH and SPLIT, nbx_attention.softmax.SOFTMAX): today's choices, config=."""

from __future__ import annotations

import itertools
import math

import nbx_attention.flash_attention as fa
import nbx_attention.softmax as sm
import numpy as np
import pytest
import torch

from nbx_core.errors import NbxError
from nbx_core.ops.views import expand
from nbx_core.runtime import tuning
from nbx_core.runtime.launch import cdiv, multiprocessors, row_blocks
from nbx_core.runtime.tuner import randn
from nbx_core.tensor import empty_tensor
from nbx_core.testing import numeric

pytestmark = pytest.mark.usefixtures("tuning_cache")

# (dtype, L, S, E, EV) -> (BLOCK_M, BLOCK_N, num_warps, num_stages, FOLD_SCALE unmasked at scale 0.1)
# before the choice moved onto nbx_core.runtime.tuning.
SM90 = {
    ("bfloat16", 1, 4096, 128, 128): (16, 64, 4, 4, True),
    ("bfloat16", 512, 512, 64, 64): (64, 64, 4, 3, False),
    ("bfloat16", 4096, 4096, 256, 256): (64, 64, 8, 2, True),
    ("float16", 100, 37, 80, 80): (64, 64, 4, 3, True),
    ("float32", 4096, 4096, 128, 128): (64, 32, 4, 2, True),
    ("float64", 512, 512, 64, 64): (32, 16, 4, 1, False),
    ("float16", 17, 1, 16, 32): (64, 64, 4, 3, False),
}
INTERPRETER = {
    ("bfloat16", 1, 4096, 128, 128): (16, 64, 1, 1, True),
    ("float64", 300, 300, 128, 128): (64, 64, 1, 1, False),
    ("float32", 17, 1, 16, 32): (32, 16, 1, 1, False),
    ("bfloat16", 100, 37, 80, 80): (64, 64, 1, 1, True),
}


def _launches(monkeypatch, dtype, L, S, E, EV, causal, mask_kind=0, scale=0.1, config=None):
    """The flash kernel's launch options for these operands (nothing runs)."""
    seen = []
    monkeypatch.setattr(fa, "WARP_SPECIALIZE", False)
    monkeypatch.setattr(fa, "launch", lambda kernel, grid, *a, **kw: seen.append(kw))
    rng = np.random.default_rng(0)
    q, k, v = randn((1, 1, L, E), dtype, rng), randn((1, 1, S, E), dtype, rng), randn((1, 1, S, EV), dtype, rng)
    mask = (
        None
        if mask_kind == 0
        else expand(
            randn((1, 1, 1, S), "float32" if mask_kind == 2 else dtype, rng) > 0
            if mask_kind == 1
            else randn((1, 1, 1, S), dtype, rng),
            [1, 1, L, S],
        )
    )
    out = empty_tensor((1, 1, L, EV), q.dtype, q.device)
    fa.flash_forward(q, k, v, mask, out, None, scale=scale, causal=causal, masked_lse=0.0, config=config)
    return seen[0]


@pytest.mark.parametrize(("target", "expected"), [("sm_90", SM90), (None, INTERPRETER)], ids=["sm_90", "interpreter"])
def test_same_launch_as_before(monkeypatch, target, expected):
    for (dtype, L, S, E, EV), (bm, bn, warps, stages, fold) in expected.items():
        for causal in (False, True):
            config = fa.FLASH.resolve(dtype, L, S, E, EV, causal, target=target)[0]
            assert config == {
                "BLOCK_M": bm,
                "BLOCK_N": bn,
                "num_warps": warps,
                "num_stages": stages,
                "FOLD_SCALE": int(max(16, 1 << (E - 1).bit_length()) >= 128),
                "HEAVY_FIRST": int(causal),
            }, (dtype, L, S, E, EV)
            if tuning.arch() != target:
                continue
            kw = _launches(monkeypatch, dtype, L, S, E, EV, causal)
            assert (kw["BLOCK_M"], kw["BLOCK_N"], kw["num_warps"], kw["num_stages"]) == (bm, bn, warps, stages)
            assert (kw["FOLD_SCALE"], kw["HEAVY_FIRST"]) == (fold, causal)
    if tuning.arch() == target:  # the scale is folded only where that is exact
        dtype, L, S, E, EV = next(iter(expected))
        assert _launches(monkeypatch, dtype, L, S, E, EV, False, mask_kind=1)["FOLD_SCALE"]
        assert not _launches(monkeypatch, dtype, L, S, E, EV, False, mask_kind=2)["FOLD_SCALE"]
        assert not _launches(monkeypatch, dtype, L, S, E, EV, False, scale=0.0)["FOLD_SCALE"]
        assert not _launches(monkeypatch, dtype, L, S, E, EV, False, scale=math.inf)["FOLD_SCALE"]


def test_config_argument_replaces_the_lookup(monkeypatch):
    config = {"BLOCK_M": 32, "BLOCK_N": 16, "num_warps": 2, "num_stages": 2, "FOLD_SCALE": 1, "HEAVY_FIRST": 1}
    kw = _launches(monkeypatch, "float32", 40, 40, 64, 64, False, config=config)
    assert (kw["BLOCK_M"], kw["BLOCK_N"], kw["num_warps"], kw["num_stages"], kw["FOLD_SCALE"], kw["HEAVY_FIRST"]) == (
        32,
        16,
        2,
        2,
        True,
        True,
    )
    with pytest.raises(NbxError, match="passed as config= to flash: HEAVY_FIRST must be 0 or 1"):
        _launches(monkeypatch, "float32", 40, 40, 64, 64, False, config={**config, "HEAVY_FIRST": 2})


# The launch choices that were backend tests before they moved onto SPLIT and SOFTMAX, as they read
# (cpu: the interpreter), checked over a grid of sizes for both rules.
def _old_splits(programs: int, S: int, block_n: int, cpu: bool) -> int:
    programs_per_sm = 2 if not cpu else 0
    n = 1
    target = programs_per_sm * multiprocessors(0)
    if programs < target and S >= 2 * fa.MIN_SPLIT_KEYS:
        n = min(cdiv(target, programs), S // fa.MIN_SPLIT_KEYS)
    per = cdiv(cdiv(S, n), block_n) * block_n if S else block_n
    return cdiv(S, per) if S else 1


def _old_softmax(r: int, n: int, cpu: bool) -> tuple[int, int, bool, int]:
    tile = 4096 if not cpu else 1 << 14
    block, rows, chunked = row_blocks(r, n, sm.FUSED_MAX, sm.CHUNK, tile)
    warps = 1 if cpu else 4 if block <= 1024 else 8 if block <= 4096 else 16
    return block, rows, chunked, warps


@pytest.mark.parametrize("target", ["sm_90", None], ids=["sm_90", "interpreter"])
def test_key_splits_as_before(monkeypatch, target):
    grids = []
    monkeypatch.setattr(fa, "launch", lambda kernel, grid, *a, **kw: grids.append(grid))
    rng = np.random.default_rng(0)
    for dtype, heads, L, S in itertools.product(
        ("bfloat16", "float32"), (1, 4, 64), (1, 16, 300), (1, 500, 1023, 1024, 1500, 4096, 20000)
    ):
        split = fa.SPLIT.resolve(dtype, L, S, 16, target=target)[0]
        assert split == {"PROGRAMS_PER_SM": 2 if target else 0}
        config = fa.FLASH.resolve(dtype, L, S, 16, 16, False, target=target)[0]
        q, k = randn((1, heads, L, 16), dtype, rng), randn((1, heads, S, 16), dtype, rng)
        out = empty_tensor(q.shape, q.dtype, q.device)
        fa.flash_forward(
            q, k, k, None, out, None, scale=0.25, causal=False, masked_lse=0.0, config=config, split_config=split
        )
        programs = cdiv(L, config["BLOCK_M"]) * heads
        assert grids.pop()[2] == _old_splits(programs, S, config["BLOCK_N"], cpu=target is None), (dtype, heads, L, S)
    if tuning.arch() == target:
        assert fa.SPLIT.lookup("float32", 1, 4096, 16) == {"PROGRAMS_PER_SM": 2 if target else 0}


@pytest.mark.parametrize("target", ["sm_90", None], ids=["sm_90", "interpreter"])
def test_softmax_launch_as_before(monkeypatch, target):
    launches = []
    monkeypatch.setattr(sm, "launch", lambda kernel, grid, *a, **kw: launches.append((grid, kw)))
    rng = np.random.default_rng(0)
    for r, n in itertools.product((1, 3, 100), (1, 7, 600, 1024, 1025, 4096, 5000, 16384, 32768, 40000)):
        x = randn((r, n), "float32", rng)
        config = sm.SOFTMAX.resolve("float32", n, sm.softmax_block(n), target=target)[0]
        sm.softmax_rows("softmax", x, 1, x.dtype, x.dtype, log=False, safe=False, config=config)
        (grid,), kw = launches.pop()
        block, rows, chunked, warps = _old_softmax(r, n, cpu=target is None)
        assert (grid, kw["BLOCK"], kw["ROWS"], kw["CHUNKED"], kw["num_warps"]) == (
            cdiv(r, rows),
            block,
            rows,
            chunked,
            warps,
        ), (r, n)
        if tuning.arch() == target:
            assert sm.SOFTMAX.lookup("float32", n, sm.softmax_block(n)) == config


def test_softmax_config_argument_replaces_the_lookup():
    x = randn((6, 40), "float32", np.random.default_rng(0))
    y = sm.softmax_rows("softmax", x, 1, x.dtype, x.dtype, log=False, safe=False, config={"TILE": 128, "num_warps": 2})
    if numeric():
        ref = torch.softmax(torch.from_dlpack(x), 1)
        torch.testing.assert_close(torch.from_dlpack(y), ref)
    with pytest.raises(NbxError, match="passed as config= to softmax: TILE must be a power of two"):
        sm.softmax_rows("softmax", x, 1, x.dtype, x.dtype, log=False, safe=False, config={"TILE": 48, "num_warps": 2})
