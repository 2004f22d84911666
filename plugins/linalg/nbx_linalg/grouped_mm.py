"""aten::_grouped_mm: a matrix product per group, the groups' bounds read on the device from ``offs``.

``offs`` (int32, G entries) holds each group's end: group g spans ``[offs[g-1], offs[g])`` (the
first starts at 0). Mixture-of-experts layers call it with their tokens sorted by expert, ``offs``
the running count of tokens per expert. torch's four cases:

- 2-D ``self`` (M, K) x 3-D ``mat2`` (G, K, N) -> (M, N): the groups split the rows, row r is
  multiplied by ``mat2[g]`` of the group g that holds it;
- 3-D ``self`` (G, M, K) x 2-D ``mat2`` (K, N) -> (M, N): the groups split the columns, column c
  is ``self[g] @ mat2[:, c]``. The same kernel runs on the transposed problem (out.T = mat2.T @
  self[g].T), as strides;
- 2-D x 2-D -> (G, M, N): the groups split the contracted dim, ``out[g] = self[:, s:e] @
  mat2[s:e, :]``;
- 3-D x 3-D without offs: a batched product (nbx_linalg.matmul's GEMM).

One kernel runs one program per (row tile, column tile): the groups are contiguous runs of rows,
so those that overlap a program's rows are the consecutive ones from the group of its first row
to the group of its last. It counts the ends at or before each of the two rows, then multiplies
its tiles once per group with that group's weight and stores the rows the group holds. For groups
of K (``SPLIT_K``) each program takes one group's tile, its K loop over the group's slice. Nothing
is read back on the host, so a plan replays the launch for new ``offs`` values.

Semantics beyond torch's: rows (columns) past ``offs[-1]`` are zeros (torch leaves them
unwritten), ``offs`` values past the split dim end at it, as torch's slices do, and ``offs`` that
decreases or starts below 0 raises an NbxValueError when the device's checks are read (torch's
loop then overwrites rows in launch order; no MoE layer makes such ``offs``). Operands may have
any strides (torch wants 16-byte aligned ones); the result has torch's layout, rows padded to 16
bytes. float16/bfloat16/float32 accumulate in float32 (float32 as IEEE unless
``nbx_linalg.set_float32_matmul_precision`` says otherwise) and round once. Tiles come from
:data:`nbx_linalg.configs.GEMM`, keyed by the mean rows per group.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import triton
import triton.language as tl
from nbx_core import dtypes as D
from nbx_core.errors import NbxTypeError, NbxValueError, ShapeError
from nbx_core.ops.views import permute
from nbx_core.runtime import checks
from nbx_core.runtime.kernels.copy import cast_to
from nbx_core.runtime.kernels.dot import dot_operand
from nbx_core.runtime.kernels.indexing import needs_int64
from nbx_core.runtime.kernels.tiles import grouped_tile
from nbx_core.runtime.launch import cdiv, launch, next_pow2
from nbx_core.shape import contiguous_strides
from nbx_core.tensor import NBXTensor, check_device, empty_tensor
from nbx_core.tensor.args import dtype_arg, same_dtype, tensor_arg

from . import configs
from .matmul import gemm
from .precision import triton_input_precision

OP = "aten::_grouped_mm"
DTYPES = frozenset({D.float16, D.bfloat16, D.float32})
"""What torch's grouped products take."""
_NO_GROUP = tl.constexpr(2**31 - 1)  # an end past every row: the padding lanes of a program's offs


@triton.jit
def _k_step(ptrs, k_in, EVEN_K: tl.constexpr):
    """One K step of an operand tile: only the K edge needs a mask (rows and columns were wrapped
    onto valid ones), and none when BLOCK_K divides K."""
    if EVEN_K:
        return tl.load(ptrs)
    else:
        return tl.load(ptrs, mask=k_in, other=0)


