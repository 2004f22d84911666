"""nbx-linalg's registration, its precision switch and its GEMM configuration table."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from nbx_core.testing import untested_names

NAMES = Path(__file__).parents[2].joinpath("nbx_core/oplists/linalg.txt").read_text().split()


def test_every_name_is_tested():
    assert untested_names(NAMES, Path(__file__).parent) == []


def test_every_name_is_registered_by_linalg():
    from nbx_core.registry import get_registry

    reg = get_registry()
    assert sorted(n for n in NAMES if reg.resolve(n).plugin == "linalg") == sorted(NAMES)
    assert len(NAMES) == 14


def test_plugin_module_imports_no_triton():
    code = "import sys, nbx_linalg.plugin, nbx_linalg; assert 'triton' not in sys.modules, 'triton imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


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
