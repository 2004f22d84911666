"""Matrix products: one batched, strided GEMM kernel with an alpha/beta epilogue, and the ATen ops on it.

``gemm`` computes ``out = alpha * (a @ b) + beta * c`` for ``a`` (*batch, M, K) and ``b``
(*batch, K, N) with any strides (transposed, sliced, stride-0 broadcast batch dims) and ``c``
broadcast to the output; no operand is copied. mm, bmm, addmm, baddbmm, matmul, linear, mv,
addmv, dot and addr are views plus one ``gemm`` call.

Numerics follow torch on the CPU: float32 multiplies in IEEE float32 (TF32 only after
``nbx_linalg.set_float32_matmul_precision("high")``), float16/bfloat16 accumulate in float32 and
round once, float64 stays float64. Integer products are supported as torch supports them:
accumulated in int64 and wrapped to the result dtype at the store, which equals torch's wrapping
arithmetic. ``beta == 0`` ignores ``c`` entirely (NaN and inf included) and ``alpha == 0`` ignores
the product, as torch does. Float ``alpha``/``beta`` with integer tensors are truncated, as torch's
addmm/addmv/baddbmm do (addr refuses them, as torch does).

The tile configuration comes from :data:`nbx_linalg.configs.GEMM` by dtype, shape bucket and
operand layout (on a GPU: the user cache written by ``nbx tune``, the shipped table for its
architecture, the rule; on the interpreter large tiles keep the number of programs small), unless
``gemm`` is given ``config=``. Operands are loaded through pointers (``cp.async`` on
Hopper) or, where the configuration says ``TMA`` and strides and alignment allow, for half types,
through tensor descriptors the kernel builds (Hopper's copy engine). Where it says ``WS``, products
of half-type row-major stacks without ``c`` run :mod:`nbx_linalg.warp_specialized`'s persistent,
warp-specialized kernel instead.
"""


from collections.abc import Sequence
from contextlib import nullcontext
from typing import Any

import triton
import triton.language as tl
from nbx_core import dtypes as D
from nbx_core.errors import NbxTypeError, ShapeError
from nbx_core.runtime.kernels.copy import cast_to
from nbx_core.runtime.kernels.descriptors import descriptor_memory, tma_readable
from nbx_core.runtime.kernels.dot import dot_operand
from nbx_core.runtime.kernels.indexing import needs_int64, strided_offsets
from nbx_core.runtime.kernels.tickets import last_to_arrive, tickets
from nbx_core.runtime.kernels.tiles import grouped_tile
from nbx_core.runtime.launch import cdiv, launch, multiprocessors
from nbx_core.runtime.pointwise import tl_dtype
from nbx_core.runtime.traits import TRAITS
from nbx_core.shape import broadcast_shapes, broadcast_strides, coalesce, contiguous_strides, numel, view_strides
from nbx_core.tensor import NBXTensor, check_device, empty_tensor
from nbx_core.tensor.args import (
    BOOL,
    FLOATING,
    INTEGRAL,
    check_broadcasts_to,
    number_arg,
    out_arg,
    same_dtype,
    tensor_arg,
)

from . import configs, warp_specialized
from .precision import triton_input_precision

_MAX_GRID_Y = 65535


@triton.jit
def _gemm_kernel(
    a_ptr, b_ptr, c_ptr, out_ptr, part_ptr, cnt_ptr, M, N, K, k_chunk, batch0, batches,
    bshape, a_bs, b_bs, c_bs, o_bs,
    sam, sak, sbk, sbn, scm, scn, som, son,
    alpha_f: tl.float64, beta_f: tl.float64, alpha_i: tl.int64, beta_i: tl.int64, epi,
    HAS_C: tl.constexpr, C_ROW: tl.constexpr, USE_DOT: tl.constexpr, INT_ACC: tl.constexpr,
    PRECISION: tl.constexpr,
    ACC: tl.constexpr, BNDIM: tl.constexpr, EVEN_K: tl.constexpr, INT64: tl.constexpr,
    TMA: tl.constexpr, A_T: tl.constexpr, B_T: tl.constexpr, SPLIT: tl.constexpr, PERSISTENT: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    EPI: tl.constexpr = None, EPI_ROUND: tl.constexpr = None,
):
    # EPI: an elementwise epilogue that nbx_core.fusion generated (see gemm_epilogue below); it takes
    # the tile rounded to EPI_ROUND, the product's dtype, and stores its own result.
    # Grid: (output tiles, batches, K slices), or with PERSISTENT (programs,): each program walks the
    # (batch, tile) pairs a grid's width apart, its tile loop flattened with the K loop so that the
    # next tile's loads are in flight while this tile's results are stored. Short reductions (K of
    # one or two steps, large outputs) are bound by those stores.
    if PERSISTENT:
        tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
        for t in tl.range(tl.program_id(0), tiles * batches, tl.num_programs(0), flatten=True):
            _gemm_tile(a_ptr, b_ptr, c_ptr, out_ptr, part_ptr, cnt_ptr, t % tiles, t // tiles + batch0, M, N, K,
                       k_chunk, bshape, a_bs, b_bs, c_bs, o_bs, sam, sak, sbk, sbn, scm, scn, som, son,
                       alpha_f, beta_f, alpha_i, beta_i, epi, HAS_C, C_ROW, USE_DOT, INT_ACC, PRECISION, ACC,
                       BNDIM, EVEN_K, INT64, TMA, A_T, B_T, SPLIT, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, EPI, EPI_ROUND)
    else:
        _gemm_tile(a_ptr, b_ptr, c_ptr, out_ptr, part_ptr, cnt_ptr, tl.program_id(0), tl.program_id(1) + batch0,
                   M, N, K, k_chunk, bshape, a_bs, b_bs, c_bs, o_bs, sam, sak, sbk, sbn, scm, scn, som, son,
                   alpha_f, beta_f, alpha_i, beta_i, epi, HAS_C, C_ROW, USE_DOT, INT_ACC, PRECISION, ACC,
                   BNDIM, EVEN_K, INT64, TMA, A_T, B_T, SPLIT, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, EPI, EPI_ROUND)