@triton.jit
def _tile_product(
    a_ptrs,
    b_ptrs,
    k_len,
    sak,
    sbk,
    rk,
    PRECISION: tl.constexpr,
    EVEN_K: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
):
    """The float32 product of the (BLOCK_M, k_len) tile at ``a_ptrs`` and the (k_len, BLOCK_N) tile
    at ``b_ptrs``, BLOCK_K at a time."""
    acc = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
    # At least one step, as the GEMM does (k_len == 0 takes one masked step): no zero-trip branch.
    for k in range(0, tl.maximum(tl.cdiv(k_len, BLOCK_K), 1)):
        k_in = rk < k_len - k * BLOCK_K
        a = _k_step(a_ptrs, k_in[None, :], EVEN_K)
        b = _k_step(b_ptrs, k_in[:, None], EVEN_K)
        acc = tl.dot(dot_operand(a), dot_operand(b), acc, input_precision=PRECISION)
        a_ptrs += BLOCK_K * sak
        b_ptrs += BLOCK_K * sbk
    return acc


@triton.jit
def _flag_bad_offs(starts, ends, live, rg, flag_ptr, BLOCK_G: tl.constexpr):
    """Raise the launch's flag with the first g whose end is below its start (offs[g] < offs[g-1],
    or offs[0] < 0)."""
    bad = live & (ends < starts)
    first = tl.min(tl.where(bad, rg, BLOCK_G), axis=0)
    if first < BLOCK_G:
        two = tl.arange(0, 2)
        tl.store(flag_ptr + two, tl.where(two == 0, 1, first).to(tl.int64))


@triton.jit
def _grouped_kernel(
    a_ptr,
    b_ptr,
    out_ptr,
    offs_ptr,
    flag_ptr,
    M,
    N,
    K,
    G,
    sam,
    sak,
    sbg,
    sbk,
    sbn,
    sog,
    som,
    son,
    SPLIT_K: tl.constexpr,
    PRECISION: tl.constexpr,
    EVEN_K: tl.constexpr,
    IDX: tl.constexpr,
    BLOCK_G: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
):
    # Offsets: this program's output tile (of group program_id // tiles when SPLIT_K), its rows and
    # columns wrapped onto valid ones for the loads (the stores are masked), and the groups'
    # bounds: group g spans [starts[g], ends[g]) of the split dim (the rows, or K with SPLIT_K).
    tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
    pid_m, pid_n = grouped_tile(tl.program_id(0) % tiles, M, N, BLOCK_M, BLOCK_N, GROUP_M)
    rm = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)).to(IDX)
    rn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)).to(IDX)
    rk = tl.arange(0, BLOCK_K).to(IDX)
    rg = tl.arange(0, BLOCK_G)
    live = rg < G
    ends = tl.load(offs_ptr + rg, mask=live, other=_NO_GROUP)
    starts = tl.load(offs_ptr + rg - 1, mask=live & (rg > 0), other=0)
    if tl.program_id(0) == 0:
        _flag_bad_offs(starts, ends, live, rg, flag_ptr, BLOCK_G)
    last_row = tl.minimum(pid_m * BLOCK_M + BLOCK_M, M) - 1
    if SPLIT_K:
        g_lo = tl.program_id(0) // tiles
        g_hi = g_lo
    else:
        # Row r is in group count(ends <= r): this tile's rows fall in the groups from its first
        # row's to its last row's (rows at or past the last end are in none).
        g_lo = tl.sum((ends <= pid_m * BLOCK_M).to(tl.int32), axis=0)
        g_hi = tl.minimum(tl.sum((ends <= last_row).to(tl.int32), axis=0), G - 1)
    a_rows = a_ptr + (rm % M)[:, None] * sam
    b_cols = b_ptr + (rn % N)[None, :] * sbn
    o_ptrs = out_ptr + rm[:, None] * som + rn[None, :] * son
    in_tile = (rm < M)[:, None] & (rn < N)[None, :]
    for g in range(g_lo, g_hi + 1):
        start = tl.sum(tl.where(rg == g, starts, 0), axis=0)
        end = tl.sum(tl.where(rg == g, ends, 0), axis=0)
        if SPLIT_K:
            # out[g] = a[:, start:end] @ b[start:end, :], the slice cut at K as torch's slices are.
            k_lo = tl.minimum(tl.maximum(start, 0), K)
            k_len = tl.minimum(tl.maximum(end, k_lo), K) - k_lo
            rows = in_tile
            b_group = b_cols
            o_group = o_ptrs + tl.cast(g, IDX) * sog
        else:
            # rows [start, end) of the tile times b[g].
            k_lo = 0
            k_len = K
            rows = in_tile & ((rm >= start) & (rm < end))[:, None]
            b_group = b_cols + tl.cast(g, IDX) * sbg
            o_group = o_ptrs
        if end > start:  # an empty group holds no rows and adds no K elements
            # Loads and math: the tile's product over the group's K elements, in float32.
            a_ptrs = a_rows + (k_lo + rk)[None, :] * sak
            b_ptrs = b_group + (k_lo + rk)[:, None] * sbk
            acc = _tile_product(a_ptrs, b_ptrs, k_len, sak, sbk, rk, PRECISION, EVEN_K, BLOCK_M, BLOCK_N, BLOCK_K)
            # Stores: the rows the group holds, rounded once.
            tl.store(o_group, cast_to(acc, out_ptr.dtype.element_ty), mask=rows)
        elif SPLIT_K:
            tl.store(o_group, tl.zeros((BLOCK_M, BLOCK_N), out_ptr.dtype.element_ty), mask=rows)
    if not SPLIT_K:
        # Rows in no group are zeros (torch leaves them unwritten).
        last = tl.sum(tl.where(rg == G - 1, ends, 0), axis=0)
        if last <= last_row:
            tl.store(
                o_ptrs, tl.zeros((BLOCK_M, BLOCK_N), out_ptr.dtype.element_ty), mask=in_tile & (rm >= last)[:, None]
            )


