"""The row-norm kernel's launch as data (nbx_norm.layer_norm.ROW_NORM): today's choices, config=."""

from __future__ import annotations

import nbx_norm.layer_norm as ln
import numpy as np
import pytest
import torch

from nbx_core.errors import NbxError
from nbx_core.runtime import tuning
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
