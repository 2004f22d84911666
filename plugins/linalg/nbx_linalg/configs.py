"""GEMM tile configurations: the shipped H200 table, the on-disk cache, and their lookup.

A configuration is a dict of ``BLOCK_M``, ``BLOCK_N``, ``BLOCK_K``, ``GROUP_M``, ``num_warps``,
``num_stages`` and, optionally, ``TMA``: 1 loads float16/bfloat16 operands with Hopper's copy engine
through tensor descriptors where their strides and alignment allow (else, and by default, pointer
loads), ``SPLIT_K``: n slices K between n programs per output tile (decoding shapes, whose
few tiles leave most SMs idle), the last of them adding the partials in slice order, and
``PERSISTENT``: n launches n programs per SM that walk the output tiles, each overlapping one
tile's stores with the next tile's loads (short reductions with large outputs, such as attention
scores, whose stores dominate); it applies to pointer loads without SPLIT_K. ``WS``: 1 runs
:mod:`nbx_linalg.warp_specialized`'s kernel instead (persistent programs, PERSISTENT per SM or one,
whose producer warp group loads while two consumer warp groups multiply and store; BLOCK_M 128 and
four warps) where it applies: half-type products without ``c`` of dense row-major stacks.
Elsewhere the lookup goes on past the entry, to the next one that does not ask for it. Shapes fall
into buckets (each of M, N, K rounded up to a power of two) and operands into a layout: two
letters, A's then B's, ``N`` when the operand is stored row-major ((M, K) and (K, N) with the last
dim contiguous) and ``T`` when it is stored transposed (its K dim, for B, or its M dim, for A,
contiguous). ``mm`` is ``NN``; ``linear`` (``x @ W.T``, W stored
(N, K)) and attention scores ``q @ k.T`` are ``NT``. A configuration comes from the first of:

1. the user's cache (``$NBX_CACHE_DIR/linalg/gemm.json``, default ``~/.cache/nbx``, written by
   :func:`nbx_linalg.matmul.tune`): the layout's key (``f16:M4096:N4096:K4096:NT``), then the
   layout-free key (``f16:M4096:N4096:K4096``);
2. the shipped table's ``shapes``: the layout's key, then the layout-free key;
3. the shipped table's first matching ``rules`` entry (a rule with a ``layout`` matches only it).

Nothing is timed on first use. This module imports no Triton.
"""

from __future__ import annotations

import json
import os
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

from nbx_core.errors import NbxValueError

Config = dict[str, int]
_TABLE = Path(__file__).with_name("configs") / "h200.json"
LAYOUTS = ("NN", "NT", "TN", "TT")