class _GemmEpilogue:
    """How nbx_core.fusion hands ``_gemm_kernel`` an elementwise epilogue (``EPI``): a launch whose
    result is dense (batch, M, N), with no integer or float64 accumulator, takes one."""

    def output(self, args: Sequence[Any], kwargs: dict[str, Any]) -> tuple[int, int] | None:
        """(position of the output argument, its element count), or None: no epilogue here."""
        out, m, n, batch0, batches, bshape, o_bs, som, son = (args[3], args[6], args[7], args[10], args[11],
                                                             args[12], args[16], args[23], args[24])
        if kwargs["INT_ACC"] or kwargs["ACC"] != tl.float32 or out.offset != 0 or (som, son) != (n, 1):
            return None
        total = numel(bshape)
        dense = tuple(s * m * n for s in contiguous_strides(bshape))
        if batch0 != 0 or batches != total or any(
                b > 1 and st != d for b, st, d in zip(bshape, o_bs, dense, strict=True)):
            return None
        return 3, total * m * n

    def attach(self, args: Sequence[Any], kwargs: dict[str, Any], fn: Any, epi: tuple) -> tuple[list, dict]:
        """The launch's arguments with ``fn`` as its epilogue, taking ``epi``."""
        args = list(args)
        round_to = tl_dtype(args[3].dtype)
        args[29] = epi
        return args, {**kwargs, "EPI": fn, "EPI_ROUND": round_to}


_gemm_kernel.nbx_epilogue = _GemmEpilogue()


