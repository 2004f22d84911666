"""GEMM tile configurations: the shipped H200 table, the on-disk cache, and their lookup.

A configuration is a dict of ``BLOCK_M``, ``BLOCK_N``, ``BLOCK_K``, ``GROUP_M``, ``num_warps``,
``num_stages``. Shapes fall into buckets (each of M, N, K rounded up to a power of two); a bucket's
configuration comes from, in order: the user's cache (``$NBX_CACHE_DIR/linalg/gemm.json``, default
``~/.cache/nbx``, written by :func:`nbx_linalg.matmul.tune`), the shipped table's exact buckets,
then the table's first matching rule. Nothing is timed on first use. This module imports no Triton.
"""

from __future__ import annotations

import json
import os
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

Config = dict[str, int]
_TABLE = Path(__file__).with_name("configs") / "h200.json"

CANDIDATES: list[Config] = [
    {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8, "num_warps": w, "num_stages": s}
    for bm, bn, bk, w, s in [
        (128, 256, 64, 8, 3), (128, 256, 64, 8, 4), (256, 128, 64, 8, 3), (128, 128, 64, 8, 4),
        (128, 128, 64, 4, 4), (128, 64, 64, 4, 4), (64, 64, 128, 4, 4), (64, 128, 64, 4, 4),
        (16, 32, 256, 4, 4), (16, 64, 256, 4, 4), (16, 64, 128, 4, 5), (32, 64, 128, 4, 4),
    ]
]
"""What :func:`nbx_linalg.matmul.tune` tries for float16/bfloat16."""


def dtype_class(dtype_name: str) -> str:
    """The table's dtype class of a dtype: f16 (both half types), f32, f64 or int."""
    if dtype_name in ("float16", "bfloat16"):
        return "f16"
    if dtype_name in ("float32", "float64"):
        return "f" + dtype_name[5:]
    return "int"


def _bucket(n: int) -> int:
    return max(16, 1 << max(n - 1, 0).bit_length())


def bucket_key(dtype_name: str, m: int, n: int, k: int) -> str:
    """The table key of a GEMM: dtype class and the M, N, K buckets, e.g. ``f16:M16:N4096:K4096``."""
    return f"{dtype_class(dtype_name)}:M{_bucket(m)}:N{_bucket(n)}:K{_bucket(k)}"


def cache_path() -> Path:
    """Where tuned configurations persist: ``$NBX_CACHE_DIR/linalg/gemm.json`` (default ~/.cache/nbx)."""
    root = os.environ.get("NBX_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "nbx")
    return Path(root) / "linalg" / "gemm.json"


@cache
def _table() -> dict[str, Any]:
    return json.loads(_TABLE.read_text())


_user: dict[str, Config] | None = None


def _user_cache() -> dict[str, Config]:
    global _user
    if _user is None:
        try:
            _user = json.loads(cache_path().read_text())
        except (OSError, ValueError):
            _user = {}
    return _user


def lookup(dtype_name: str, m: int, n: int, k: int) -> Config:
    """The configuration for a GEMM of this dtype and shape (user cache, then the shipped table)."""
    key = bucket_key(dtype_name, m, n, k)
    found = _user_cache().get(key) or _table()["shapes"].get(key)
    if found:
        return dict(found)
    cls, bm, bn, bk = dtype_class(dtype_name), _bucket(m), _bucket(n), _bucket(k)
    for rule in _table()["rules"]:
        if rule["dtype"] == cls and bm <= rule.get("max_m", bm) and bn <= rule.get("max_n", bn) \
                and bk <= rule.get("max_k", bk):
            return dict(rule["config"])
    raise LookupError(f"no GEMM configuration rule for {key}")


def remember(dtype_name: str, m: int, n: int, k: int, config: Config) -> None:
    """Persist ``config`` for this GEMM's bucket in the user cache (atomic write)."""
    table = _user_cache()
    table[bucket_key(dtype_name, m, n, k)] = dict(config)
    path = cache_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".gemm-", suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump(table, f, indent=1, sort_keys=True)
    os.replace(tmp, path)
