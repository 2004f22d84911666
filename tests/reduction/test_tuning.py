"""The reduction engine's launches as data (nbx_reduction.engine.ROWS, COLUMNS): today's choices on
each backend, and config=."""

from __future__ import annotations

import pytest
import torch
from nbx_reduction import engine as E

from nbx_core import dtypes as D
from nbx_core.errors import NbxError
from nbx_core.runtime import tuning
from nbx_core.runtime.launch import cdiv
from nbx_core.testing import from_torch, make, numeric

pytestmark = pytest.mark.usefixtures("tuning_cache")

NAMES = ("BLOCK", "BLOCK_K", "num_warps", "UNROLL", "STAGES", "MAXNREG")
# (kernel, op, itemsize, rows or columns, K) -> the tiles on sm_90 and on the interpreter before the
# choice moved onto nbx_core.runtime.tuning.
TILES = {
    ("rows", E.ARGMAX, 2, 8192, 4096): ((1, 1024, 4, 4, 1, 64), (1, 1024, 1, 1, 0, 0)),
    ("rows", E.ARGMAX, 2, 4096, 32768): ((1, 1024, 4, 1, 0, 0), (1, 1024, 1, 1, 0, 0)),
    ("rows", E.SUM, 2, 8192, 4096): ((1, 1024, 4, 1, 0, 0), (1, 1024, 1, 1, 0, 0)),
    ("rows", E.SUM, 4, 100, 10): ((64, 16, 4, 1, 0, 0), (64, 16, 1, 1, 0, 0)),
    ("rows", E.VAR, 8, 1000, 300): ((8, 512, 8, 1, 0, 0), (2, 512, 1, 1, 0, 0)),
    ("columns", E.SUM, 2, 4096, 4096): ((64, 64, 4, 1, 3, 0), (1024, 1, 1, 1, 0, 0)),
    ("columns", E.ARGMAX, 2, 4096, 4096): ((64, 32, 4, 2, 1, 64), (1024, 1, 1, 1, 0, 0)),
    ("columns", E.ARGMAX, 8, 4096, 4096): ((64, 32, 4, 1, 3, 0), (1024, 1, 1, 1, 0, 0)),
    ("columns", E.VAR, 4, 5000, 300): ((16, 128, 4, 1, 0, 0), (1024, 1, 1, 1, 0, 0)),
    ("columns", E.SUM, 1, 3, 1024): ((4, 64, 4, 1, 3, 0), (4, 256, 1, 1, 0, 0)),
}
# (op, programs, K, BLOCK_K) -> how many slices of K a GPU and the interpreter reduce apart.
SPLITS = {
    (E.SUM, 1, 4096, 64): (16, 2),
    (E.SUM, 10, 100000, 1024): (25, 49),
    (E.VAR, 1, 4096, 64): (1, 1),
    (E.SUM, 2000, 4096, 64): (1, 2),
}


def test_same_launch_as_before():
    for (kernel, *args), tiles in TILES.items():
        tunable = E.ROWS if kernel == "rows" else E.COLUMNS
        for target, which, slices in (("sm_90", 0, {}), (None, 1, {"SLICE": 2048})):
            config = tunable.resolve(*args, target=target)[0]
            split = {"PROGRAMS": 1056, "SPLIT_BLOCKS": 4, **slices}
            assert config == {**dict(zip(NAMES, tiles[which], strict=True)), **split}
            if tuning.arch() == target:
                assert tunable.lookup(*args) == config
    for (op, programs, K, bk), splits in SPLITS.items():
        for target, which in (("sm_90", 0), (None, 1)):
            assert E._splits(op, programs, K, bk, E.ROWS.resolve(op, 2, 1, K, target=target)[0]) == splits[which]


def _old_splits(op: int, programs: int, K: int, bk: int, interpreted: bool) -> int:
    # The split count as the engine chose it by backend name before SLICE was a configuration field.
    if op in (E.VAR, E.LSE):
        return 1
    if interpreted:
        return max(cdiv(K, 2048), 1)
    if programs >= 1056:
        return 1
    return max(min(cdiv(1056, programs), cdiv(K, 4 * bk)), 1)


@pytest.mark.parametrize("kernel", ["rows", "columns"])
def test_splits_as_before_over_a_grid(kernel):
    # Each backend's rule splits K as the backend test did, over ops, launch sizes and lengths of K.
    tunable = E.ROWS if kernel == "rows" else E.COLUMNS
    for op in range(8):
        for n in (1, 3, 64, 1000, 5000):
            for K in (1, 7, 1024, 2047, 2049, 4096, 100000, 1 << 22):
                for target in ("sm_90", None):
                    cfg = tunable.resolve(op, 4, n, K, target=target)[0]
                    for programs in (1, 5, 1055, 1056, 70000):
                        got = E._splits(op, programs, K, cfg["BLOCK_K"], cfg)
                        assert got == _old_splits(op, programs, K, cfg["BLOCK_K"], target is None), (op, n, K, target)


def test_config_argument_replaces_the_lookup():
    # Sums of one input at two column tilings: two plans, each launched as asked, both exact.
    x = make((40, 24))
    X = from_torch(x)
    config = {
        "BLOCK": 8,
        "BLOCK_K": 4,
        "num_warps": 2,
        "UNROLL": 2,
        "STAGES": 1,
        "MAXNREG": 0,
        "PROGRAMS": 64,
        "SPLIT_BLOCKS": 2,
    }
    for cfg in (None, config):
        out = E.reduce(X, (0,), False, E.SUM, D.float32, config=cfg)
        if numeric():
            torch.testing.assert_close(torch.from_dlpack(out), x.sum(0), rtol=1e-5, atol=1e-5)
    plan = next(st for key, st in E._steps.items() if key[-1] == tuning.frozen(config))
    assert (plan.run.kwargs["BLOCK_I"], plan.run.kwargs["BLOCK_K"], plan.run.kwargs["num_warps"]) == (8, 4, 2)
    with pytest.raises(NbxError, match="passed as config= to columns: MAXNREG must be an integer of at least 0"):
        E.reduce(X, (0,), False, E.SUM, D.float32, config={**config, "MAXNREG": -1})
