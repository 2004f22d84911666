"""nbx-linalg's GEMM tiles (nbx_linalg.configs.GEMM): the tiles chosen before, the user cache, the shipped table."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from nbx_core.errors import NbxError
from nbx_core.testing import numeric


def _tiles(bm, bn, bk, group, warps, stages, **more):
    return {
        "BLOCK_M": bm,
        "BLOCK_N": bn,
        "BLOCK_K": bk,
        "GROUP_M": group,
        "num_warps": warps,
        "num_stages": stages,
        **more,
    }


# (dtype, M, N, K, layout, without the warp-specialized kernel) -> the tiles chosen before the
# table moved onto nbx_core.runtime.tuning: one case per shipped entry kind and per rule.
SM90 = {
    ("bfloat16", 4096, 4096, 4096, "NN", False): _tiles(128, 256, 64, 8, 8, 3, TMA=1),
    ("bfloat16", 5000, 5000, 5000, "NT", False): _tiles(128, 256, 64, 8, 8, 3, TMA=1),
    ("float16", 16, 4096, 4096, "NN", False): _tiles(16, 64, 128, 1, 4, 4, SPLIT_K=4),
    ("bfloat16", 16, 4096, 4096, "NT", False): _tiles(16, 32, 256, 1, 4, 4, SPLIT_K=2),
    ("bfloat16", 2048, 2048, 128, "NN", False): _tiles(128, 256, 64, 1, 4, 3, PERSISTENT=1, WS=1),
    ("bfloat16", 2048, 2048, 128, "NN", True): _tiles(64, 128, 64, 8, 4, 2, PERSISTENT=3),
    ("bfloat16", 2048, 2048, 128, "TN", False): _tiles(64, 128, 64, 8, 4, 2, PERSISTENT=3),
    ("bfloat16", 4096, 3072, 768, "NT", False): _tiles(128, 256, 64, 8, 8, 3, PERSISTENT=1),
    ("bfloat16", 512, 512, 64, "NT", False): _tiles(64, 128, 64, 8, 4, 2, PERSISTENT=3),
    ("bfloat16", 16, 1000, 4096, "NN", False): _tiles(16, 32, 128, 1, 4, 4),  # rules
    ("bfloat16", 40, 4096, 4096, "TT", False): _tiles(64, 64, 128, 8, 4, 4),
    ("bfloat16", 300, 4096, 4096, "NN", False): _tiles(128, 128, 64, 8, 4, 4),
    ("bfloat16", 4096, 300, 4096, "NN", False): _tiles(128, 128, 64, 8, 4, 4),
    ("bfloat16", 8000, 3000, 100, "NN", False): _tiles(128, 256, 64, 8, 8, 3),
    ("float32", 16, 4096, 4096, "NN", False): _tiles(16, 64, 64, 1, 4, 3),
    ("float32", 4096, 4096, 4096, "NN", False): _tiles(128, 128, 32, 8, 8, 3),
    ("int64", 300, 4096, 4096, "NN", False): _tiles(32, 32, 8, 8, 4, 2),  # integers and float64
}
INTERPRETER = {
    ("bfloat16", 1, 1, 1, "NN", False): _tiles(16, 16, 16, 8, 1, 1),
    ("bfloat16", 4096, 3072, 768, "NT", False): _tiles(128, 128, 128, 8, 1, 1),
    ("int64", 1000, 77, 5, "NN", False): _tiles(32, 32, 16, 8, 1, 1),
    ("int64", 40, 4096, 4096, "NN", False): _tiles(32, 32, 32, 8, 1, 1),
    ("float32", 16, 1000, 4096, "TT", True): _tiles(16, 128, 128, 8, 1, 1),
}


@pytest.mark.parametrize(("target", "expected"), [("sm_90", SM90), (None, INTERPRETER)], ids=["sm_90", "interpreter"])
def test_same_tiles_as_before(tmp_path, monkeypatch, target, expected):
    from nbx_linalg.configs import GEMM

    from nbx_core.runtime import tuning

    monkeypatch.setenv("NBX_CACHE_DIR", str(tmp_path))  # no user cache
    tuning.reload()
    for (dtype, m, n, k, layout, no_ws), tiles in expected.items():
        skip = ("WS",) if no_ws else ()
        assert GEMM.resolve(dtype, m, n, k, layout, target=target, skip=skip)[0] == tiles, (dtype, m, n, k, layout)
        if tuning.arch() == target:  # and what this backend's launches look up
            assert GEMM.lookup(dtype, m, n, k, layout, skip=skip) == tiles
    tuning.reload()


def test_user_cache_comes_first(tmp_path, monkeypatch):
    from nbx_linalg import configs

    from nbx_core.runtime import tuning

    monkeypatch.setenv("NBX_CACHE_DIR", str(tmp_path))
    tuning.reload()
    mine = _tiles(64, 64, 32, 4, 4, 2)
    path = configs.GEMM.remember(configs.key("bfloat16", 4096, 4096, 4096, "NT"), mine, "test", target="sm_90")
    assert path == tmp_path / "tuning" / "linalg.json"
    saved = json.loads(path.read_text())["sm_90"]["gemm"]
    assert saved == {"f16:M4096:N4096:K4096:NT": {"config": mine, "source": "test"}}
    tuning.reload()  # a new process reads it back from disk
    assert configs.GEMM.resolve("float16", 4000, 4000, 4000, "NT", target="sm_90")[0] == mine
    assert configs.GEMM.resolve("bfloat16", 4000, 4000, 4000, "NN", target="sm_90")[0]["TMA"] == 1  # the table
    tuning.reload()


_CFG = _tiles(64, 64, 32, 4, 4, 2)


@pytest.mark.parametrize(
    ("entry", "why"),
    [
        ({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "num_warps": 4, "num_stages": 2}, r"missing \['GROUP_M'\]"),
        ({**_CFG, "num_wraps": 4}, r"unknown keys \['num_wraps'\]"),
        ({**_CFG, "BLOCK_K": 48}, "BLOCK_K must be a power of two"),
        ({**_CFG, "num_stages": "3"}, "num_stages must be an integer"),
        ({**_CFG, "SPLIT_K": 0}, "SPLIT_K must be an integer of at least 1"),
        ({**_CFG, "TMA": 2}, "TMA must be 0 or 1"),
        ({**_CFG, "PERSISTENT": -1}, "PERSISTENT must be an integer of at least 0"),
        ({**_CFG, "BLOCK_M": 128, "WS": 2}, "WS must be 0 or 1"),
        ({**_CFG, "WS": 1}, "WS needs BLOCK_M 128, num_warps 4 and no SPLIT_K"),
        ([64, 64, 32], "must be a JSON object"),
    ],
)
def test_bad_user_cache_entry_is_a_clear_error(tmp_path, monkeypatch, entry, why):
    # A hand-edited cache entry fails at lookup with the key, the file and the fix, not deep in a
    # launch (SPLIT_K 0 would divide by zero there).
    from nbx_linalg import configs

    from nbx_core.runtime import tuning

    monkeypatch.setenv("NBX_CACHE_DIR", str(tmp_path))
    path = tmp_path / "tuning" / "linalg.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"sm_90": {"gemm": {"f16:M4096:N4096:K4096": {"config": entry}}}}))
    tuning.reload()
    with pytest.raises(NbxError, match=why) as err:
        configs.GEMM.resolve("bfloat16", 4096, 4096, 4096, "NN", target="sm_90")
    assert f"'f16:M4096:N4096:K4096' in {path}" in str(err.value) and "fix or delete the entry" in str(err.value)
    tuning.reload()


def test_config_argument_is_checked():
    from nbx_linalg.matmul import gemm

    from nbx_core.tensor import tensor

    a = tensor([[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(NbxError, match="passed as config= to gemm: BLOCK_M must be a power of two"):
        gemm("test", a, a, config={**_CFG, "BLOCK_M": 48})


def test_layout_letters_and_keys():
    from nbx_linalg import configs

    m, n, k = 5, 7, 9
    assert configs.layout_of(k, 1, n, 1) == "NN"  # mm: both row-major
    assert configs.layout_of(k, 1, 1, k) == "NT"  # linear: weight (N, K) row-major, viewed transposed
    assert configs.layout_of(1, m, n, 1) == "TN"
    assert configs.layout_of(1, m, 1, k) == "TT"
    assert configs.layout_of(1, 1, 1, 1) == "NN"  # both strides 1 (size-1 dims): row-major
    assert configs.layout_of(2 * k, 2, 3 * n, 3) == "NN"  # strided both ways
    assert configs.bucket_key("bfloat16", 4000, 4096, 4097, "NT") == "f16:M4096:N4096:K8192:NT"
    assert configs.bucket_key("float32", 4000, 4096, 4097) == "f32:M4096:N4096:K8192"
    with pytest.raises(NbxError, match="layout must be one of"):
        configs.bucket_key("bfloat16", 16, 16, 16, "nt")


def test_shipped_table_is_well_formed():
    from nbx_linalg import configs, tuning

    data = json.loads(Path(configs.__file__).with_name("configs").joinpath("h200.json").read_text())
    assert data["arch"] == "sm_90" and set(data["kernels"]) == {"gemm"}
    table = data["kernels"]["gemm"]
    root = Path(__file__).parents[2]
    for key, entry in table["shapes"].items():
        cls, m, n, k, *layout = key.split(":")
        assert cls in ("f16", "f32", "f64", "int") and [m[0], n[0], k[0]] == ["M", "N", "K"], key
        assert (
            configs.bucket_key(
                {"f16": "bfloat16", "int": "int32"}.get(cls, "float" + cls[1:]),
                int(m[1:]),
                int(n[1:]),
                int(k[1:]),
                *layout,
            )
            == key
        )
        assert configs.GEMM.check(entry["config"], key) == entry["config"]
        assert (root / entry["source"]).is_file(), entry["source"]
    for rule in table["rules"]:
        assert configs.GEMM.check(rule["config"], "rule") == rule["config"] and (root / rule["source"]).is_file()
        assert set(rule["when"]) <= {"dtype", "layout", "max_M", "max_N", "max_K"}
    candidates = [c for c in configs.CANDIDATES] + [
        c for s in tuning.SHAPE_CANDIDATES.values() for cs in s.values() for c in cs
    ]
    assert all(configs.GEMM.check(c, "candidate") == c for c in candidates)
    assert any(c.get("TMA") for c in configs.CANDIDATES) and any(c.get("WS") for c in configs.CANDIDATES)
    # Behind every warp-specialized shape entry, one that serves where its kernel does not apply.
    for key, entry in table["shapes"].items():
        if entry["config"].get("WS"):
            cls, m, n, k, layout = key.split(":")
            config = configs.GEMM.resolve(
                "bfloat16", int(m[1:]), int(n[1:]), int(k[1:]), layout, target="sm_90", skip=("WS",)
            )[0]
            assert not config.get("WS"), key


def test_sweep_cases_run_every_candidate_kind():
    # The sweeps nbx tune and benchmarks/sweep.py time: each case launches through config=, here
    # with a small shape and one candidate of each kind (on the interpreter the tiles only shape
    # the programs).
    from nbx_linalg import tuning

    cases = tuning.SWEEPS[0].cases((2, 24, 40, 16), "float32")
    assert [c.args for c in cases] == [("float32", 24, 40, 16, "NN"), ("float32", 24, 40, 16, "NT")]
    assert [c.reference[0] for c in cases] == ["matmul", "matmul"]
    small = {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "GROUP_M": 1, "num_warps": 1, "num_stages": 1}
    for case in cases + tuning.SWEEPS[0].cases((24, 40, 16), "float32"):
        name, args = case.reference
        a, b, *bias = (t.numpy().astype(np.float64) for t in args)
        want = a @ b if name == "matmul" else a @ b.T + bias[0]
        for more in ({}, {"SPLIT_K": 2}, {"PERSISTENT": 1}):
            got = case.run({**small, **more})
            if numeric():
                np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-4)
