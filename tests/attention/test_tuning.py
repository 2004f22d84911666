"""The flash kernel's launch as data (nbx_attention.flash_attention.FLASH): today's choices, config=."""

from __future__ import annotations

import math

import nbx_attention.flash_attention as fa
import numpy as np
import pytest

from nbx_core.errors import NbxError
from nbx_core.ops.views import expand
from nbx_core.runtime import tuning
from nbx_core.runtime.tuner import randn
from nbx_core.tensor import empty_tensor

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
