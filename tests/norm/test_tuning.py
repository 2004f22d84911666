"""The row-norm kernel's launch (nbx_norm.layer_norm.ROW_NORM), and the moments and per-channel apply
launches (nbx_norm.moments.MOMENTS and APPLY), as data: today's choices, config=."""

from __future__ import annotations

import itertools

import nbx_norm.layer_norm as ln
import nbx_norm.moments as moments
import numpy as np
import pytest
import torch

from nbx_core.errors import NbxError
from nbx_core.runtime import tuning
from nbx_core.runtime.launch import cdiv, next_pow2
from nbx_core.testing import from_torch, make, numeric

# rows x n -> (TILE, num_warps) before the choice moved onto nbx_core.runtime.tuning, with the
# launch's (BLOCK, ROWS, CHUNKED) that follow.
SM90 = {(1, 1): (4096, 4, (1, 1, False)), (3, 7): (4096, 4, (8, 4, False)), (8192, 4096): (4096, 8, (4096, 1, False)),
        (4096, 32768): (4096, 32, (32768, 1, False)), (16384, 768): (4096, 4, (1024, 4, False)),
        (2, 100000): (4096, 8, (4096, 1, True)), (7, 2048): (4096, 8, (2048, 2, False)),
        (5, 16384): (4096, 16, (16384, 1, False))}
INTERPRETER = {(3, 7): (16384, 1, (8, 4, False)), (8192, 4096): (16384, 1, (4096, 4, False)),
               (16384, 768): (16384, 1, (1024, 16, False)), (2, 100000): (16384, 1, (4096, 1, True)),
               (5, 16384): (16384, 1, (16384, 1, False))}


pytestmark = pytest.mark.usefixtures("tuning_cache")


@pytest.mark.parametrize(("target", "expected"), [("sm_90", SM90), (None, INTERPRETER)], ids=["sm_90", "interpreter"])
@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_same_launch_as_before(target, expected, dtype):
    from nbx_core.runtime.launch import row_blocks

    for (m, n), (tile, warps, launch) in expected.items():
        args = (dtype, n, ln.row_block(n))
        config = ln.ROW_NORM.resolve(*args, target=target)[0]
        assert config == {"TILE": tile, "num_warps": warps}, (m, n)
        assert row_blocks(m, n, ln.FUSED_MAX, ln.CHUNK, config["TILE"]) == launch
        if tuning.arch() == target:
            assert ln.ROW_NORM.lookup(*args) == config


def test_config_argument_replaces_the_lookup():
    # Two configurations of one input: two plans, each launched as asked (one row a program, then
    # four), both exact.
    x, w, b = make((6, 40)), make((40,), seed=1), make((40,), seed=2)
    X, W, B = from_torch(x), from_torch(w), from_torch(b)
    for config, grid in (({"TILE": 64, "num_warps": 2}, (6,)), ({"TILE": 256, "num_warps": 1}, (2,))):
        out = ln.row_norm("layer_norm", X, [40], W, B, 1e-5, rms=False, stats=False, config=config)[0]
        plan = next(p for k, p in ln._plans.items() if k[-1] == tuning.frozen(config))
        assert plan.run.grid == grid and plan.run.kwargs["num_warps"] == config["num_warps"]
        if numeric():
            np.testing.assert_allclose(out.numpy(), torch.nn.functional.layer_norm(x, [40], w, b).numpy(),
                                       rtol=1e-5, atol=1e-5)
    with pytest.raises(NbxError, match="passed as config= to row_norm: TILE must be a power of two"):
        ln.row_norm("layer_norm", X, [40], W, B, 1e-5, rms=False, stats=False, config={"TILE": 48, "num_warps": 2})


# The moments and apply launches as they read before they moved onto MOMENTS and APPLY (cpu: the
# interpreter), checked over a grid of sizes for both rules.
def _old_moments(units, total, cpu):
    chunk = 4096 if not cpu else 1 << 14
    block = min(chunk, next_pow2(max(total, 1)))
    splits = 1 if cpu else max(1, min(cdiv(1024, max(units, 1)), cdiv(total, block)))
    return (units, splits), block, 8


def _old_apply(nrows, inner, cpu):
    tile = 2048 if not cpu else 1 << 16
    block = min(next_pow2(inner), tile)
    rows = max(1, tile // block)
    return (cdiv(nrows, rows), cdiv(inner, block)), block, rows, 8


@pytest.mark.parametrize("target", ["sm_90", None], ids=["sm_90", "interpreter"])
def test_moments_and_apply_launch_as_before(monkeypatch, target):
    launches = []
    monkeypatch.setattr(moments, "launch", lambda kernel, grid, *a, **kw: launches.append((grid, kw)))
    x = from_torch(make((1 << 18,)))  # launches only record: sizes past x are read by none
    for units, rows, row_len in itertools.product((0, 1, 2, 3, 64, 1000, 5000), (1, 4), (1, 5, 3000, 70000, 1 << 20)):
        total = rows * row_len
        config = moments.MOMENTS.resolve("float32", units, rows, total, target=target)[0]
        moments.moments(x, units, rows, row_len, row_len, units * row_len, config=config)
        (grid, kw), _ = launches[-2:]
        want = _old_moments(units, total, target is None)
        assert (grid, kw["BLOCK"], kw["num_warps"]) == want, (units, rows, row_len)
        if tuning.arch() == target:
            assert moments.MOMENTS.lookup("float32", units, rows, total) == config
    for nrows, inner in itertools.product((1, 3, 1000), (1, 7, 100, 2048, 3000, 70000)):
        if nrows * inner > x.numel():
            continue
        config = moments.APPLY.resolve("float32", inner, target=target)[0]
        xs = from_torch(make((nrows * inner,)))
        moments.apply_channels(xs, xs, x, x, None, None, 1, inner, 0, 1, config=config)
        grid, kw = launches[-1]
        want = _old_apply(nrows, inner, target is None)
        assert (grid, kw["BLOCK"], kw["ROWS"], kw["num_warps"]) == want, (nrows, inner)
        if tuning.arch() == target:
            assert moments.APPLY.lookup("float32", inner) == config


def test_moments_config_argument_splits_units():
    # Units split between programs (a GPU's path), each reducing several chunks: torch's statistics.
    x = make((3, 4, 50)) * 0.5 + 4.0
    mean, var, rstd = moments.moments(from_torch(x), 4, 3, 50, 50, 200, 1e-5,
                                      config={"CHUNK": 16, "PROGRAMS": 16, "num_warps": 4})
    if numeric():
        want_var, want_mean = torch.var_mean(x.double(), (0, 2), unbiased=False)
        np.testing.assert_allclose(mean.numpy(), want_mean.numpy(), rtol=1e-5)
        np.testing.assert_allclose(var.numpy(), want_var.numpy(), rtol=1e-4)
        np.testing.assert_allclose(rstd.numpy(), (want_var + 1e-5).rsqrt().numpy(), rtol=1e-4)