# -- launches -------------------------------------------------------------------------------------


def _tiles(
    a: NBXTensor, b: NBXTensor, m: int, n: int, k: int, config: dict[str, int] | None
) -> tuple[dict[str, int], dict[str, int]]:
    """The GEMM table's tiles for an (m, k) x (k, n) product of ``a``'s and ``b``'s layouts, as
    (BLOCK_* and GROUP_M, launch options); the GEMM kernel's extras (TMA, SPLIT_K, PERSISTENT) are
    not this kernel's."""
    layout = configs.layout_of(*a.stride()[-2:], *b.stride()[-2:])
    cfg = configs.GEMM.choose(config, a.dtype.name, m, n, k, layout, skip=("WS",))
    tiles = {f: cfg[f] for f in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M")}
    return tiles, {"num_warps": cfg["num_warps"], "num_stages": cfg["num_stages"]}


def _precision(dtype: D.DType) -> str:
    return triton_input_precision() if dtype is D.float32 else "ieee"


def _offs_error(split: str) -> Callable[[int], NbxValueError]:
    def make(g: int) -> NbxValueError:
        below = "0" if g == 0 else f"offs[{g - 1}]"
        return NbxValueError(
            f"{OP}: offs must hold the groups' cumulative ends, non-decreasing from 0, but offs[{g}] is below "
            f"{below}: pass the running sum of the {split} per group"
        )

    return make


def grouped(
    a: NBXTensor,
    b: NBXTensor,
    offs: NBXTensor,
    out: NBXTensor,
    split: str = "rows",
    config: dict[str, int] | None = None,
) -> None:
    """Groups of rows: ``out`` (M, N) = each row of ``a`` (M, K) times ``b[g]`` (K, N) of its group g;
    or, for a 2-D ``b``, groups of K: ``out[g]`` (M, N) = ``a[:, s:e] @ b[s:e, :]``. Any strides;
    ``split`` names what the groups split in errors, ``config`` replaces the GEMM table's lookup."""
    (m, k), n, g = a.shape, out.shape[-1], offs.shape[0]
    split_k = b.ndim == 2
    b_st = b.stride() if not split_k else (0, *b.stride())
    o_st = out.stride() if split_k else (0, *out.stride())
    # Tiles for one group's product: the mean rows (or K elements) per group.
    rows, depth = (m, cdiv(k, max(g, 1))) if split_k else (cdiv(m, max(g, 1)), k)
    tiles, options = _tiles(a, b, rows, n, depth, config)
    grid = cdiv(m, tiles["BLOCK_M"]) * cdiv(n, tiles["BLOCK_N"]) * (g if split_k else 1)
    if grid == 0:
        return
    flag = checks.slot(a.device)
    launch(
        _grouped_kernel,
        (grid,),
        a,
        b,
        out,
        offs,
        flag,
        m,
        n,
        k,
        g,
        *a.stride(),
        *b_st,
        *o_st,
        SPLIT_K=split_k,
        PRECISION=_precision(a.dtype),
        EVEN_K=not split_k and k > 0 and k % tiles["BLOCK_K"] == 0,
        IDX=tl.int64 if needs_int64(out.numel(), a, b, out) else tl.int32,
        BLOCK_G=next_pow2(g),
        **tiles,
        **options,
    )
    checks.raise_later(flag, _offs_error(split))


def _result(shape: tuple[int, ...], dtype: D.DType, device: Any) -> NBXTensor:
    """A new result in torch's layout: each row padded to a multiple of 16 bytes (torch's CUDA
    kernels store it through TMA, and its CPU fallback allocates the same)."""
    align = 16 // dtype.itemsize
    padded = (*shape[:-1], cdiv(shape[-1], align) * align)
    storage = empty_tensor(padded, dtype, device).storage
    return NBXTensor(storage, shape, contiguous_strides(padded), 0, dtype)


# -- the ATen op ----------------------------------------------------------------------------------


def _needs_offs(offs: NBXTensor | None, what: str) -> NBXTensor:
    if offs is None:
        raise NbxValueError(f"{OP}: {what} needs offs, the groups' cumulative ends (int32): pass offs")
    return offs


def _group_count(offs: NBXTensor, arg: str, size: int) -> None:
    if offs.shape[0] != size:
        raise ShapeError(f"{OP}: offs has {offs.shape[0]} groups but {arg} has {size}: pass one end per group")


def _grouped_mm(
    self: NBXTensor,
    mat2: NBXTensor,
    offs: NBXTensor | None = None,
    bias: NBXTensor | None = None,
    out_dtype: Any = None,
) -> NBXTensor:
    """aten::_grouped_mm: per-group products of 2-D/3-D ``self`` and ``mat2``, groups ended by ``offs``."""
    a = tensor_arg(OP, self, "self", dtypes=DTYPES, ndim=(2, 3))
    b = tensor_arg(OP, mat2, "mat2", dtypes=DTYPES, ndim=(2, 3))
    dtype = same_dtype(OP, ("self", a), ("mat2", b))
    if bias is not None:
        raise NbxValueError(f"{OP}: bias is not supported (torch refuses it too): add the bias to the result")
    want = dtype_arg(OP, out_dtype, arg="out_dtype")
    if want is not None and want is not dtype:
        raise NbxTypeError(f"{OP}: out_dtype must be self's dtype ({dtype}), got {want}: leave it None")
    if offs is not None:
        tensor_arg(OP, offs, "offs", dtypes=(D.int32,), ndim=1)
    device = check_device(OP, a, b, offs)
    if a.shape[-1] != b.shape[-2]:
        raise ShapeError(
            f"{OP}: self of shape {list(a.shape)} and mat2 of shape {list(b.shape)} do not fit: "
            f"self's last dim ({a.shape[-1]}) must equal mat2's second to last ({b.shape[-2]})"
        )
    if a.ndim == 3 and b.ndim == 3:
        if offs is not None:
            raise NbxValueError(
                f"{OP}: a 3-D self times a 3-D mat2 is a batched product and takes no offs: pass offs=None"
            )
        if a.shape[0] != b.shape[0]:
            raise ShapeError(f"{OP}: self has {a.shape[0]} matrices and mat2 {b.shape[0]}: pass equal batches")
        return gemm(OP, a, b, out=_result((a.shape[0], a.shape[1], b.shape[2]), dtype, device))
    offs = _needs_offs(offs, "a 2-D self or mat2")
    if a.ndim == 2 and b.ndim == 3:
        _group_count(offs, "mat2", b.shape[0])
        out = _result((a.shape[0], b.shape[2]), dtype, device)
        grouped(a, b, offs, out)
    elif a.ndim == 3:
        # Column groups are row groups of the transposed problem: out.T = mat2.T @ self[g].T.
        _group_count(offs, "self", a.shape[0])
        out = _result((a.shape[1], b.shape[1]), dtype, device)
        grouped(permute(b, 1, 0), permute(a, 0, 2, 1), offs, permute(out, 1, 0), "columns")
    else:
        out = _result((offs.shape[0], a.shape[0], b.shape[1]), dtype, device)
        grouped(a, b, offs, out, "contracted elements")
    return out
