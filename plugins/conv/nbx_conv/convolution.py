"""Convolution as one implicit GEMM: conv1d/2d/3d, _conv_depthwise2d, convolution and the transposed forms.

Per group, the output is a GEMM with M = N*OH*OW rows (output pixels), N = K/groups output channels
and a reduction over C/groups * R * S. Rows gather their input pixels straight from the input's
strides, so NCHW, channels-last and any other layout are read in place; channels-last makes a row's
channels contiguous, which is the fast path on the GPU. Three reduction loops, all one flat loop so
that Triton software-pipelines every load behind the tensor-core work:

- taps (C/groups >= 16): iterations walk the kernel taps (r, s) outermost and blocks of BLOCK_K
  channels inside; the A tile is BLOCK_K contiguous channels of each row (16-byte loads on
  channels-last inputs). A forward tap moves every row's input pixel by the same offset, so a row's
  address and its in-bounds taps (bits, for up to 31 taps) are computed once per program and a step
  adds one scalar offset and tests one bit: at 3x3 the step's address work, not the tensor cores,
  set the pace;
- pointwise (1x1, no padding, not transposed): the taps loop with one tap, its row addresses
  hoisted out of the loop: a plain GEMM over a (possibly strided) view of the input;
- flat (few channels, the 7x7 stem, depthwise): the reduction index k -> (r, s, c), c fastest.

For the taps and pointwise loops the weight's channels must be contiguous for the B tile; a weight
whose channels are not (the usual NCHW-contiguous parameter) is rearranged once per call into the
channels-last order (K, R, S, C). Programs walk the output tiles in groups of GROUP_M row tiles, so
the row tiles and weight tiles running at once stay in L2. A layer with too few output tiles to
occupy the GPU (7x7 maps, deep reductions) splits its reduction steps into parts: each part stores
its partial sums in the accumulator's type, and a second kernel adds them in a fixed order (so the
result is deterministic), adds the bias and casts.

A transposed convolution is the same gather read backwards: output pixel ``oh`` takes input pixel
``ih = (oh + pad - r*dil) / stride`` where that division is exact and in range. 1-D convolutions run
as 2-D ones with H = 1. Half types accumulate in float32; float32 uses full-precision (ieee) dots;
float64 multiplies and sums in float64 without tensor cores.

A 3-D convolution is the same GEMM with a depth axis: rows are output voxels (n, od, oh, ow), the
reduction runs over C/groups * kD * kH * kW, and a tap (t, r, s) moves a row's input voxel by one
offset as in 2-D, so every loop above, the tap bits (up to 31 taps: 3x3x3 fits), the split reduction,
transposition and channels-last-3d inputs carry over. The depth terms sit behind the ``DEPTH``
constexpr, and 2-D launches pass one plane and one depth tap, so the 2-D kernels compile without
them. Folding the depth taps into kD batched 2-D launches would need less kernel code but would copy
the input's depth slices once per tap (their batch and depth strides do not merge) and sum kD
partial outputs in a further pass; the depth axis keeps one launch, one float32 (float64)
accumulation and one rounding, with the input read in place.
"""

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from nbx_core.runtime.launch import cdiv, launch, multiprocessors, next_pow2

# isort: split
# Triton after nbx_core.runtime.launch, which sets the backend up (the interpreter) before Triton is imported.
import triton
import triton.language as tl

from nbx_core import dtypes as D
from nbx_core.errors import NbxTypeError, NbxValueError, ShapeError
from nbx_core.ops.copy import contiguous
from nbx_core.ops.views import permute, squeeze, unsqueeze
from nbx_core.runtime.kernels.copy import cast_to
from nbx_core.runtime.kernels.dot import dot_operand
from nbx_core.runtime.kernels.indexing import needs_int64
from nbx_core.runtime.kernels.tiles import grouped_tile
from nbx_core.runtime.pointwise import tl_dtype
from nbx_core.runtime.traits import TRAITS
from nbx_core.runtime.tuning import Key, Tunable, bucket
from nbx_core.shape import non_overlapping_and_dense, numel
from nbx_core.tensor import NBXTensor, check_device, empty_tensor
from nbx_core.tensor.args import (
    FLOATING,
    int_arg,
    int_list,
    non_negative,
    optional_tensor,
    positive,
    same_dtype,
    tensor_arg,
)

from .memory_format import empty_output, suggests_channels_last

FLAT, TAPS, POINTWISE = 0, 1, 2
"""The kernel's reduction loops (``REDUCTION``), described in the module docstring."""


