"""nbx-linalg's GEMM configuration table: lookup, the user cache, the shipped table, tune()."""

from __future__ import annotations

import json

import pytest

from nbx_core.errors import NbxError


def test_config_table_lookup_and_cache(tmp_path, monkeypatch):
    from nbx_linalg import configs

    assert configs.bucket_key("bfloat16", 16, 4096, 4096) == "f16:M16:N4096:K4096"
    big = configs.lookup("bfloat16", 4096, 4096, 4096)
    assert (big["BLOCK_M"], big["BLOCK_N"], big["BLOCK_K"], big["num_warps"]) == (128, 256, 64, 8)
    decode = configs.lookup("bfloat16", 16, 4096, 4096)
    assert decode["BLOCK_M"] == 16
    for dt in ["float16", "float32", "float64", "int32"]:
        cfg = configs.lookup(dt, 1000, 77, 5)
        assert set(cfg) == {"BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_warps", "num_stages"}
    monkeypatch.setenv("NBX_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(configs, "_user", None)
    mine = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 4, "num_warps": 4, "num_stages": 2}
    configs.remember("bfloat16", 4096, 4096, 4096, mine)
    assert json.loads((tmp_path / "linalg" / "gemm.json").read_text())["f16:M4096:N4096:K4096"] == mine
    monkeypatch.setattr(configs, "_user", None)  # a new process reads it back from disk
    assert configs.lookup("bfloat16", 4000, 4000, 4000) == mine


_CFG = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 4, "num_warps": 4, "num_stages": 2}


@pytest.mark.parametrize(("entry", "why"), [
    ({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "num_warps": 4, "num_stages": 2}, r"missing \['GROUP_M'\]"),
    ({**_CFG, "num_wraps": 4}, r"unknown keys \['num_wraps'\]"),
    ({**_CFG, "BLOCK_K": 48}, "BLOCK_K must be a power of two"),
    ({**_CFG, "num_stages": "3"}, "num_stages must be an integer"),
    ({**_CFG, "SPLIT_K": 0}, "SPLIT_K must be at least 1"),
    ({**_CFG, "TMA": 2}, "TMA must be 0 or 1"),
    ({**_CFG, "PERSISTENT": -1}, "PERSISTENT must be 0 or more"),
    ({**_CFG, "BLOCK_M": 128, "WS": 2}, "WS must be 0 or 1"),
    ({**_CFG, "WS": 1}, "WS needs BLOCK_M 128, num_warps 4 and no SPLIT_K"),
    ([64, 64, 32], "must be a JSON object"),
])
def test_bad_user_cache_entry_is_a_clear_error(tmp_path, monkeypatch, entry, why):
    # A hand-edited cache entry fails at lookup with the key, the file and the fix, not deep in a
    # launch (SPLIT_K 0 would divide by zero there).
    from nbx_linalg import configs

    monkeypatch.setenv("NBX_CACHE_DIR", str(tmp_path))
    (tmp_path / "linalg").mkdir()
    (tmp_path / "linalg" / "gemm.json").write_text(json.dumps({"f16:M4096:N4096:K4096": entry}))
    monkeypatch.setattr(configs, "_user", None)
    with pytest.raises(NbxError, match=why) as err:
        configs.lookup("bfloat16", 4096, 4096, 4096)
    assert "'f16:M4096:N4096:K4096' in" in str(err.value) and "fix or delete the entry" in str(err.value)
    monkeypatch.setattr(configs, "_user", None)


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


def _cfg(mark: int) -> dict[str, int]:
    # Entries told apart by BLOCK_M, a power of two as in a real configuration: 2 ** mark.
    return {"BLOCK_M": 2 ** mark, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8, "num_warps": 4, "num_stages": 2}


