"""GEMM tile configurations: the tunable of nbx-linalg's GEMM kernel, its key and its rules.

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
into buckets (each of M, N, K rounded up to a power of two, 16 at least) and operands into a
layout: two letters, A's then B's, ``N`` when the operand is stored row-major ((M, K) and (K, N)
with the last dim contiguous) and ``T`` when it is stored transposed (its K dim, for B, or its M
dim, for A, contiguous). ``mm`` is ``NN``; ``linear`` (``x @ W.T``, W stored (N, K)) and attention
scores ``q @ k.T`` are ``NT``.

:data:`GEMM` is looked up as every tunable is (:mod:`nbx_core.runtime.tuning`): the user cache
(``nbx tune --family linalg``), then ``configs/h200.json`` on sm_90 GPUs (its shapes, a layout's key
``f16:M4096:N4096:K4096:NT`` before the layout-free ``f16:M4096:N4096:K4096``, then its rules), then
:func:`_gpu_rule`, one configuration per dtype class. Nothing is timed on first use. This module
imports no Triton.
"""

from __future__ import annotations

from pathlib import Path

from nbx_core.errors import NbxValueError
from nbx_core.runtime.tuning import Key, Tunable, bucket

Config = dict[str, int]
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
"""What ``nbx tune --family linalg`` tries at a shape without candidates of its own
(:mod:`nbx_linalg.tuning`), for float16/bfloat16: large tiles (GROUP_M 8 and 16,
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


def key(dtype_name: str, m: int, n: int, k: int, layout: str = "NN") -> Key:
    """The lookup key of a GEMM: dtype class, the M, N, K buckets and the (optional) layout, e.g.
    ``f16:M4096:N4096:K4096:NT``, then ``f16:M4096:N4096:K4096``. ``dtype_name`` is ``int64`` for
    products without tensor cores (integers, float64)."""
    if layout not in LAYOUTS:
        raise NbxValueError(f"GEMM configuration: layout must be one of {', '.join(LAYOUTS)}, got {layout!r}")
    return Key({"dtype": dtype_class(dtype_name), "M": bucket(m, 16), "N": bucket(n, 16), "K": bucket(k, 16),
                "layout": layout}, optional=("layout",))


def bucket_key(dtype_name: str, m: int, n: int, k: int, layout: str | None = None) -> str:
    """The key text of a GEMM, with its layout when given: ``f16:M16:N4096:K4096``."""
    return key(dtype_name, m, n, k, layout or "NN").text(layout is not None)


_PER_CLASS = {
    "f16": (128, 256, 64, 8, 8, 3),
    "f32": (128, 128, 32, 8, 8, 3),
    "f64": (64, 64, 16, 8, 4, 2),
    "int": (32, 32, 8, 8, 4, 2),
}
_FIELDS = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_warps", "num_stages")


def _gpu_rule(dtype_name: str, m: int, n: int, k: int, layout: str = "NN") -> Config:
    # Large tiles where no table entry or table rule is closer (on sm_90 the table's rules cover
    # decoding, small-M and narrow-N half-type shapes).
    return dict(zip(_FIELDS, _PER_CLASS[dtype_class(dtype_name)], strict=True))


def _interpreter_rule(dtype_name: str, m: int, n: int, k: int, layout: str = "NN") -> Config:
    # The interpreter pays per program, not per element: few, large tiles.
    side = 32 if dtype_name == "int64" else 128
    return {"BLOCK_M": min(bucket(m, 16), side), "BLOCK_N": min(bucket(n, 16), side),
            "BLOCK_K": min(bucket(k, 16), side), "GROUP_M": 8, "num_warps": 1, "num_stages": 1}


def _usable(config: Config) -> str | None:
    if config.get("WS") and (config["BLOCK_M"] != 128 or config["num_warps"] != 4 or config.get("SPLIT_K", 1) != 1):
        return "WS needs BLOCK_M 128, num_warps 4 and no SPLIT_K (two consumer warp groups of 64 rows)"
    return None


GEMM = Tunable(
    "linalg", "gemm",
    {"BLOCK_M": "pow2", "BLOCK_N": "pow2", "BLOCK_K": "pow2", "GROUP_M": "count", "num_warps": "count",
     "num_stages": "count", "TMA": "flag", "SPLIT_K": "count", "PERSISTENT": "count0", "WS": "flag"},
    optional=("TMA", "SPLIT_K", "PERSISTENT", "WS"), key=key, rule=_gpu_rule, interpreter=_interpreter_rule,
    check=_usable, tables=Path(__file__).with_name("configs"))
"""The GEMM kernel's tiles. Arguments: the dtype's name (``int64`` for products without tensor
cores), M, N, K and the layout; lookups that cannot run the warp-specialized kernel pass
``skip=("WS",)``."""