@triton.jit
def _in_coords(oh, ow, r, s, H, W, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, TRANSPOSED: tl.constexpr):
    """Input pixel (ih, iw) that output pixel (oh, ow) reads through tap (r, s), and whether it exists."""
    if TRANSPOSED:
        th = oh + pad_h - r * dil_h
        tw = ow + pad_w - s * dil_w
        ok = (th >= 0) & (tw >= 0)
        th = tl.where(ok, th, 0)
        tw = tl.where(ok, tw, 0)
        ih = th // stride_h
        iw = tw // stride_w
        ok = ok & (ih * stride_h == th) & (iw * stride_w == tw) & (ih < H) & (iw < W)
    else:
        ih = oh * stride_h - pad_h + r * dil_h
        iw = ow * stride_w - pad_w + s * dil_w
        ok = (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
    return ih, iw, ok


@triton.jit
def _in_depth(od, t, D, stride_d, pad_d, dil_d, TRANSPOSED: tl.constexpr):
    """Input plane that output plane ``od`` reads through depth tap ``t``, and whether it exists:
    :func:`_in_coords` with a second axis of one pixel that every tap reads (the compiler folds it;
    a tensor, not a literal 0, so that the interpreter's masks stay boolean)."""
    i_d, _, ok = _in_coords(od, tl.zeros_like(od), t, 0, D, 1, stride_d, 1, pad_d, 0, dil_d, 0, TRANSPOSED)
    return i_d, ok


@triton.jit
def _step_tap(i, nc, R, S, BLOCK_K: tl.constexpr, DEPTH: tl.constexpr):
    """The first channel and the tap (t, r, s) of the taps loop's step ``i``: channel blocks vary
    fastest, then s, r and t (t is 0 without DEPTH)."""
    tap = i // nc
    c0 = (i - tap * nc) * BLOCK_K
    r = tap // S
    s = tap - r * S
    t = 0
    if DEPTH:
        t = r // R
        r = r - t * R
    return c0, t, r, s


@triton.jit
def _mac(acc, a, b, MODE: tl.constexpr):
    # MODE 0: tensor-core dot (half types); 1: ieee float32 dot; 2: float64 multiply-add.
    if MODE == 0:
        acc = tl.dot(dot_operand(a), dot_operand(b), acc)
    elif MODE == 1:
        acc = tl.dot(a, b, acc, input_precision="ieee")
    else:
        acc += tl.sum(a[:, :, None].to(tl.float64) * b[None, :, :].to(tl.float64), axis=1)
    return acc


@triton.jit
def _channel_tiles(a_rows, row_ok, b_cols, n_mask, offs_k, c_left, sxc, swc, EVEN_C: tl.constexpr):
    """The A tile (rows x channels) and B tile (channels x output channels) of one step: ``a_rows`` and
    ``b_cols`` point at the step's first channel, of which ``c_left`` remain in the group."""
    if EVEN_C:
        # Cg is a multiple of BLOCK_K: no channel mask, so loads stay whole 16-byte vectors.
        a = tl.load(a_rows[:, None] + offs_k[None, :] * sxc, mask=row_ok[:, None], other=0.0)
        b = tl.load(b_cols[None, :] + offs_k[:, None] * swc, mask=n_mask[None, :], other=0.0)
    else:
        c_mask = offs_k < c_left
        a = tl.load(a_rows[:, None] + offs_k[None, :] * sxc, mask=row_ok[:, None] & c_mask[None, :], other=0.0)
        b = tl.load(b_cols[None, :] + offs_k[:, None] * swc, mask=c_mask[:, None] & n_mask[None, :], other=0.0)
    return a, b


# Sizes and window parameters vary per layer: specializing on them (== 1, % 16) would only multiply
# compiled variants; strides and channel counts stay specialized for vectorized loads.
@triton.jit(do_not_specialize=["M", "D", "H", "W", "OD", "OH", "OW", "T", "R", "S", "stride_d", "stride_h", "stride_w",
                               "pad_d", "pad_h", "pad_w", "dil_d", "dil_h", "dil_w"])
def _conv_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr,
    M, D, H, W, OD, OH, OW, Cg, Kg, T, R, S,
    sxn, sxc, sxd, sxh, sxw,
    swg, swk, swc, swt, swr, sws,
    son, sok, sod, soh, sow,
    stride_d, stride_h, stride_w, pad_d, pad_h, pad_w, dil_d, dil_h, dil_w, epi,
    TRANSPOSED: tl.constexpr, HAS_BIAS: tl.constexpr, REDUCTION: tl.constexpr, EVEN_C: tl.constexpr,
    MODE: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr, PARTIAL: tl.constexpr, INT64: tl.constexpr, TAP_BITS: tl.constexpr,
    DEPTH: tl.constexpr, EPI: tl.constexpr = None, EPI_ROUND: tl.constexpr = None,
):
    # EPI: an elementwise epilogue nbx_core.fusion generated (_ConvEpilogue below): it takes the tile
    # rounded to EPI_ROUND, the output's dtype, at its indices in the dense output, and stores it.
    # Grid: (output tiles, groups, reduction parts). With PARTIAL, part p sums its share of the
    # reduction steps and stores float32 (float64) partial sums to out_ptr as a (parts, M, K) array.
    # Without DEPTH (2-D) the depth arguments are unused: every depth term sits behind that constexpr,
    # so the 2-D kernels compile as they would without them.
    pid_m, pid_n = grouped_tile(tl.program_id(0), M, Kg, BLOCK_M, BLOCK_N, GROUP_M)
    g = tl.program_id(1)
    if INT64:
        pid_m = pid_m.to(tl.int64)
        g = g.to(tl.int64)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    m_mask = offs_m < M
    n_mask = offs_n < Kg
    ow = offs_m % OW
    oh = (offs_m // OW) % OH
    taps = R * S
    if DEPTH:
        od = (offs_m // (OW * OH)) % OD
        nb = offs_m // (OW * OH * OD)
        taps = taps * T
    else:
        nb = offs_m // (OW * OH)
    x_row = x_ptr + nb * sxn + g * Cg * sxc
    w_col = w_ptr + g * swg + offs_n * swk
    acc_ty = tl.float64 if MODE == 2 else tl.float32
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=acc_ty)
    nc = tl.cdiv(Cg, BLOCK_K)
    if REDUCTION == 0:  # FLAT
        steps = tl.cdiv(Cg * taps, BLOCK_K)
    elif REDUCTION == 2:  # POINTWISE
        steps = nc
    else:  # TAPS
        steps = taps * nc
    per_part = tl.cdiv(steps, tl.num_programs(2))
    lo = tl.program_id(2) * per_part
    hi = tl.minimum(lo + per_part, steps)
    if REDUCTION == 0:
        for i in range(lo, hi):
            kk = i * BLOCK_K + offs_k
            k_mask = kk < Cg * taps
            c = kk % Cg
            tap = kk // Cg
            r = tap // S
            s = tap % S
            if DEPTH:
                t = r // R
                r = r % R
            ih, iw, ok = _in_coords(oh[:, None], ow[:, None], r[None, :], s[None, :], H, W, stride_h, stride_w,
                                    pad_h, pad_w, dil_h, dil_w, TRANSPOSED)
            a_ptrs = x_row[:, None] + ih * sxh + iw * sxw + c[None, :] * sxc
            b_off = c * swc + r * swr + s * sws
            if DEPTH:
                i_d, ok_d = _in_depth(od[:, None], t[None, :], D, stride_d, pad_d, dil_d, TRANSPOSED)
                ok = ok & ok_d
                a_ptrs += i_d * sxd
                b_off += t * swt
            a = tl.load(a_ptrs, mask=ok & m_mask[:, None] & k_mask[None, :], other=0.0)
            b = tl.load(w_col[None, :] + b_off[:, None], mask=k_mask[:, None] & n_mask[None, :], other=0.0)
            acc = _mac(acc, a, b, MODE)
    elif REDUCTION == 2:  # every row reads one pixel, always inside the input
        a_rows = x_row + (oh * stride_h) * sxh + (ow * stride_w) * sxw
        if DEPTH:
            a_rows += (od * stride_d) * sxd
        for i in range(lo, hi):
            c0 = i * BLOCK_K
            a, b = _channel_tiles(a_rows + c0 * sxc, m_mask, w_col + c0 * swc, n_mask, offs_k, Cg - c0, sxc, swc,
                                  EVEN_C)
            acc = _mac(acc, a, b, MODE)
    elif TRANSPOSED:  # one flat loop over (tap, channel block), so the pipeliner sees a single loop
        for i in range(lo, hi):
            c0, t, r, s = _step_tap(i, nc, R, S, BLOCK_K, DEPTH)
            ih, iw, ok = _in_coords(oh, ow, r, s, H, W, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, TRANSPOSED)
            a_ptrs = x_row + ih * sxh + iw * sxw + c0 * sxc
            w_off = r * swr + s * sws + c0 * swc
            if DEPTH:
                i_d, ok_d = _in_depth(od, t, D, stride_d, pad_d, dil_d, TRANSPOSED)
                ok = ok & ok_d
                a_ptrs += i_d * sxd
                w_off += t * swt
            a, b = _channel_tiles(a_ptrs, ok & m_mask, w_col + w_off, n_mask, offs_k, Cg - c0, sxc, swc, EVEN_C)
            acc = _mac(acc, a, b, MODE)
    else:
        # The same flat loop, cheaper per step, since issuing address arithmetic rather than the tensor
        # cores bounds the 3x3 layers: a tap shifts every row's input pixel by one scalar offset, the
        # (t, r, s, channel block) counters advance without divisions, and with TAP_BITS each row's
        # in-bounds taps are computed once as bits ((t*R + r)*S + s) that a step tests instead of the
        # window's bounds.
        ih0 = oh * stride_h - pad_h
        iw0 = ow * stride_w - pad_w
        a_rows = x_row + ih0 * sxh + iw0 * sxw
        if DEPTH:
            id0 = od * stride_d - pad_d
            a_rows += id0 * sxd
        if TAP_BITS:
            bits = tl.zeros_like(offs_m).to(tl.int32)
            for j in range(taps):
                rj = j // S
                if DEPTH:
                    rj = rj % R
                th = ih0 + rj * dil_h
                tw = iw0 + (j % S) * dil_w
                inside = (th >= 0) & (th < H) & (tw >= 0) & (tw < W)
                if DEPTH:
                    td = id0 + (j // (R * S)) * dil_d
                    inside = inside & (td >= 0) & (td < D)
                bits |= inside.to(tl.int32) << j
            bits = tl.where(m_mask, bits, 0)
        c0, t, r, s = _step_tap(lo, nc, R, S, BLOCK_K, DEPTH)
        for _ in range(lo, hi):
            dh = r * dil_h
            dw = s * dil_w
            if DEPTH:
                dd = t * dil_d
            if TAP_BITS:
                bit = r * S + s
                if DEPTH:
                    bit += t * R * S
                ok = (bits & (1 << bit)) != 0
            else:
                ok = m_mask & (ih0 + dh >= 0) & (ih0 + dh < H) & (iw0 + dw >= 0) & (iw0 + dw < W)
                if DEPTH:
                    ok = ok & (id0 + dd >= 0) & (id0 + dd < D)
            if INT64:
                dh = dh.to(tl.int64)
                dw = dw.to(tl.int64)
            x_off = dh * sxh + dw * sxw + c0 * sxc
            w_off = r * swr + s * sws + c0 * swc
            if DEPTH:
                if INT64:
                    dd = dd.to(tl.int64)
                x_off += dd * sxd
                w_off += t * swt
            a, b = _channel_tiles(a_rows + x_off, ok, w_col + w_off, n_mask, offs_k, Cg - c0, sxc, swc, EVEN_C)
            acc = _mac(acc, a, b, MODE)
            c0 += BLOCK_K
            wrap = c0 >= Cg
            c0 = tl.where(wrap, 0, c0)
            s += wrap.to(tl.int32)
            wrap = s == S
            s = tl.where(wrap, 0, s)
            r += wrap.to(tl.int32)
            if DEPTH:
                wrap = r == R
                r = tl.where(wrap, 0, r)
                t += wrap.to(tl.int32)
    k_out = g * Kg + offs_n
    mask = m_mask[:, None] & n_mask[None, :]
    if PARTIAL:
        part = tl.program_id(2)
        if INT64:
            part = part.to(tl.int64)
        part_off = (part * M + offs_m)[:, None] * (Kg * tl.num_programs(1)) + k_out[None, :]
        tl.store(out_ptr + part_off, acc, mask=mask)
    else:
        if HAS_BIAS:
            bias = tl.load(b_ptr + k_out, mask=n_mask, other=0.0)
            acc += bias.to(acc_ty)[None, :]
        out_row = nb * son + oh * soh + ow * sow
        if DEPTH:
            out_row += od * sod
        out_off = out_row[:, None] + (k_out * sok)[None, :]
        if EPI is not None:
            EPI(cast_to(acc, EPI_ROUND), out_off, mask, epi)
        else:
            tl.store(out_ptr + out_off, acc.to(out_ptr.dtype.element_ty), mask=mask)


class _ConvEpilogue:
    """How nbx_core.fusion hands ``_conv_kernel`` an elementwise epilogue (``EPI``): a launch that
    stores its result itself (no split reduction), without a float64 accumulator, into a dense
    output from offset 0 (contiguous or channels-last) takes one. The offsets the kernel computes
    are then the elements' memory positions, which is the index fusion walks the result by.

    Only epilogues whose operands sit at the output's own indices (a residual, not batch norm's
    per-channel vectors): finding a broadcast operand's element costs integer divisions for every
    element of the tile, which outweigh a 1x1 or 3x3 convolution's own math, so those chains run as
    one generated elementwise kernel after the convolution instead."""

    OUT, EPI_ARG = 3, 41
    strided_loads = False

    def output(self, args: Sequence[Any], kwargs: dict[str, Any]) -> tuple[int, int] | None:
        """(position of the output argument, its element count), or None: no epilogue here."""
        out = args[self.OUT]
        if kwargs["PARTIAL"] or kwargs["MODE"] == 2 or out.offset != 0:
            return None
        if not non_overlapping_and_dense(out.shape, out.strides):
            return None
        return self.OUT, numel(out.shape)

    def attach(self, args: Sequence[Any], kwargs: dict[str, Any], fn: Any, epi: tuple) -> tuple[list, dict]:
        """The launch's arguments with ``fn`` as its epilogue, taking ``epi``."""
        args = list(args)
        args[self.EPI_ARG] = epi
        return args, {**kwargs, "EPI": fn, "EPI_ROUND": tl_dtype(args[self.OUT].dtype)}


_conv_kernel.nbx_epilogue = _ConvEpilogue()


@triton.jit(do_not_specialize=["M", "OH", "OW", "PARTS"])
def _sum_parts_kernel(part_ptr, b_ptr, out_ptr, M, K, OH, OW, PARTS, son, sok, soh, sow, HAS_BIAS: tl.constexpr,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, INT64: tl.constexpr):
    # The split reduction's second pass: out[m, k] = sum over parts of part[p, m, k] (+ bias), in order.
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    if INT64:
        offs_m = offs_m.to(tl.int64)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (offs_m < M)[:, None] & (offs_n < K)[None, :]
    acc = tl.load(part_ptr + offs_m[:, None] * K + offs_n[None, :], mask=mask, other=0.0)
    rows = offs_m
    for _ in range(1, PARTS):
        rows += M
        acc += tl.load(part_ptr + rows[:, None] * K + offs_n[None, :], mask=mask, other=0.0)
    if HAS_BIAS:
        acc += tl.load(b_ptr + offs_n, mask=offs_n < K, other=0.0).to(acc.dtype)[None, :]
    ow = offs_m % OW
    oh = (offs_m // OW) % OH
    nb = offs_m // (OW * OH)
    out_off = (nb * son + oh * soh + ow * sow)[:, None] + (offs_n * sok)[None, :]
    tl.store(out_ptr + out_off, acc.to(out_ptr.dtype.element_ty), mask=mask)


def _tiles(m: int, kg: int, groups: int, cg: int, taps: int, flat: bool, gpu: bool) -> tuple[int, ...]:
    """(BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages, GROUP_M, parts) of a convolution with ``m``
    output pixels, ``kg`` output channels and ``cg`` input channels per group, ``groups`` groups and
    ``taps`` kernel taps, on the ``flat`` reduction or not, on a ``gpu`` or the interpreter;
    ``parts`` > 1 splits the reduction."""
    depth = cg * taps if flat else cg
    bn = min(128, max(16, next_pow2(kg)))
    bk = min(64, max(16, next_pow2(depth)))
    if not gpu:
        return min(128, max(16, next_pow2(m))), bn, bk, 1, 1, 8, 1
    # Tiles from the H200 sweeps of the ResNet-50 layers (benchmarks/results/sweeps/h200-conv.json,
    # h200-conv-taps.json): long flat reductions (the stem) take 256-row tiles, 3x3 layers of 128
    # channels 64-row ones; 1x1 layers of 64 output channels take BLOCK_K 32; deep 7x7 maps take 256
    # output channels a tile and split the reduction.
    sms = multiprocessors()  # the heuristic aims for at least one full wave of programs
    bm = 128 if m > 64 else 64
    if flat and m >= 65536:
        bm, bk = 256, 32
    elif not flat and taps > 1 and kg == 128 and m >= 16384:
        bm = 64
    elif not flat and kg <= 64 and taps == 1:
        bk = min(bk, 32)
    if cdiv(m, bm) * groups < sms // 4 and kg >= 256:
        bn = 256
    tiles = cdiv(m, bm) * cdiv(kg, bn) * groups
    steps = cdiv(depth, bk) * (1 if flat else taps)
    # Too few tiles for the SMs (7x7 maps): split the reduction, each part keeping 8+ steps to pipeline.
    parts = max(1, min(cdiv(sms, tiles), steps // 8, 4)) if tiles < sms // 2 else 1
    warps = 8 if bm * bn >= 128 * 128 or flat else 4
    # At most ~96 KB of stages, so two programs share an SM and one's epilogue hides behind the other.
    stages = 4 if (bm + bn) * bk * 2 * 4 <= 96 * 1024 and max(bm, bn) < 256 else 3
    if not flat and taps > 1 and kg <= 128:
        # 3x3 layers of up to 128 output channels: 3 stages (72 KB), so that three programs share an SM
        # (2 or 4 stages and other row tiles were slower: benchmarks/results/sweeps/h200-conv-taps.json).
        stages = 3
    return bm, bn, bk, warps, stages, 8, parts


_PARAMS = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "num_warps", "num_stages", "GROUP_M", "PARTS")

CONV = Tunable(
    "conv", "convolution", {"BLOCK_M": "pow2", "BLOCK_N": "pow2", "BLOCK_K": "pow2", "num_warps": "pow2",
                            "num_stages": "count", "GROUP_M": "count", "PARTS": "count"},
    key=lambda dtype, m, kg, groups, cg, taps, flat: Key({
        "dtype": dtype, "M": bucket(m), "K": bucket(kg), "C": bucket(cg), "groups": groups, "taps": taps,
        "reduction": "flat" if flat else "channels"}),
    rule=lambda dtype, *shape: dict(zip(_PARAMS, _tiles(*shape, gpu=True), strict=True)),
    interpreter=lambda dtype, *shape: dict(zip(_PARAMS, _tiles(*shape, gpu=False), strict=True)),
    tables=Path(__file__).with_name("configs"))
"""The convolution kernel's launch: its (BLOCK_M, BLOCK_N, BLOCK_K) tiles, warps, stages, GROUP_M and
PARTS, the reduction's split. Arguments: the dtype's name, the output pixels, the output channels
per group, the groups, the input channels per group, the kernel taps and whether the reduction is
flat (channels times taps, for inputs of fewer than 16 channels). On a GPU float64 tiles are
capped further (32 x 32 x 8), whatever the configuration."""


SUM_PARTS = Tunable(
    "conv", "sum_parts", {"BLOCK_M": "pow2", "BLOCK_N": "pow2", "num_warps": "pow2"},
    key=lambda size, m, k: Key({"itemsize": size, "M": bucket(m), "K": bucket(k)}),
    rule=lambda size, m, k: {"BLOCK_M": 16, "BLOCK_N": min(256, next_pow2(k)), "num_warps": 4},
    interpreter=lambda size, m, k: {"BLOCK_M": min(128, next_pow2(m)), "BLOCK_N": next_pow2(k), "num_warps": 4},
    tables=Path(__file__).with_name("configs"))
"""The split reduction's second pass: BLOCK_M output pixels by BLOCK_N output channels a program, and
its warps (on a GPU 16 pixels by up to 256 channels; on the interpreter, paying per program, up to
128 pixels by all the channels). Arguments: the partial sums' itemsize, the output pixels M and
the output channels K."""


def _channels_contiguous(w: NBXTensor, transposed: bool) -> NBXTensor:
    """``w`` with stride 1 along its per-group input channels (the B tile's reduction axis): the
    channels-last order (K, *kernel, C), or for a transposed weight (C_in, K/g, *kernel) the order
    (K/g, *kernel, C_in). A weight already so (or contiguous along output channels) is returned as is."""
    cdim, kdim = (0, 1) if transposed else (1, 0)
    if w.stride()[cdim] == 1 or w.stride()[kdim] == 1:
        return w
    last = w.ndim - 1
    taps = range(2, w.ndim)
    phys = contiguous(permute(w, kdim, *taps, cdim))
    return permute(phys, *((last, 0, *range(1, last)) if transposed else (0, last, *range(1, last))))


def _conv(op: str, x: NBXTensor, w: NBXTensor, bias: NBXTensor | None, stride: tuple[int, ...],
          pad: tuple[int, ...], dil: tuple[int, ...], transposed: bool, out_pad: tuple[int, ...], groups: int,
          out_size: tuple[int, ...] | None = None, config: Mapping[str, int] | None = None) -> NBXTensor:
    """The 2-D (N, C, H, W) or 3-D (N, C, D, H, W) convolution behind every wrapper; ``out_size``
    overrides the output's spatial size, ``config`` :data:`CONV`'s lookup."""
    n, c, *size = x.shape
    kernel = tuple(w.shape[2:])
    if transposed:
        cg, kg = w.shape[0] // groups, w.shape[1]
        if w.shape[0] != c:
            raise ShapeError(f"{op}: weight of shape {list(w.shape)} expects {w.shape[0]} input channels, got "
                             f"input of shape {list(x.shape)}: a transposed weight is (C_in, C_out/groups, "
                             "*kernel_size)")
        if c % groups:
            raise NbxValueError(f"{op}: input channels {c} must be divisible by groups={groups}")
    else:
        kg, cg = w.shape[0] // groups, w.shape[1]
        if w.shape[0] % groups:
            raise NbxValueError(f"{op}: out channels {w.shape[0]} (weight.shape[0]) must be divisible by "
                                f"groups={groups}")
        if cg * groups != c:
            raise ShapeError(f"{op}: input of shape {list(x.shape)} has {c} channels but weight of shape "
                             f"{list(w.shape)} with groups={groups} expects {cg * groups}: match the channels")
    k = kg * groups
    if bias is not None and (bias.ndim != 1 or bias.shape[0] != k):
        raise ShapeError(f"{op}: bias must have shape [{k}] (one per output channel), got {list(bias.shape)}")
    axes = list(zip(size, kernel, stride, pad, dil, strict=True))
    if transposed:
        for o, st, d in zip(out_pad, stride, dil, strict=True):
            if o >= st and o >= d:
                raise NbxValueError(f"{op}: output_padding {list(out_pad)} must be smaller than either stride "
                                    f"{list(stride)} or dilation {list(dil)}")
        out_sp = tuple((i - 1) * st - 2 * p + d * (kk - 1) + o + 1
                       for (i, kk, st, p, d), o in zip(axes, out_pad, strict=True))
        if any(o <= 0 for o in out_sp):
            raise ShapeError(f"{op}: output size {out_sp} is too small for input {list(x.shape)}: "
                             "reduce padding or raise stride")
    else:
        eff = tuple(d * (kk - 1) + 1 for _, kk, _, _, d in axes)
        padded = tuple(i + 2 * p for i, _, _, p, _ in axes)
        if out_size is None and any(pi < e for pi, e in zip(padded, eff, strict=True)):
            raise ShapeError(f"{op}: kernel size {eff} (with dilation) can't be greater than the padded input "
                             f"size {padded}: pad the input or use a smaller kernel")
        out_sp = out_size or tuple((pi - e) // st + 1 for pi, e, st in zip(padded, eff, stride, strict=True))
    out = empty_output((n, k, *out_sp), x.dtype, x, cl=suggests_channels_last(x) or suggests_channels_last(w))
    m = n * numel(out_sp)
    if m == 0 or k == 0:
        return out
    if cg == 0:
        raise ShapeError(f"{op}: input of shape {list(x.shape)} has no channels to convolve")
    taps = numel(kernel)
    if cg < 16:
        reduction = FLAT
    elif taps == 1 and not any(pad) and not transposed:
        reduction = POINTWISE
    else:
        reduction = TAPS
    if reduction != FLAT:
        w = _channels_contiguous(w, transposed)
    cfg = CONV.choose(config, x.dtype.name, m, kg, groups, cg, taps, reduction == FLAT)
    bm, bn, bk, warps, stages, group_m, parts = (cfg[p] for p in _PARAMS)
    mode = 2 if x.dtype is D.float64 else 1 if x.dtype is D.float32 else 0
    if mode == 2 and TRAITS.tiles_on_chip:
        # float64 multiplies without tensor cores: the (BLOCK_M, BLOCK_K, BLOCK_N) product lives in
        # registers, so its tiles stay small (the 7x7 stem's 128 x 64 x 64 ones needed 256 KB of
        # shared memory and failed to launch).
        bm, bn, bk = min(bm, 32), min(bn, 32), min(bk, 8)
    # 2-D runs as 3-D with one depth plane, one depth tap and depth strides 0; the kernel then compiles
    # no depth terms.
    depth = len(size) == 3

    def as3d(vals: tuple[int, ...] | list[int], fill: int, at: int = 0) -> tuple[int, ...]:
        return tuple(vals) if depth else (*vals[:at], fill, *vals[at:])

    xs, ws, outs = as3d(x.stride(), 0, 2), as3d(w.stride(), 0, 2), as3d(out.stride(), 0, 2)
    if transposed:
        wg, wk, wc = cg * ws[0], ws[1], ws[0]
    else:
        wg, wk, wc = kg * ws[0], ws[0], ws[1]
    dst = out if parts == 1 else empty_tensor((parts, m, k), D.float64 if mode == 2 else D.float32, x.device)
    int64 = needs_int64(m * k * parts, x, w, out)
    launch(
        _conv_kernel, (cdiv(m, bm) * cdiv(kg, bn), groups, parts), x, w, bias if bias is not None else x, dst,
        m, *as3d(size, 1), *as3d(out_sp, 1), cg, kg, *as3d(kernel, 1), *xs, wg, wk, wc, *ws[2:], *outs,
        *as3d(stride, 1), *as3d(pad, 0), *as3d(dil, 1), (),
        TRANSPOSED=transposed, HAS_BIAS=bias is not None, REDUCTION=reduction, EVEN_C=cg % bk == 0, MODE=mode,
        BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=group_m,
        PARTIAL=parts > 1, INT64=int64, TAP_BITS=taps <= 31, DEPTH=depth, num_warps=warps, num_stages=stages,
    )
    if parts > 1:
        sum_parts(dst, bias, out, int64)
    return out


def sum_parts(parts: NBXTensor, bias: NBXTensor | None, out: NBXTensor, int64: bool,
              config: Mapping[str, int] | None = None) -> None:
    """The split reduction's second pass: ``out`` (N, K, *spatial), contiguous or channels-last, gets
    the sum over the first dim of the contiguous partial sums ``parts`` (PARTS, M, K), plus ``bias``;
    ``config`` replaces the lookup of :data:`SUM_PARTS`."""
    _, m, k = parts.shape
    # Depth and height merge into one axis of stride soh (contiguous or channels-last output): the
    # pass sees a 2-D output of OD*OH rows.
    outs, out_sp = out.stride(), out.shape[2:]
    cfg = SUM_PARTS.choose(config, parts.dtype.itemsize, m, k)
    bm, bn = cfg["BLOCK_M"], cfg["BLOCK_N"]
    launch(_sum_parts_kernel, (cdiv(m, bm), cdiv(k, bn)), parts, bias if bias is not None else out, out, m, k,
           numel(out_sp[:-1]), out_sp[-1], parts.shape[0], outs[0], outs[1], outs[-2], outs[-1],
           HAS_BIAS=bias is not None, BLOCK_M=bm, BLOCK_N=bn, INT64=int64, num_warps=cfg["num_warps"])


def _check_tensors(op: str, x: object, w: object, bias: object) -> tuple[NBXTensor, NBXTensor, NBXTensor | None]:
    x = tensor_arg(op, x, "input", dtypes=FLOATING)
    w = tensor_arg(op, w, "weight", dtypes=FLOATING)
    bias = optional_tensor(op, bias, "bias", dtypes=FLOATING)
    check_device(op, x, w, bias)
    same_dtype(op, ("input", x), ("weight", w), *([("bias", bias)] if bias is not None else []))
    return x, w, bias


def _convnd(op: str, spatial: int, input: object, weight: object, bias: object, stride: object, padding: object,
            dilation: object, transposed: bool, output_padding: object, groups: object) -> NBXTensor:
    """Checks and 1-D/unbatched reshaping around :func:`_conv`; ``padding`` may be "same" or "valid"."""
    x, w, bias = _check_tensors(op, input, weight, bias)
    groups = int_arg(op, groups, "groups")
    if groups <= 0:
        raise NbxValueError(f"{op}: groups must be positive, got {groups}")
    if w.ndim != spatial + 2:
        raise ShapeError(f"{op}: weight must be {spatial + 2}-D (out, in/groups, *kernel), got shape {list(w.shape)}")
    if x.ndim not in (spatial + 1, spatial + 2):
        raise ShapeError(f"{op}: expected {spatial + 1}-D (unbatched) or {spatial + 2}-D (batched) input, got "
                         f"shape {list(x.shape)}")
    st = int_list(op, stride, spatial, "stride")
    dil = int_list(op, dilation, spatial, "dilation")
    opad = int_list(op, output_padding, spatial, "output_padding")
    positive(op, st, "stride")
    positive(op, dil, "dilation")
    non_negative(op, opad, "output_padding")
    batched = x.ndim == spatial + 2
    if not batched:
        x = unsqueeze(x, 0)
    out_size = None
    if isinstance(padding, str):
        if transposed:
            raise NbxTypeError(f"{op}: padding must be ints, got a string")
        if padding == "valid":
            pad = (0,) * spatial
        elif padding == "same":
            if any(v != 1 for v in st):
                raise NbxValueError(f"{op}: padding='same' is not supported for strided convolutions "
                                    f"(stride {list(st)}): use stride 1 or explicit padding")
            # Total padding dil*(k-1); the odd extra pixel goes on the right/bottom, as torch pads it.
            pad = tuple(d * (kk - 1) // 2 for d, kk in zip(dil, w.shape[2:], strict=True))
            out_size = tuple(x.shape[2:])
        else:
            raise NbxValueError(f"{op}: invalid padding string {padding!r}: use 'same', 'valid' or ints")
    else:
        pad = int_list(op, padding, spatial, "padding")
    non_negative(op, pad, "padding")
    if spatial == 1:
        x, w = unsqueeze(x, 2), unsqueeze(w, 2)
        st, pad, dil, opad = (1, *st), (0, *pad), (1, *dil), (0, *opad)
        out_size = (1, *out_size) if out_size is not None else None
    out = _conv(op, x, w, bias, st, pad, dil, transposed, opad, groups, out_size)
    if spatial == 1:
        out = squeeze(out, 2)
    return out if batched else squeeze(out, 0)


def convolution(input: NBXTensor, weight: NBXTensor, bias: NBXTensor | None, stride: list[int],
                padding: list[int], dilation: list[int], transposed: bool, output_padding: list[int],
                groups: int) -> NBXTensor:
    """``aten::convolution`` (what torch.export emits): 1-D, 2-D or 3-D, plain or transposed, batched input."""
    w = tensor_arg("convolution", weight, "weight", dtypes=FLOATING)
    spatial = w.ndim - 2
    if spatial not in (1, 2, 3):
        raise ShapeError(f"convolution: NBX supports 1-D, 2-D and 3-D convolutions (3-D, 4-D or 5-D weight), got "
                         f"weight of shape {list(w.shape)}")
    x = tensor_arg("convolution", input, "input", dtypes=FLOATING)
    if x.ndim != w.ndim:
        raise ShapeError(f"convolution: input of shape {list(x.shape)} must have the weight's {w.ndim} dims")
    return _convnd("convolution", spatial, x, w, bias, stride, padding, dilation, bool(transposed),
                   output_padding, groups)


def _conv_transpose(op: str, spatial: int, input: object, weight: object, bias: object, stride: object,
                    padding: object, output_padding: object, groups: object, dilation: object) -> NBXTensor:
    """The ``conv_transpose{1,2,3}d`` wrappers: as :func:`_convnd`, with padding ints only (as torch)."""
    if isinstance(padding, str):
        raise NbxTypeError(f"{op}: padding must be ints, got a string")
    return _convnd(op, spatial, input, weight, bias, stride, padding, dilation, True, output_padding, groups)


def conv1d(input: NBXTensor, weight: NBXTensor, bias: NBXTensor | None = None, stride: object = 1,
           padding: object = 0, dilation: object = 1, groups: int = 1) -> NBXTensor:
    """``aten::conv1d`` and ``conv1d.padding`` (``padding`` "same"/"valid")."""
    return _convnd("conv1d", 1, input, weight, bias, stride, padding, dilation, False, 0, groups)


def conv2d(input: NBXTensor, weight: NBXTensor, bias: NBXTensor | None = None, stride: object = 1,
           padding: object = 0, dilation: object = 1, groups: int = 1) -> NBXTensor:
    """``aten::conv2d`` and ``conv2d.padding`` (``padding`` "same"/"valid")."""
    return _convnd("conv2d", 2, input, weight, bias, stride, padding, dilation, False, 0, groups)


def conv3d(input: NBXTensor, weight: NBXTensor, bias: NBXTensor | None = None, stride: object = 1,
           padding: object = 0, dilation: object = 1, groups: int = 1) -> NBXTensor:
    """``aten::conv3d`` and ``conv3d.padding`` (``padding`` "same"/"valid")."""
    return _convnd("conv3d", 3, input, weight, bias, stride, padding, dilation, False, 0, groups)


def conv_transpose1d(input: NBXTensor, weight: NBXTensor, bias: NBXTensor | None = None, stride: object = 1,
                     padding: object = 0, output_padding: object = 0, groups: int = 1,
                     dilation: object = 1) -> NBXTensor:
    """``aten::conv_transpose1d``: weight (C_in, C_out/groups, kW)."""
    return _conv_transpose("conv_transpose1d", 1, input, weight, bias, stride, padding, output_padding, groups,
                           dilation)


def conv_transpose2d(input: NBXTensor, weight: NBXTensor, bias: NBXTensor | None = None, stride: object = 1,
                     padding: object = 0, output_padding: object = 0, groups: int = 1,
                     dilation: object = 1) -> NBXTensor:
    """``aten::conv_transpose2d.input``: weight (C_in, C_out/groups, kH, kW)."""
    return _conv_transpose("conv_transpose2d", 2, input, weight, bias, stride, padding, output_padding, groups,
                           dilation)


def conv_transpose3d(input: NBXTensor, weight: NBXTensor, bias: NBXTensor | None = None, stride: object = 1,
                     padding: object = 0, output_padding: object = 0, groups: int = 1,
                     dilation: object = 1) -> NBXTensor:
    """``aten::conv_transpose3d.input``: weight (C_in, C_out/groups, kD, kH, kW)."""
    return _conv_transpose("conv_transpose3d", 3, input, weight, bias, stride, padding, output_padding, groups,
                           dilation)


def _conv_depthwise2d(self: NBXTensor, weight: NBXTensor, kernel_size: list[int], bias: NBXTensor | None,
                      stride: list[int], padding: list[int], dilation: list[int]) -> NBXTensor:
    """``aten::_conv_depthwise2d``: groups = input channels, weight (C*multiplier, 1, kH, kW)."""
    op = "_conv_depthwise2d"
    x, w, bias = _check_tensors(op, self, weight, bias)
    if x.ndim != 4 or w.ndim != 4:
        raise ShapeError(f"{op}: expected 4-D input and weight, got {list(x.shape)} and {list(w.shape)}")
    ks = int_list(op, kernel_size, 2, "kernel_size")
    if tuple(w.shape[2:]) != ks:
        raise ShapeError(f"{op}: kernel_size {list(ks)} does not match weight of shape {list(w.shape)}")
    if w.shape[1] != 1 or x.shape[1] == 0 or w.shape[0] % x.shape[1]:
        raise ShapeError(f"{op}: weight of shape {list(w.shape)} must be (C*multiplier, 1, kH, kW) for input "
                         f"of shape {list(x.shape)}")
    return _convnd(op, 2, x, w, bias, stride, padding, dilation, False, 0, x.shape[1])