@triton.jit
def _gemm_tile(
    a_ptr, b_ptr, c_ptr, out_ptr, part_ptr, cnt_ptr, pid, batch, M, N, K, k_chunk,
    bshape, a_bs, b_bs, c_bs, o_bs, sam, sak, sbk, sbn, scm, scn, som, son,
    alpha_f, beta_f, alpha_i, beta_i, epi,
    HAS_C: tl.constexpr, C_ROW: tl.constexpr, USE_DOT: tl.constexpr, INT_ACC: tl.constexpr,
    PRECISION: tl.constexpr, ACC: tl.constexpr, BNDIM: tl.constexpr, EVEN_K: tl.constexpr, INT64: tl.constexpr,
    TMA: tl.constexpr, A_T: tl.constexpr, B_T: tl.constexpr, SPLIT: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    EPI: tl.constexpr, EPI_ROUND: tl.constexpr,
):
    """Output tile ``pid`` (grouped order) of batch ``batch``. With SPLIT, K slice
    ``tl.program_id(2)`` multiplies K elements [s * k_chunk, (s + 1) * k_chunk) and stores its
    partial tile; the last slice of a tile to finish adds the partials in slice order and runs the
    epilogue."""
    pid_m, pid_n = grouped_tile(pid, M, N, BLOCK_M, BLOCK_N, GROUP_M)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    if INT64:
        batch = batch.to(tl.int64)
        rm = rm.to(tl.int64)
        rn = rn.to(tl.int64)
        rk = rk.to(tl.int64)
    # Rows and columns past the edge wrap onto valid ones, so only K needs a load mask; the
    # store below is masked.
    am = rm % M
    bn = rn % N
    a_base = a_ptr + strided_offsets(batch, bshape, a_bs, BNDIM)
    b_base = b_ptr + strided_offsets(batch, bshape, b_bs, BNDIM)
    if SPLIT:
        k_lo = tl.program_id(2) * k_chunk
        K = tl.minimum(K - k_lo, k_chunk)
        a_base += k_lo * sak
        b_base += k_lo * sbk
    a_ptrs = a_base + am[:, None] * sam + rk[None, :] * sak
    b_ptrs = b_base + rk[:, None] * sbk + bn[None, :] * sbn
    if TMA:
        # Each operand as stored, its contiguous dim last (A_T: A is (K, M) in memory, B_T: B is
        # (N, K)); the copy engine zero-fills past every edge, so nothing is masked (the pointers
        # above go unused and are compiled away).
        if A_T:
            a_desc = tl.make_tensor_descriptor(a_base, [K, M], [sak, 1], [BLOCK_K, BLOCK_M])
        else:
            a_desc = tl.make_tensor_descriptor(a_base, [M, K], [sam, 1], [BLOCK_M, BLOCK_K])
        if B_T:
            b_desc = tl.make_tensor_descriptor(b_base, [N, K], [sbn, 1], [BLOCK_N, BLOCK_K])
        else:
            b_desc = tl.make_tensor_descriptor(b_base, [K, N], [sbk, 1], [BLOCK_K, BLOCK_N])

    acc = tl.zeros((BLOCK_M, BLOCK_N), ACC)
    # At least one step (K == 0 takes one fully masked step), so the loop has no zero-trip branch:
    # with one, Triton 3.6 zeroed the accumulator on the skip path and ptxas serialised every wgmma
    # of the loop (warning C7515, seen for a K-major B without a bias).
    for k in range(0, tl.maximum(tl.cdiv(K, BLOCK_K), 1)):
        if TMA:
            # A transposed tile stays in shared memory as loaded: wgmma reads either major order.
            if A_T:
                a = tl.trans(a_desc.load([k * BLOCK_K, pid_m * BLOCK_M]))
            else:
                a = a_desc.load([pid_m * BLOCK_M, k * BLOCK_K])
            if B_T:
                b = tl.trans(b_desc.load([pid_n * BLOCK_N, k * BLOCK_K]))
            else:
                b = b_desc.load([k * BLOCK_K, pid_n * BLOCK_N])
        elif EVEN_K:
            a = tl.load(a_ptrs)
            b = tl.load(b_ptrs)
        else:
            left = K - k * BLOCK_K
            a = tl.load(a_ptrs, mask=rk[None, :] < left, other=0)
            b = tl.load(b_ptrs, mask=rk[:, None] < left, other=0)
        if USE_DOT:
            acc = tl.dot(dot_operand(a), dot_operand(b), acc, input_precision=PRECISION)
        else:
            acc += tl.sum(a.to(ACC)[:, :, None] * b.to(ACC)[None, :, :], axis=1)
        a_ptrs += BLOCK_K * sak
        b_ptrs += BLOCK_K * sbk

    if SPLIT:
        tile = (tl.program_id(1) * tl.num_programs(2) + tl.program_id(2)) * tl.num_programs(0) + tl.program_id(0)
        tl.store(_partial(part_ptr, tile, BLOCK_M, BLOCK_N), acc)
        counter = tl.program_id(1) * tl.num_programs(0) + tl.program_id(0)
        if last_to_arrive(cnt_ptr, counter, tl.num_programs(2)):
            total = tl.zeros((BLOCK_M, BLOCK_N), ACC)
            for q in range(0, tl.num_programs(2)):
                tile = (tl.program_id(1) * tl.num_programs(2) + q) * tl.num_programs(0) + tl.program_id(0)
                total += tl.load(_partial(part_ptr, tile, BLOCK_M, BLOCK_N))
            _epilogue(total, rm, rn, batch, c_ptr, out_ptr, M, N, bshape, c_bs, o_bs, scm, scn, som, son,
                      alpha_f, beta_f, alpha_i, beta_i, epi, HAS_C, C_ROW, INT_ACC, ACC, BNDIM, BLOCK_M, BLOCK_N,
                      EPI, EPI_ROUND)
    else:
        _epilogue(acc, rm, rn, batch, c_ptr, out_ptr, M, N, bshape, c_bs, o_bs, scm, scn, som, son,
                  alpha_f, beta_f, alpha_i, beta_i, epi, HAS_C, C_ROW, INT_ACC, ACC, BNDIM, BLOCK_M, BLOCK_N,
                  EPI, EPI_ROUND)