CANDIDATES: list[Config] = [
    {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": g, "num_warps": w, "num_stages": s}
    for bm, bn, bk, g, w, s in [
        (128, 256, 64, 8, 8, 3), (128, 256, 64, 16, 8, 3), (128, 256, 64, 8, 8, 4), (256, 128, 64, 8, 8, 3),
        (128, 256, 128, 8, 8, 2), (128, 128, 128, 8, 8, 3), (128, 128, 64, 8, 8, 3), (128, 128, 64, 8, 8, 4),
        (128, 128, 64, 8, 4, 4), (128, 64, 64, 8, 4, 2), (64, 128, 64, 8, 4, 2), (64, 64, 128, 8, 4, 4),
        (16, 32, 256, 1, 4, 4), (16, 64, 256, 1, 4, 4), (16, 64, 128, 1, 4, 5), (32, 64, 128, 1, 4, 4),
    ]
] + [
    {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 8, "num_stages": s, "TMA": 1}
    for bm, bn, s in [(128, 256, 3), (128, 256, 4), (256, 128, 3), (128, 128, 4)]
] + [
    {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": w, "num_stages": s, "PERSISTENT": p}
    for bm, bn, w, s, p in [(128, 256, 8, 3, 1), (128, 128, 8, 2, 2), (64, 128, 4, 2, 3)]
] + [
    {"BLOCK_M": 128, "BLOCK_N": bn, "BLOCK_K": 64, "GROUP_M": 1, "num_warps": 4, "num_stages": s, "PERSISTENT": 1,
     "WS": 1}
    for bn, s in [(256, 3), (128, 4)]
]
"""What :func:`nbx_linalg.matmul.tune` tries for float16/bfloat16: large tiles (GROUP_M 8 and 16,
BLOCK_K 128 for K-major operands), small-K batched tiles with few stages (one K step needs no deep
pipeline, and less shared memory fits more programs per SM), narrow decode tiles, the large tiles
again with TMA loads, persistent programs (as many per SM as fit) for short reductions, and the
warp-specialized kernel in row-major tile order (GROUP_M 1: its products' operands fit in L2, and
grouping only cost time; where it does not apply, the candidate runs the general kernel)."""


def dtype_class(dtype_name: str) -> str:
    """The table's dtype class of a dtype: f16 (both half types), f32, f64 or int."""
    if dtype_name in ("float16", "bfloat16"):
        return "f16"
    if dtype_name in ("float32", "float64"):
        return "f" + dtype_name[5:]
    return "int"


def layout_of(sam: int, sak: int, sbk: int, sbn: int) -> str:
    """The layout letters of ``a`` (strides ``sam``, ``sak``) times ``b`` (strides ``sbk``, ``sbn``).

    An operand is ``T`` when its non-K dim is contiguous and its K dim is not (A), or its K dim is
    contiguous and its N dim is not (B); anything else (row-major, or strided both ways) is ``N``.
    """
    a = "T" if sam == 1 and sak != 1 else "N"
    b = "T" if sbk == 1 and sbn != 1 else "N"
    return a + b


def _bucket(n: int) -> int:
    return max(16, 1 << max(n - 1, 0).bit_length())


def bucket_key(dtype_name: str, m: int, n: int, k: int, layout: str | None = None) -> str:
    """The table key of a GEMM: dtype class, the M, N, K buckets and, when given, the layout, e.g.
    ``f16:M16:N4096:K4096`` or ``f16:M4096:N4096:K4096:NT``."""
    key = f"{dtype_class(dtype_name)}:M{_bucket(m)}:N{_bucket(n)}:K{_bucket(k)}"
    if layout is None:
        return key
    if layout not in LAYOUTS:
        raise NbxValueError(f"GEMM configuration: layout must be one of {', '.join(LAYOUTS)}, got {layout!r}")
    return f"{key}:{layout}"


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


_FIELDS = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_warps", "num_stages")
_OPTIONAL = ("TMA", "SPLIT_K", "PERSISTENT", "WS")


def check(config: Any, where: str) -> Config:
    """``config`` if it is a well-formed configuration, else an NbxValueError naming ``where`` it
    came from: the six fields (BLOCK_* powers of two; the others positive integers),
    optionally TMA (0 or 1), SPLIT_K (a positive integer), PERSISTENT (programs per SM, 0 for one
    program per tile) and WS (0 or 1; 1 with BLOCK_M 128, four warps and no SPLIT_K), nothing
    else."""
    def bad(why: str) -> NbxValueError:
        return NbxValueError(f"GEMM configuration {where}: {why}; fix or delete the entry (tune() writes "
                             f"well-formed ones), got {config!r}")

    if not isinstance(config, dict):
        raise bad("must be a JSON object")
    missing = [f for f in _FIELDS if f not in config]
    extra = sorted(set(config) - set(_FIELDS) - set(_OPTIONAL))
    if missing or extra:
        raise bad(f"missing {missing}" if missing else f"unknown keys {extra}")
    for key, value in config.items():
        if isinstance(value, bool) or not isinstance(value, int):
            raise bad(f"{key} must be an integer")
    for key in ("BLOCK_M", "BLOCK_N", "BLOCK_K"):
        if config[key] < 1 or config[key] & (config[key] - 1):
            raise bad(f"{key} must be a power of two")
    if min(config["GROUP_M"], config["num_warps"], config["num_stages"], config.get("SPLIT_K", 1)) < 1:
        raise bad("GROUP_M, num_warps, num_stages and SPLIT_K must be at least 1")
    if config.get("TMA", 0) not in (0, 1):
        raise bad("TMA must be 0 or 1")
    if config.get("PERSISTENT", 0) < 0:
        raise bad("PERSISTENT must be 0 or more")
    if config.get("WS", 0) not in (0, 1):
        raise bad("WS must be 0 or 1")
    if config.get("WS") and (config["BLOCK_M"] != 128 or config["num_warps"] != 4 or config.get("SPLIT_K", 1) != 1):
        raise bad("WS needs BLOCK_M 128, num_warps 4 and no SPLIT_K (two consumer warp groups of 64 rows)")
    return dict(config)


def lookup(dtype_name: str, m: int, n: int, k: int, layout: str = "NN", ws: bool = True) -> Config:
    """The configuration for a GEMM of this dtype, shape and layout (user cache, then the shipped
    table's shapes, layout's key before the layout-free one in each, then its rules); without
    ``ws``, the first of them that does not ask for the warp-specialized kernel."""
    exact, free = bucket_key(dtype_name, m, n, k, layout), bucket_key(dtype_name, m, n, k)
    for source, name in ((_user_cache(), str(cache_path())), (_table()["shapes"], _TABLE.name)):
        for key in (exact, free):
            if key in source:
                config = check(source[key], f"{key!r} in {name}")
                if ws or not config.get("WS"):
                    return config
    cls, bm, bn, bk = dtype_class(dtype_name), _bucket(m), _bucket(n), _bucket(k)
    for rule in _table()["rules"]:
        if rule["dtype"] == cls and rule.get("layout", layout) == layout and bm <= rule.get("max_m", bm) \
                and bn <= rule.get("max_n", bn) and bk <= rule.get("max_k", bk) \
                and (ws or not rule["config"].get("WS")):
            return dict(rule["config"])
    raise NbxValueError(f"GEMM configuration: no rule in {_TABLE.name} covers {exact}: add a rule without max_* "
                        f"bounds for dtype class {cls!r}")


def remember(dtype_name: str, m: int, n: int, k: int, config: Config, layout: str | None = None) -> None:
    """Persist ``config`` in the user cache (atomic write) for this GEMM's bucket, under the layout's
    key when ``layout`` is given, else under the layout-free key (every layout without its own)."""
    table = _user_cache()
    table[bucket_key(dtype_name, m, n, k, layout)] = dict(config)
    path = cache_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".gemm-", suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump(table, f, indent=1, sort_keys=True)
    os.replace(tmp, path)