def test_config_lookup_order(tmp_path, monkeypatch):
    # user cache (layout key, then layout-free) > table's layout key > table's layout-free key > rules
    from nbx_linalg import configs

    table = {
        "shapes": {"f16:M256:N256:K256": _cfg(1), "f16:M256:N256:K256:NT": _cfg(2)},
        "rules": [{"dtype": "f16", "layout": "TT", "config": _cfg(3)}, {"dtype": "f16", "max_m": 64, "config": _cfg(4)},
                  {"dtype": "f16", "config": _cfg(5)}],
    }
    monkeypatch.setattr(configs, "_table", lambda: table)
    monkeypatch.setenv("NBX_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(configs, "_user", None)

    def pick(m: int, layout: str) -> int:
        return configs.lookup("bfloat16", m, 256, 256, layout)["BLOCK_M"].bit_length() - 1

    assert [pick(200, lay) for lay in configs.LAYOUTS] == [1, 2, 1, 1]  # layout key, else layout-free
    assert [pick(1000, lay) for lay in configs.LAYOUTS] == [5, 5, 5, 3]  # rules: a layout's rule only for it
    assert pick(40, "NN") == 4 and pick(40, "TT") == 3  # first matching rule wins
    configs.remember("float16", 200, 256, 256, _cfg(6))  # layout-free user entry beats the table
    assert [pick(200, lay) for lay in configs.LAYOUTS] == [6, 6, 6, 6]
    configs.remember("bfloat16", 200, 256, 256, _cfg(7), "NT")
    assert [pick(200, lay) for lay in configs.LAYOUTS] == [6, 7, 6, 6]
    saved = json.loads((tmp_path / "linalg" / "gemm.json").read_text())
    assert saved == {"f16:M256:N256:K256": _cfg(6), "f16:M256:N256:K256:NT": _cfg(7)}
    monkeypatch.setattr(configs, "_user", None)  # a new process reads both back from disk
    assert [pick(200, lay) for lay in configs.LAYOUTS] == [6, 7, 6, 6]
    assert [pick(1000, lay) for lay in configs.LAYOUTS] == [5, 5, 5, 3]


def test_config_lookup_past_warp_specialized_entries(tmp_path, monkeypatch):
    # Where the warp-specialized kernel does not apply, gemm asks again without ws: every entry
    # that asks for it is passed over, in the user cache, the shapes and the rules.
    from nbx_linalg import configs

    ws = {**_cfg(7), "WS": 1}
    table = {"shapes": {"f16:M256:N256:K256:NN": ws, "f16:M256:N256:K256": _cfg(1)},
             "rules": [{"dtype": "f16", "config": ws}, {"dtype": "f16", "config": _cfg(5)}]}
    monkeypatch.setattr(configs, "_table", lambda: table)
    monkeypatch.setenv("NBX_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(configs, "_user", None)
    assert configs.lookup("bfloat16", 200, 256, 256, "NN") == ws
    assert configs.lookup("bfloat16", 200, 256, 256, "NN", ws=False) == _cfg(1)
    assert configs.lookup("bfloat16", 1000, 256, 256, "NN") == ws
    assert configs.lookup("bfloat16", 1000, 256, 256, "NN", ws=False) == _cfg(5)
    configs.remember("bfloat16", 200, 256, 256, {**ws, "BLOCK_N": 128}, "NN")
    assert configs.lookup("bfloat16", 200, 256, 256, "NN")["BLOCK_N"] == 128
    assert configs.lookup("bfloat16", 200, 256, 256, "NN", ws=False) == _cfg(1)
    monkeypatch.setattr(configs, "_user", None)


def test_shipped_table_is_well_formed():
    from nbx_linalg import configs

    table = configs._table()
    fields = {"BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_warps", "num_stages"}

    def well_formed(cfg):  # TMA, SPLIT_K, PERSISTENT and WS are optional
        return set(cfg) - {"TMA", "SPLIT_K", "PERSISTENT", "WS"} == fields and configs.check(cfg, "shipped") == cfg

    for key, cfg in table["shapes"].items():
        cls, m, n, k, *layout = key.split(":")
        assert cls in ("f16", "f32", "f64", "int") and [m[0], n[0], k[0]] == ["M", "N", "K"], key
        assert configs.bucket_key({"f16": "bfloat16", "int": "int32"}.get(cls, "float" + cls[1:]), int(m[1:]),
                                  int(n[1:]), int(k[1:]), *layout) == key
        assert well_formed(cfg), key
    for rule in table["rules"]:
        assert well_formed(rule["config"]) and rule.get("layout", "NN") in configs.LAYOUTS
    for cls in ("f16", "f32", "f64", "int"):  # every dtype class ends with a catch-all rule
        assert any(r["dtype"] == cls and not {"max_m", "max_n", "max_k", "layout"} & set(r) for r in table["rules"])
    assert all(well_formed(c) for c in configs.CANDIDATES) and any(c.get("TMA") for c in configs.CANDIDATES)
    assert any(c.get("WS") for c in configs.CANDIDATES)
    # Behind every warp-specialized shape entry, one that serves where its kernel does not apply.
    for key, cfg in table["shapes"].items():
        if cfg.get("WS"):
            cls, m, n, k, layout = key.split(":")
            dtype = {"f16": "bfloat16"}[cls]
            assert not configs.lookup(dtype, int(m[1:]), int(n[1:]), int(k[1:]), layout, ws=False).get("WS"), key


def test_tune_checks_its_layout_and_backend():
    from nbx_linalg import matmul

    with pytest.raises(NbxError, match="layout must be one of"):
        matmul.tune(64, 64, 64, layout="KN")
    if matmul.BACKEND != "cuda":
        with pytest.raises(NbxError, match="needs the cuda backend"):
            matmul.tune(64, 64, 64, layout="NT")