@triton.jit
def _partial(part_ptr, tile, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Pointers to partial tile ``tile`` of a split GEMM's workspace."""
    offs = tl.arange(0, BLOCK_M)[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]
    return part_ptr + tile.to(tl.int64) * (BLOCK_M * BLOCK_N) + offs


@triton.jit
def _epilogue(acc, rm, rn, batch, c_ptr, out_ptr, M, N, bshape, c_bs, o_bs, scm, scn, som, son,
              alpha_f, beta_f, alpha_i, beta_i, epi, HAS_C: tl.constexpr, C_ROW: tl.constexpr, INT_ACC: tl.constexpr,
              ACC: tl.constexpr, BNDIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
              EPI: tl.constexpr, EPI_ROUND: tl.constexpr):
    """``alpha * acc + beta * c``, stored to the output tile (rm, rn) of batch ``batch``, or handed
    to ``EPI`` with each element's index in the dense (batch, M, N) result."""
    if INT_ACC:
        acc = acc * tl.full((BLOCK_M, BLOCK_N), alpha_i, tl.int64)
    else:
        acc = acc * tl.full((BLOCK_M, BLOCK_N), alpha_f, ACC)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    if HAS_C:
        c_base = c_ptr + strided_offsets(batch, bshape, c_bs, BNDIM)
        if C_ROW:
            # One row broadcast down the columns (a bias): load it once, not once per row.
            c = tl.load(c_base + rn * scn, mask=rn < N, other=0).to(ACC)[None, :]
        else:
            c = tl.load(c_base + rm[:, None] * scm + rn[None, :] * scn, mask=mask, other=0).to(ACC)
        if INT_ACC:
            acc += tl.full((BLOCK_M, BLOCK_N), beta_i, tl.int64) * c
        else:
            acc += tl.full((BLOCK_M, BLOCK_N), beta_f, ACC) * c
    if EPI is not None:
        EPI(cast_to(acc, EPI_ROUND), (batch * M + rm[:, None]) * N + rn[None, :], mask, epi)
    else:
        o_off = strided_offsets(batch, bshape, o_bs, BNDIM) + rm[:, None] * som + rn[None, :] * son
        tl.store(out_ptr + o_off, cast_to(acc, out_ptr.dtype.element_ty), mask=mask)


def _strided(t: NBXTensor, shape: tuple[int, ...], strides: tuple[int, ...]) -> NBXTensor:
    return NBXTensor(t.storage, shape, strides, t.storage_offset(), t.dtype)


def _acc_dtype(dtype: D.DType) -> D.DType:
    if dtype.is_integral:
        return D.int64
    return D.float64 if dtype is D.float64 else D.float32


def _tma_operand(t: NBXTensor, strides: tuple[int, ...], batch_strides: tuple[int, ...], transposed: bool) -> bool:
    """Whether the copy engine (TMA) can read matrix operand ``t`` (its two matrix ``strides`` and
    coalesced ``batch_strides`` as the kernel sees them), its contiguous dim the last one or, when
    ``transposed``, the first one."""
    inner, outer = (strides[-2], strides[-1]) if transposed else (strides[-1], strides[-2])
    return tma_readable(t, inner, outer, batch_strides)


def gemm(op: str, a: NBXTensor, b: NBXTensor, c: NBXTensor | None = None, *, alpha: Any = 1, beta: Any = 0,
         out: NBXTensor | None = None, out_dtype: D.DType | None = None,
         config: dict[str, int] | None = None, zero_alpha_skips: bool = True) -> NBXTensor:
    """``alpha * (a @ b) + beta * c`` for ``a`` (*batch, M, K) and ``b`` (*batch, K, N).

    Batch dims broadcast; ``c`` broadcasts to the result (*batch, M, N) and is ignored when
    ``beta == 0``. ``alpha == 0`` ignores the product (NaN included) as BLAS does, unless
    ``zero_alpha_skips`` is false (torch's elementwise ``addr`` multiplies NaN by 0). The result
    goes to ``out`` when given (any strides, the result's shape) or to a new contiguous tensor of
    ``out_dtype`` (default: ``a``'s dtype). Callers validate dtypes and shapes with op-specific
    messages; this checks devices.
    """
    m, k = a.shape[-2:]
    n = b.shape[-1]
    batch = broadcast_shapes(op, a.shape[:-2], b.shape[:-2])
    shape = (*batch, m, n)
    device = check_device(op, a, b, *(t for t in (c, out) if t is not None))
    if out is None:
        out = empty_tensor(shape, out_dtype or a.dtype, device)
    if numel(shape) == 0:
        return out
    acc = _acc_dtype(D.promote_types(a.dtype, b.dtype, out.dtype))
    use_c = c is not None and bool(beta != 0)
    if alpha == 0 and zero_alpha_skips:
        k = 0
    a_st = broadcast_strides(a.shape, a.stride(), (*batch, m, a.shape[-1]))
    b_st = broadcast_strides(b.shape, b.stride(), (*batch, b.shape[-2], n))
    c_st = broadcast_strides(c.shape, c.stride(), shape) if use_c else (0,) * len(shape)
    o_st = out.stride()
    nb = len(batch)
    bshape, (a_bs, b_bs, c_bs, o_bs) = coalesce(batch, a_st[:nb], b_st[:nb], c_st[:nb], o_st[:nb])
    # float64 multiplies with FMAs: Triton 3.6 cannot compile a float64 tl.dot for sm_90.
    use_dot = acc.is_floating_point and a.dtype is b.dtype and a.dtype.is_floating_point and a.dtype is not D.float64
    layout = configs.layout_of(a_st[-2], a_st[-1], b_st[-2], b_st[-1])
    tile_args = (a.dtype.name if use_dot else "int64", m, n, k, layout)
    cfg = configs.GEMM.choose(config, *tile_args)
    a_t, b_t = layout[0] == "T", layout[1] == "T"
    nbatch = numel(batch)
    if cfg.get("WS"):
        if use_dot and not use_c and cfg.get("SPLIT_K", 1) == 1 and warp_specialized.applies(
                a, b, out, (m, n, k), a_st, b_st, o_st, (a_bs, b_bs, o_bs), nbatch, cfg, b_t):
            with descriptor_memory(device):
                warp_specialized.ws_gemm(a, b, out, (m, n, k), a_st, b_st, o_st, nbatch, alpha, cfg, b_t,
                                         max(cfg.get("PERSISTENT", 0), 1) * multiprocessors(device.index or 0))
            return out
        # The table's next entry for this shape (a configuration passed in keeps its tiles).
        cfg = configs.GEMM.choose(config, *tile_args, skip=("WS",))
        cfg.pop("WS", None)
    bm, bn, bk = cfg.pop("BLOCK_M"), cfg.pop("BLOCK_N"), cfg.pop("BLOCK_K")
    split_k = cfg.pop("SPLIT_K", 1)
    per_sm = cfg.pop("PERSISTENT", 0)
    # TMA loads where the configuration asks for them and both half-type operands allow; otherwise
    # pointer loads.
    tma = bool(cfg.pop("TMA", 0)) and use_dot and a.dtype in (D.float16, D.bfloat16) and k > 0 and split_k == 1 \
        and _tma_operand(a, a_st, a_bs, a_t) and _tma_operand(b, b_st, b_bs, b_t)
    if not use_dot and TRAITS.tiles_on_chip:
        bm, bn, bk = min(bm, 32), min(bn, 32), min(bk, 8)  # the broadcast product lives in registers
    # SPLIT_K slices of whole BLOCK_K steps (of the BLOCK_K the kernel runs).
    k_chunk = cdiv(cdiv(k, split_k), bk) * bk if k else bk
    splits = cdiv(k, k_chunk) if k else 1
    persistent = bool(per_sm) and splits == 1 and not tma
    precision = triton_input_precision() if a.dtype is D.float32 else "ieee"
    is_int = acc.is_integral
    tensors = [t for t in (a, b, out) if t is not None] + ([c] if use_c else [])
    tiles = cdiv(m, bm) * cdiv(n, bn)
    with descriptor_memory(device) if tma else nullcontext():
        for start in range(0, nbatch, _MAX_GRID_Y):
            batches = min(nbatch - start, _MAX_GRID_Y)
            part = cnt = out
            if splits > 1:
                # A partial tile per (batch, slice, tile), a ticket counter per (batch, tile).
                part = empty_tensor((batches * splits * tiles, bm * bn), acc, device)
                cnt = tickets(device, batches * tiles)
            grid = (min(tiles * batches, per_sm * multiprocessors(device.index or 0)),) if persistent \
                else (tiles, batches, splits)
            launch(
                _gemm_kernel, grid,
                a, b, c if use_c else out, out, part, cnt, m, n, k, k_chunk, start, batches,
                bshape, a_bs, b_bs, c_bs, o_bs,
                a_st[-2], a_st[-1], b_st[-2], b_st[-1], c_st[-2], c_st[-1], o_st[-2], o_st[-1],
                0.0 if is_int else float(alpha), 0.0 if is_int else float(beta),
                int(alpha) if is_int else 0, int(beta) if is_int else 0, (),
                HAS_C=use_c, C_ROW=use_c and c_st[-2] == 0, USE_DOT=use_dot, INT_ACC=is_int, PRECISION=precision,
                ACC=tl_dtype(acc), BNDIM=len(bshape), EVEN_K=k > 0 and k % bk == 0,
                INT64=needs_int64(numel(shape), *tensors),
                TMA=tma, A_T=tma and a_t, B_T=tma and b_t, SPLIT=splits > 1, PERSISTENT=persistent,
                BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk,
                **cfg,
            )
    return out


# -- argument checks ------------------------------------------------------------------------------

DTYPES = INTEGRAL | FLOATING
"""What the matrix products multiply (torch has no bool product but addr's)."""


def _scalars(op: str, beta: Any, alpha: Any) -> None:
    number_arg(op, beta, "beta", allow_bool=True)
    number_arg(op, alpha, "alpha", allow_bool=True)


def _result_dtype(op: str, dtype: D.DType, out_dtype: Any) -> D.DType:
    if out_dtype is None:
        return dtype
    want = D.as_dtype(out_dtype)
    if want is not dtype and not (want is D.float32 and dtype in (D.float16, D.bfloat16)):
        raise NbxTypeError(f"{op}: out_dtype must be the input dtype or, for float16/bfloat16 inputs, float32; "
                           f"got {want} for {dtype} inputs")
    return want


def _add_product(op: str, self: Any, a: tuple[str, Any], b: tuple[str, Any], ndim: int, out_dtype: Any,
                 beta: Any, alpha: Any) -> D.DType:
    """The checks addmm and baddbmm share: ``self`` and two named ``ndim``-D factors of one dtype (self's
    too unless ``out_dtype``), number scalars; returns the result dtype."""
    tensor_arg(op, self, "self", dtypes=DTYPES)
    for name, t in (a, b):
        tensor_arg(op, t, name, dtypes=DTYPES, ndim=ndim)
    dtype = same_dtype(op, a, b)
    if out_dtype is None:
        same_dtype(op, ("self", self), a)
    dtype = _result_dtype(op, dtype, out_dtype)
    _scalars(op, beta, alpha)
    return dtype


def _mul_shapes(op: str, a: tuple[int, ...], b: tuple[int, ...], ka: int, kb: int) -> None:
    if ka != kb:
        raise ShapeError(f"{op}: shapes {a} and {b} cannot be multiplied ({ka} != {kb} along the contracted dim)")


# -- the ATen ops ---------------------------------------------------------------------------------

def mm(self: NBXTensor, mat2: NBXTensor, out_dtype: Any = None, *, out: NBXTensor | None = None) -> NBXTensor:
    """aten::mm (and .out, .dtype): ``self @ mat2`` for two matrices."""
    op = "aten::mm"
    tensor_arg(op, self, "self", dtypes=DTYPES, ndim=2)
    tensor_arg(op, mat2, "mat2", dtypes=DTYPES, ndim=2)
    dtype = _result_dtype(op, same_dtype(op, ("self", self), ("mat2", mat2)), out_dtype)
    _mul_shapes(op, self.shape, mat2.shape, self.shape[1], mat2.shape[0])
    shape = (self.shape[0], mat2.shape[1])
    return gemm(op, self, mat2, out=out_arg(op, out, shape, dtype), out_dtype=dtype)


def bmm(self: NBXTensor, mat2: NBXTensor, out_dtype: Any = None, *, out: NBXTensor | None = None) -> NBXTensor:
    """aten::bmm (and .out, .dtype): batched ``self @ mat2`` for (B, M, K) and (B, K, N)."""
    op = "aten::bmm"
    tensor_arg(op, self, "self", dtypes=DTYPES, ndim=3)
    tensor_arg(op, mat2, "mat2", dtypes=DTYPES, ndim=3)
    dtype = _result_dtype(op, same_dtype(op, ("self", self), ("mat2", mat2)), out_dtype)
    if self.shape[0] != mat2.shape[0]:
        raise ShapeError(f"{op}: self and mat2 must have the same number of batches, got {self.shape[0]} and "
                         f"{mat2.shape[0]} (bmm does not broadcast: use matmul)")
    _mul_shapes(op, self.shape, mat2.shape, self.shape[2], mat2.shape[1])
    shape = (self.shape[0], self.shape[1], mat2.shape[2])
    return gemm(op, self, mat2, out=out_arg(op, out, shape, dtype), out_dtype=dtype)


def addmm(self: NBXTensor, mat1: NBXTensor, mat2: NBXTensor, out_dtype: Any = None, *, beta: Any = 1,
          alpha: Any = 1, out: NBXTensor | None = None) -> NBXTensor:
    """aten::addmm: ``beta * self + alpha * (mat1 @ mat2)``; ``self`` broadcasts to (M, N)."""
    op = "aten::addmm"
    dtype = _add_product(op, self, ("mat1", mat1), ("mat2", mat2), 2, out_dtype, beta, alpha)
    _mul_shapes(op, mat1.shape, mat2.shape, mat1.shape[1], mat2.shape[0])
    shape = (mat1.shape[0], mat2.shape[1])
    check_broadcasts_to(op, self, "self", shape)
    return gemm(op, mat1, mat2, self, alpha=alpha, beta=beta, out=out_arg(op, out, shape, dtype), out_dtype=dtype)


def baddbmm(self: NBXTensor, batch1: NBXTensor, batch2: NBXTensor, out_dtype: Any = None, *, beta: Any = 1,
            alpha: Any = 1, out: NBXTensor | None = None) -> NBXTensor:
    """aten::baddbmm: ``beta * self + alpha * bmm(batch1, batch2)``; ``self`` broadcasts to (B, M, N)."""
    op = "aten::baddbmm"
    dtype = _add_product(op, self, ("batch1", batch1), ("batch2", batch2), 3, out_dtype, beta, alpha)
    if batch1.shape[0] != batch2.shape[0]:
        raise ShapeError(f"{op}: batch1 and batch2 must have the same number of batches, got {batch1.shape[0]} "
                         f"and {batch2.shape[0]}")
    _mul_shapes(op, batch1.shape, batch2.shape, batch1.shape[2], batch2.shape[1])
    shape = (batch1.shape[0], batch1.shape[1], batch2.shape[2])
    check_broadcasts_to(op, self, "self", shape)
    return gemm(op, batch1, batch2, self, alpha=alpha, beta=beta, out=out_arg(op, out, shape, dtype),
                out_dtype=dtype)


def mv(self: NBXTensor, vec: NBXTensor, *, out: NBXTensor | None = None) -> NBXTensor:
    """aten::mv: matrix (M, K) times vector (K,) → (M,)."""
    op = "aten::mv"
    tensor_arg(op, self, "self", dtypes=DTYPES, ndim=2)
    tensor_arg(op, vec, "vec", dtypes=DTYPES, ndim=1)
    dtype = same_dtype(op, ("self", self), ("vec", vec))
    _mul_shapes(op, self.shape, vec.shape, self.shape[1], vec.shape[0])
    res = out_arg(op, out, (self.shape[0],), dtype)
    return _mv(op, self, vec, None, 1, 0, res, dtype)


def _mv(op: str, mat: NBXTensor, vec: NBXTensor, c: NBXTensor | None, alpha: Any, beta: Any,
        out: NBXTensor | None, dtype: D.DType) -> NBXTensor:
    m = mat.shape[0]
    col = _strided(vec, (vec.shape[0], 1), (vec.stride()[0], 1))
    c2 = _strided(c, (*c.shape, 1), (*c.stride(), 0)) if c is not None else None
    if out is None:
        out = empty_tensor((m,), dtype, mat.device)
    gemm(op, mat, col, c2, alpha=alpha, beta=beta, out=_strided(out, (m, 1), (out.stride()[0], 1)))
    return out


def addmv(self: NBXTensor, mat: NBXTensor, vec: NBXTensor, *, beta: Any = 1, alpha: Any = 1,
          out: NBXTensor | None = None) -> NBXTensor:
    """aten::addmv: ``beta * self + alpha * (mat @ vec)``; ``self`` broadcasts to (M,)."""
    op = "aten::addmv"
    tensor_arg(op, self, "self", dtypes=DTYPES)
    tensor_arg(op, mat, "mat", dtypes=DTYPES, ndim=2)
    tensor_arg(op, vec, "vec", dtypes=DTYPES, ndim=1)
    dtype = same_dtype(op, ("self", self), ("mat", mat), ("vec", vec))
    _scalars(op, beta, alpha)
    _mul_shapes(op, mat.shape, vec.shape, mat.shape[1], vec.shape[0])
    check_broadcasts_to(op, self, "self", (mat.shape[0],))
    c = _strided(self, (mat.shape[0],), broadcast_strides(self.shape, self.stride(), (mat.shape[0],)))
    return _mv(op, mat, vec, c, alpha, beta, out_arg(op, out, (mat.shape[0],), dtype), dtype)


def dot(self: NBXTensor, tensor: NBXTensor, *, out: NBXTensor | None = None) -> NBXTensor:
    """aten::dot: the inner product of two vectors of one dtype, as a 0-dim tensor."""
    op = "aten::dot"
    tensor_arg(op, self, "self", dtypes=DTYPES, ndim=1)
    tensor_arg(op, tensor, "tensor", dtypes=DTYPES, ndim=1)
    dtype = same_dtype(op, ("self", self), ("tensor", tensor))
    if self.shape != tensor.shape:
        raise ShapeError(f"{op}: inconsistent tensor size: self has {self.shape[0]} elements and tensor has "
                         f"{tensor.shape[0]}")
    res = out_arg(op, out, (), dtype)
    if res is None:
        res = empty_tensor((), dtype, self.device)
    k = self.shape[0]
    gemm(op, _strided(self, (1, k), (1, self.stride()[0])), _strided(tensor, (k, 1), (tensor.stride()[0], 1)),
         out=_strided(res, (1, 1), (1, 1)))
    return res


def addr(self: NBXTensor, vec1: NBXTensor, vec2: NBXTensor, *, beta: Any = 1, alpha: Any = 1,
         out: NBXTensor | None = None) -> NBXTensor:
    """aten::addr: ``beta * self + alpha * outer(vec1, vec2)``, with torch's type promotion.

    bool tensors compute ``(beta and self) or (alpha and outer)``.
    """
    op = "aten::addr"
    tensor_arg(op, self, "self", dtypes=DTYPES | BOOL)
    tensor_arg(op, vec1, "vec1", dtypes=DTYPES | BOOL, ndim=1)
    tensor_arg(op, vec2, "vec2", dtypes=DTYPES | BOOL, ndim=1)
    dtype = D.promote_types(self.dtype, vec1.dtype, vec2.dtype)
    _scalars(op, beta, alpha)
    if dtype.is_integral:
        for name, v in (("beta", beta), ("alpha", alpha)):
            if isinstance(v, float):
                raise NbxTypeError(f"{op}: for integral input tensors, {name} must not be a floating point number")
    if dtype is D.bool_:
        beta, alpha = bool(beta), bool(alpha)
    else:
        for name, v in (("beta", beta), ("alpha", alpha)):
            if isinstance(v, bool):
                raise NbxTypeError(f"{op}: a bool {name} is only supported for bool results, got {dtype}; "
                                   f"pass {name}={int(v)}")
    shape = (vec1.shape[0], vec2.shape[0])
    check_broadcasts_to(op, self, "self", shape)
    return gemm(op, _strided(vec1, (shape[0], 1), (vec1.stride()[0], 1)),
                _strided(vec2, (1, shape[1]), (1, vec2.stride()[0])), self, alpha=alpha, beta=beta,
                out=out_arg(op, out, shape, dtype), out_dtype=dtype, zero_alpha_skips=False)


def _fold_batch(a: NBXTensor) -> NBXTensor | None:
    """``a`` (*batch, M, K) viewed as (batch*M, K) when its strides allow, else None."""
    folded = (numel(a.shape[:-1]), a.shape[-1])
    st = view_strides(a.shape, a.stride(), folded)
    return None if st is None else _strided(a, folded, st)


def product(op: str, a: NBXTensor, b: NBXTensor, c: NBXTensor | None = None, *,
            out: NBXTensor | None = None) -> NBXTensor:
    """torch.matmul's rules, plus ``c`` (broadcast to the result) added: the core of matmul and linear.

    1-D ``a`` gains a leading 1 and 1-D ``b`` a trailing 1, removed from the result; batch dims
    broadcast; a stack of matrices times one matrix folds into a single GEMM when strides allow.
    """
    if a.ndim == 0 or b.ndim == 0:
        raise ShapeError(f"{op}: both arguments need at least 1 dim, got {a.ndim}-D and {b.ndim}-D")
    dtype = same_dtype(op, ("self", a), ("other", b))
    a2 = _strided(a, (1, a.shape[0]), (0, a.stride()[0])) if a.ndim == 1 else a
    b2 = _strided(b, (b.shape[0], 1), (b.stride()[0], 0)) if b.ndim == 1 else b
    _mul_shapes(op, a.shape, b.shape, a2.shape[-1], b2.shape[-2])
    batch = broadcast_shapes(op, a2.shape[:-2], b2.shape[:-2])
    m, n = a2.shape[-2], b2.shape[-1]
    full = (*batch, m, n)
    final = (*batch, *((m,) if a.ndim > 1 else ()), *((n,) if b.ndim > 1 else ()))
    if c is not None:
        check_broadcasts_to(op, c, "bias", final)
    res = out_arg(op, out, final, dtype)
    if res is None:
        res = empty_tensor(final, dtype, a.device)

    def as_full(t: NBXTensor) -> NBXTensor:
        st = list(broadcast_strides(t.shape, t.stride(), final))
        if a.ndim == 1:
            st.insert(len(batch), 0)
        if b.ndim == 1:
            st.append(0)
        return _strided(t, full, tuple(st))

    res_full, c_full = as_full(res), (as_full(c) if c is not None else None)
    folded = _fold_batch(a2) if b2.ndim == 2 and a2.ndim > 2 else None
    if folded is not None:
        rows = folded.shape[0]
        o_st = view_strides(full, res_full.stride(), (rows, n))
        c_st = view_strides(full, c_full.stride(), (rows, n)) if c_full is not None else ()
        if o_st is not None and c_st is not None:
            gemm(op, folded, b2, _strided(c_full, (rows, n), c_st) if c_full is not None else None, beta=1,
                 out=_strided(res_full, (rows, n), o_st))
            return res
    gemm(op, a2, b2, c_full, beta=1, out=res_full)
    return res


def matmul(self: NBXTensor, other: NBXTensor, *, out: NBXTensor | None = None) -> NBXTensor:
    """aten::matmul: torch.matmul's rules (1-D operands, broadcast batch dims)."""
    op = "aten::matmul"
    tensor_arg(op, self, "self", dtypes=DTYPES)
    tensor_arg(op, other, "other", dtypes=DTYPES)
    return product(op, self, other, out=out)


def linear(input: NBXTensor, weight: NBXTensor, bias: NBXTensor | None = None, *,
           out: NBXTensor | None = None) -> NBXTensor:
    """aten::linear: ``input @ weight.T + bias``; weight is (N, K) or (K,)."""
    op = "aten::linear"
    tensor_arg(op, input, "input", dtypes=DTYPES)
    tensor_arg(op, weight, "weight", dtypes=DTYPES, ndim=(1, 2))
    if bias is not None:
        tensor_arg(op, bias, "bias", dtypes=DTYPES)
        same_dtype(op, ("input", input), ("bias", bias))
    same_dtype(op, ("input", input), ("weight", weight))
    if weight.ndim == 1 and bias is not None and input.ndim == 2:
        raise ShapeError(f"{op}: a 1-D weight with a bias needs an input of other than 2 dims (torch takes the "
                         "addmm path there, which needs a matrix): pass weight as (1, K)")
    w = weight if weight.ndim == 1 else _strided(weight, weight.shape[::-1], weight.stride()[::-1])
    if input.ndim == 0:
        raise ShapeError(f"{op}: input must have at least 1 dim, got a 0-dim tensor")
    if input.shape[-1] != w.shape[0]:
        raise ShapeError(f"{op}: input of shape {input.shape} and weight of shape {weight.shape} do not fit: "
                         f"input's last dim ({input.shape[-1]}) must equal weight's last dim ({weight.shape[-1]})")
    return product(op, input, w, bias, out=out)
