"""Average, max, adaptive average and adaptive max pooling in 1, 2 and 3 spatial dims.

Every op runs as a 3-D pool over an (N, C, D, H, W) view (missing spatial dims have size 1), one
output element per lane, looping over its window. Inputs are read through their strides; outputs
are allocated in the input's memory format (channels-last stays channels-last; adaptive max
pooling in 3-D gives a contiguous result, as torch's does), and lanes walk the output in memory
order so stores are contiguous and, for channels-last, loads too. Sums run in float32 for half
types; max pooling, plain and adaptive, follows torch exactly: NaN wins (the last NaN of a
window), ties keep the first index in scan order, indices are flat positions within each (N, C)
plane. Adaptive windows are torch's bins, start = floor(i * in / out), end = ceil((i + 1) * in /
out), for averages and maxima alike.

Adaptive average pooling to a single output pixel over channels (dim 1) of stride 1 (a
channels-last global pool, as closing ResNet) is a column reduction instead: the input is an
(N, HW, C) matrix, each program sums BLOCK_R x BLOCK_C tiles of one image's channel block, with
vector loads along C, and enough channel blocks to fill the GPU.
"""

from collections.abc import Mapping
from pathlib import Path

from nbx_core.runtime.launch import block_size, cdiv, launch, next_pow2

# isort: split
# Triton after nbx_core.runtime.launch, which sets the backend up (the interpreter) before Triton is imported.
import triton
import triton.language as tl

from nbx_core import dtypes as D
from nbx_core.errors import NbxValueError, ShapeError
from nbx_core.ops.views import squeeze, unsqueeze
from nbx_core.runtime.kernels.indexing import block_indices, needs_int64
from nbx_core.runtime.tuning import Key, Tunable, bucket
from nbx_core.tensor import NBXTensor
from nbx_core.tensor.args import FLOATING, INTEGRAL, int_arg, int_list, non_negative, positive, tensor_arg

from .memory_format import channels_last, empty_output, suggests_channels_last

_WARPS = 4


@triton.jit
def out_coords(idx, C, OD, OH, OW, CL: tl.constexpr):
    """(n, c, od, oh, ow) of flat output index ``idx`` in memory order (channels fastest when ``CL``)."""
    if CL:
        c = idx % C
        r = idx // C
        ow = r % OW
        r = r // OW
        oh = r % OH
        r = r // OH
        od = r % OD
        nb = r // OD
    else:
        ow = idx % OW
        r = idx // OW
        oh = r % OH
        r = r // OH
        od = r % OD
        r = r // OD
        c = r % C
        nb = r // C
    return nb, c, od, oh, ow


@triton.jit
def _adaptive_bin(o, size, out_size):
    """torch's adaptive window of output position ``o``: [floor(o * size / out), ceil((o + 1) * size / out))."""
    return (o * size) // out_size, ((o + 1) * size + out_size - 1) // out_size


@triton.jit
def _max_pool_kernel(x_ptr, out_ptr, idx_ptr, n, C, D, H, W, OD, OH, OW, sxn, sxc, sxd, sxh, sxw,
                     KD, KH, KW, SD, SH, SW, PD, PH, PW, DD, DH, DW,
                     ADAPTIVE: tl.constexpr, CL: tl.constexpr, WRITE_IDX: tl.constexpr, BLOCK: tl.constexpr,
                     INT64: tl.constexpr):
    idx, mask = block_indices(n, BLOCK, INT64)
    nb, c, od, oh, ow = out_coords(idx, C, OD, OH, OW, CL)
    # Each window's first tap and the end its taps stay below: torch's adaptive bins (KD/KH/KW bound
    # their sizes, dilations are 1), or strided windows whose taps past the input are skipped.
    if ADAPTIVE:
        d0, d_end = _adaptive_bin(od, D, OD)
        h0, h_end = _adaptive_bin(oh, H, OH)
        w0, w_end = _adaptive_bin(ow, W, OW)
    else:
        d0 = od * SD - PD
        h0 = oh * SH - PH
        w0 = ow * SW - PW
        d_end = D
        h_end = H
        w_end = W
    base = x_ptr + nb * sxn + c * sxc
    # Compare in float32 (exact for half types, and the interpreter cannot compare bfloat16), in
    # int64 for integers.
    if x_ptr.dtype.element_ty == tl.float64:
        acc_ty = tl.float64
    elif x_ptr.dtype.element_ty.is_int():
        acc_ty = tl.int64
    else:
        acc_ty = tl.float32
    best = tl.zeros([BLOCK], acc_ty)  # replaced by the first valid tap
    best_i = tl.full([BLOCK], -1, tl.int64)
    for kd in range(0, KD):
        id_ = d0 + kd * DD
        ok_d = (id_ >= 0) & (id_ < d_end)
        for kh in range(0, KH):
            ih = h0 + kh * DH
            ok_h = ok_d & (ih >= 0) & (ih < h_end)
            for kw in range(0, KW):
                iw = w0 + kw * DW
                ok = mask & ok_h & (iw >= 0) & (iw < w_end)
                v = tl.load(base + id_ * sxd + ih * sxh + iw * sxw, mask=ok, other=0).to(acc_ty)
                # torch's rule: a greater value or a NaN replaces the best; the first valid tap starts it.
                take = ok & ((v > best) | (v != v) | (best_i < 0))
                best = tl.where(take, v, best)
                best_i = tl.where(take, ((id_ * H + ih) * W + iw).to(tl.int64), best_i)
    tl.store(out_ptr + idx, best.to(out_ptr.dtype.element_ty), mask=mask)
    if WRITE_IDX:
        tl.store(idx_ptr + idx, best_i, mask=mask)


@triton.jit
def _avg_pool_kernel(x_ptr, out_ptr, n, C, D, H, W, OD, OH, OW, sxn, sxc, sxd, sxh, sxw,
                     KD, KH, KW, SD, SH, SW, PD, PH, PW, divisor,
                     COUNT_PAD: tl.constexpr, HAS_DIVISOR: tl.constexpr, CL: tl.constexpr,
                     BLOCK: tl.constexpr, INT64: tl.constexpr):
    idx, mask = block_indices(n, BLOCK, INT64)
    nb, c, od, oh, ow = out_coords(idx, C, OD, OH, OW, CL)
    acc_ty = tl.float64 if x_ptr.dtype.element_ty == tl.float64 else tl.float32
    # Window bounds as torch clips them: first against the padded input, then against the input.
    d0 = od * SD - PD
    h0 = oh * SH - PH
    w0 = ow * SW - PW
    d1 = tl.minimum(d0 + KD, D + PD)
    h1 = tl.minimum(h0 + KH, H + PH)
    w1 = tl.minimum(w0 + KW, W + PW)
    pool_size = (d1 - d0) * (h1 - h0) * (w1 - w0)
    d1 = tl.minimum(d1, D)
    h1 = tl.minimum(h1, H)
    w1 = tl.minimum(w1, W)
    lo_d = tl.maximum(d0, 0)
    lo_h = tl.maximum(h0, 0)
    lo_w = tl.maximum(w0, 0)
    count = (d1 - lo_d) * (h1 - lo_h) * (w1 - lo_w)
    base = x_ptr + nb * sxn + c * sxc
    acc = tl.zeros([BLOCK], dtype=acc_ty)
    for kd in range(0, KD):
        id_ = d0 + kd
        ok_d = (id_ >= lo_d) & (id_ < d1)
        for kh in range(0, KH):
            ih = h0 + kh
            ok_h = ok_d & (ih >= lo_h) & (ih < h1)
            for kw in range(0, KW):
                iw = w0 + kw
                ok = mask & ok_h & (iw >= lo_w) & (iw < w1)
                acc += tl.load(base + id_ * sxd + ih * sxh + iw * sxw, mask=ok, other=0.0).to(acc_ty)
    if HAS_DIVISOR:
        div = tl.full([BLOCK], divisor, acc_ty)
    elif COUNT_PAD:
        div = pool_size.to(acc_ty)
    else:
        div = count.to(acc_ty)
    res = tl.where(count > 0, acc / div, 0.0)
    tl.store(out_ptr + idx, res.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _adaptive_avg_kernel(x_ptr, out_ptr, n, C, D, H, W, OD, OH, OW, sxn, sxc, sxd, sxh, sxw, KD, KH, KW,
                         CL: tl.constexpr, BLOCK: tl.constexpr, INT64: tl.constexpr):
    idx, mask = block_indices(n, BLOCK, INT64)
    nb, c, od, oh, ow = out_coords(idx, C, OD, OH, OW, CL)
    acc_ty = tl.float64 if x_ptr.dtype.element_ty == tl.float64 else tl.float32
    # torch's bins; KD/KH/KW bound their sizes.
    d0, d1 = _adaptive_bin(od, D, OD)
    h0, h1 = _adaptive_bin(oh, H, OH)
    w0, w1 = _adaptive_bin(ow, W, OW)
    base = x_ptr + nb * sxn + c * sxc
    acc = tl.zeros([BLOCK], dtype=acc_ty)
    for kd in range(0, KD):
        id_ = d0 + kd
        ok_d = id_ < d1
        for kh in range(0, KH):
            ih = h0 + kh
            ok_h = ok_d & (ih < h1)
            for kw in range(0, KW):
                iw = w0 + kw
                ok = mask & ok_h & (iw < w1)
                acc += tl.load(base + id_ * sxd + ih * sxh + iw * sxw, mask=ok, other=0.0).to(acc_ty)
    res = acc / ((d1 - d0) * (h1 - h0) * (w1 - w0)).to(acc_ty)
    tl.store(out_ptr + idx, res.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _global_avg_kernel(x_ptr, out_ptr, C, HW, sxn, sxr, son, soc, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr,
                       INT64: tl.constexpr):
    # x is (N, HW, C) with unit channel stride: rows of BLOCK_C contiguous channels, summed down axis 0.
    num_c = tl.cdiv(C, BLOCK_C)
    pid = tl.program_id(0)
    if INT64:
        pid = pid.to(tl.int64)
    pid_c = pid % num_c
    nb = pid // num_c
    offs_c = pid_c * BLOCK_C + tl.arange(0, BLOCK_C)
    offs_r = tl.arange(0, BLOCK_R)
    c_mask = offs_c < C
    base = x_ptr + nb * sxn + offs_c
    acc_ty = tl.float64 if x_ptr.dtype.element_ty == tl.float64 else tl.float32
    acc = tl.zeros([BLOCK_R, BLOCK_C], dtype=acc_ty)
    for r0 in range(0, HW, BLOCK_R):
        rows = r0 + offs_r
        if INT64:
            rows = rows.to(tl.int64)
        acc += tl.load(base[None, :] + rows[:, None] * sxr, mask=(rows < HW)[:, None] & c_mask[None, :],
                       other=0.0).to(acc_ty)
    res = tl.sum(acc, axis=0) / HW
    tl.store(out_ptr + nb * son + offs_c * soc, res.to(out_ptr.dtype.element_ty), mask=c_mask)


GLOBAL_AVG = Tunable(
    "conv", "global_avg_pool", {"BLOCK_R": "pow2", "BLOCK_C": "pow2", "num_warps": "pow2"},
    key=lambda dtype, hw, c: Key({"dtype": dtype, "HW": bucket(hw), "C": bucket(c)}),
    # 128 channels per program: 16 blocks of the 2048 of ResNet's last layer, 512 programs at batch 32.
    rule=lambda dtype, hw, c: {"BLOCK_R": min(64, next_pow2(hw)), "BLOCK_C": min(128, next_pow2(c)), "num_warps": 4},
    interpreter=lambda dtype, hw, c: {"BLOCK_R": min(64, next_pow2(hw)), "BLOCK_C": min(1024, next_pow2(c)),
                                      "num_warps": 1},
    tables=Path(__file__).with_name("configs"))
"""The global average pool's launch over ``hw`` positions of ``c`` unit-stride channels: BLOCK_R
positions by BLOCK_C channels a step, and warps. Arguments: the dtype's name, hw and c."""


def _row_stride(x5: NBXTensor) -> int | None:
    """The one stride stepping through the spatial positions of ``x5`` (N, C, D, H, W) in order, or
    None when its spatial dims do not merge into one."""
    dims = [(s, st) for s, st in zip(x5.shape[2:], x5.stride()[2:], strict=True) if s > 1]
    for (_, outer), (size, inner) in zip(dims, dims[1:], strict=False):
        if outer != size * inner:
            return None
    return dims[-1][1] if dims else 1


def _global_avg(x5: NBXTensor, out: NBXTensor, config: Mapping[str, int] | None = None) -> bool:
    """Pool ``x5`` (N, C, D, H, W) into ``out`` (N, C, 1, 1, 1) by the column kernel when its channels
    have stride 1 and its spatial dims merge into one; whether it did. ``config`` replaces
    :data:`GLOBAL_AVG`'s lookup."""
    sxr = _row_stride(x5)
    if x5.stride()[1] != 1 or sxr is None:
        return False
    n, c = x5.shape[:2]
    hw = x5.shape[2] * x5.shape[3] * x5.shape[4]
    cfg = GLOBAL_AVG.choose(config, x5.dtype.name, hw, c)
    block_r, block_c, warps = cfg["BLOCK_R"], cfg["BLOCK_C"], cfg["num_warps"]
    launch(_global_avg_kernel, (cdiv(c, block_c) * n,), x5, out, c, hw, x5.stride()[0], sxr, out.stride()[0],
           out.stride()[1], BLOCK_R=block_r, BLOCK_C=block_c, INT64=needs_int64(n * c * hw, x5, out),
           num_warps=warps)
    return True


def _prep(op: str, self: object, nsp: int, dtypes: frozenset[D.DType] = FLOATING) -> tuple[NBXTensor, bool]:
    """The input, checked: (nsp+1)-D unbatched or (nsp+2)-D batched, non-batch dims non-empty."""
    x = tensor_arg(op, self, "input", dtypes=dtypes)
    if x.ndim not in (nsp + 1, nsp + 2) or any(s == 0 for s in x.shape[-(nsp + 1):]):
        raise ShapeError(f"{op}: expected a {nsp + 1}-D or {nsp + 2}-D (batch mode) input with non-zero sizes "
                         f"except the optional batch dim, got shape {list(x.shape)}")
    return x, x.ndim == nsp + 2


def _as5d(t: NBXTensor, nsp: int, batched: bool) -> NBXTensor:
    """An (N, C, D, H, W) view of a pooling operand with ``nsp`` spatial dims."""
    if not batched:
        t = unsqueeze(t, 0)
    for _ in range(3 - nsp):
        t = unsqueeze(t, 2)
    return t


def _pad3(vals: tuple[int, ...], fill: int) -> tuple[int, ...]:
    return (fill,) * (3 - len(vals)) + tuple(vals)


def _alloc(x: NBXTensor, batched: bool, out_sp: tuple[int, ...], dtype: D.DType,
           keep_format: bool = True) -> NBXTensor:
    """A batched (N, C, *out_sp) result, in ``x``'s memory format when ``keep_format``, else contiguous."""
    lead = tuple(x.shape[:2]) if batched else (1, x.shape[0])
    return empty_output((*lead, *out_sp), dtype, x, cl=keep_format and batched and suggests_channels_last(x))


def _window(op: str, nsp: int, kernel_size: object, stride: object, padding: object, dilation: object) -> tuple:
    ks = int_list(op, kernel_size, nsp, "kernel_size")
    st = int_list(op, stride, nsp, "stride", default=ks)
    pad = int_list(op, padding, nsp, "padding")
    dil = int_list(op, dilation, nsp, "dilation")
    positive(op, ks, "kernel_size")
    positive(op, st, "stride")
    positive(op, dil, "dilation")
    non_negative(op, pad, "padding")
    for k, p, d in zip(ks, pad, dil, strict=True):
        if p > ((k - 1) * d + 1) // 2:
            raise NbxValueError(f"{op}: padding {list(pad)} should be at most half of the effective kernel size "
                                f"(kernel_size {list(ks)}, dilation {list(dil)})")
    return ks, st, pad, dil


def _pool_out(size: int, k: int, pad: int, stride: int, dil: int, ceil_mode: bool) -> int:
    """torch's pooling output size (ceil mode may not start a window in the right padding)."""
    num = size + 2 * pad - dil * (k - 1) - 1 + (stride - 1 if ceil_mode else 0)
    out = num // stride + 1
    if ceil_mode and (out - 1) * stride >= size + pad:
        out -= 1
    return out


def _out_sizes(op: str, x: NBXTensor, nsp: int, ks: tuple, st: tuple, pad: tuple, dil: tuple,
               ceil_mode: bool) -> tuple[int, ...]:
    sp = tuple(x.shape[-nsp:])
    out = tuple(_pool_out(s, k, p, t, d, bool(ceil_mode)) for s, k, p, t, d in zip(sp, ks, pad, st, dil,
                                                                                        strict=True))
    if any(o < 1 for o in out):
        raise ShapeError(f"{op}: given input size {list(sp)}, the output size {list(out)} is too small: use a "
                         "smaller kernel or more padding")
    return out


def _finish(out: NBXTensor, batched: bool) -> NBXTensor:
    return out if batched else squeeze(out, 0)


def _launch_max(x: NBXTensor, nsp: int, batched: bool, out: NBXTensor, ind: NBXTensor, taps: tuple[int, ...],
                st: tuple[int, ...], pad: tuple[int, ...], dil: tuple[int, ...], adaptive: bool,
                with_indices: bool) -> tuple[NBXTensor, NBXTensor]:
    """Max-pool ``x`` into ``out`` (and its indices into ``ind``, laid out as ``out``) over windows of
    ``taps`` (per spatial dim): strided ones, or torch's adaptive bins when ``adaptive``."""
    x5, o5 = _as5d(x, nsp, batched), _as5d(out, nsp, True)
    n = out.numel()
    block = block_size(n)
    launch(_max_pool_kernel, (cdiv(n, block),), x5, out, ind, n, *x5.shape[1:], *o5.shape[2:], *x5.stride(),
           *_pad3(taps, 1), *_pad3(st, 1), *_pad3(pad, 0), *_pad3(dil, 1),
           ADAPTIVE=adaptive, CL=channels_last(out), WRITE_IDX=with_indices, BLOCK=block,
           INT64=needs_int64(n, x5, out), num_warps=_WARPS)
    return _finish(out, batched), _finish(ind, batched)


def _max_pool(op: str, nsp: int, self: object, kernel_size: object, stride: object, padding: object,
              dilation: object, ceil_mode: bool, with_indices: bool) -> tuple[NBXTensor, NBXTensor]:
    x, batched = _prep(op, self, nsp, FLOATING | INTEGRAL)
    ks, st, pad, dil = _window(op, nsp, kernel_size, stride, padding, dilation)
    out_sp = _out_sizes(op, x, nsp, ks, st, pad, dil, ceil_mode)
    out = _alloc(x, batched, out_sp, x.dtype)
    ind = _alloc(x, batched, out_sp, D.int64) if with_indices else out
    return _launch_max(x, nsp, batched, out, ind, ks, st, pad, dil, False, with_indices)


def max_pool2d(self: NBXTensor, kernel_size: list[int], stride: list[int] = (), padding: object = 0,
               dilation: object = 1, ceil_mode: bool = False) -> NBXTensor:
    """``aten::max_pool2d`` on (N, C, H, W) or (C, H, W)."""
    return _max_pool("max_pool2d", 2, self, kernel_size, stride, padding, dilation, ceil_mode, False)[0]


def max_pool2d_with_indices(self: NBXTensor, kernel_size: list[int], stride: list[int] = (), padding: object = 0,
                            dilation: object = 1, ceil_mode: bool = False) -> tuple[NBXTensor, NBXTensor]:
    """``aten::max_pool2d_with_indices``: (values, int64 flat indices within each H*W plane)."""
    return _max_pool("max_pool2d_with_indices", 2, self, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool3d(self: NBXTensor, kernel_size: list[int], stride: list[int] = (), padding: object = 0,
               dilation: object = 1, ceil_mode: bool = False) -> NBXTensor:
    """``aten::max_pool3d`` on (N, C, D, H, W) or (C, D, H, W)."""
    return _max_pool("max_pool3d", 3, self, kernel_size, stride, padding, dilation, ceil_mode, False)[0]


def max_pool3d_with_indices(self: NBXTensor, kernel_size: list[int], stride: list[int] = (), padding: object = 0,
                            dilation: object = 1, ceil_mode: bool = False) -> tuple[NBXTensor, NBXTensor]:
    """``aten::max_pool3d_with_indices``: (values, int64 flat indices within each D*H*W volume)."""
    return _max_pool("max_pool3d_with_indices", 3, self, kernel_size, stride, padding, dilation, ceil_mode, True)


def _avg_pool(op: str, nsp: int, self: object, kernel_size: object, stride: object, padding: object,
              ceil_mode: bool, count_include_pad: bool, divisor_override: int | None) -> NBXTensor:
    x, batched = _prep(op, self, nsp)
    ks, st, pad, _ = _window(op, nsp, kernel_size, stride, padding, 1)
    if divisor_override is not None:
        if int_arg(op, divisor_override, "divisor_override") == 0:
            raise NbxValueError(f"{op}: divisor_override must be non-zero")
    out_sp = _out_sizes(op, x, nsp, ks, st, pad, (1,) * nsp, ceil_mode)
    out = _alloc(x, batched, out_sp, x.dtype)
    x5, o5 = _as5d(x, nsp, batched), _as5d(out, nsp, True)
    n = out.numel()
    block = block_size(n)
    launch(_avg_pool_kernel, (cdiv(n, block),), x5, out, n, *x5.shape[1:], *o5.shape[2:], *x5.stride(),
           *_pad3(ks, 1), *_pad3(st, 1), *_pad3(pad, 0), float(divisor_override or 1),
           COUNT_PAD=bool(count_include_pad), HAS_DIVISOR=divisor_override is not None, CL=channels_last(out),
           BLOCK=block, INT64=needs_int64(n, x5, out), num_warps=_WARPS)
    return _finish(out, batched)


def avg_pool1d(self: NBXTensor, kernel_size: list[int], stride: list[int] = (), padding: object = 0,
               ceil_mode: bool = False, count_include_pad: bool = True) -> NBXTensor:
    """``aten::avg_pool1d`` on (N, C, L) or (C, L)."""
    return _avg_pool("avg_pool1d", 1, self, kernel_size, stride, padding, ceil_mode, count_include_pad, None)


def avg_pool2d(self: NBXTensor, kernel_size: list[int], stride: list[int] = (), padding: object = 0,
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> NBXTensor:
    """``aten::avg_pool2d`` on (N, C, H, W) or (C, H, W)."""
    return _avg_pool("avg_pool2d", 2, self, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)


def avg_pool3d(self: NBXTensor, kernel_size: list[int], stride: list[int] = (), padding: object = 0,
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> NBXTensor:
    """``aten::avg_pool3d`` on (N, C, D, H, W) or (C, D, H, W)."""
    return _avg_pool("avg_pool3d", 3, self, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)


def _max_bin(size: int, out: int) -> int:
    """The largest adaptive bin, ceil((i+1)*size/out) - floor(i*size/out) over i."""
    return max(-(-(i + 1) * size // out) - i * size // out for i in range(out))


def _output_size(op: str, output_size: object, nsp: int) -> tuple[int, ...]:
    """An adaptive pool's ``output_size``: an int for every spatial dim, or a list of exactly ``nsp``
    sizes, none negative (torch refuses a list of another length)."""
    if isinstance(output_size, list | tuple) and len(output_size) != nsp:
        raise NbxValueError(f"{op}: output_size must list {nsp} sizes, one per spatial dim, got {list(output_size)}: "
                            f"pass {nsp} sizes or a single int")
    out_sp = int_list(op, output_size, nsp, "output_size")
    non_negative(op, out_sp, "output_size")
    return out_sp


def _adaptive(op: str, nsp: int, self: object, output_size: object) -> NBXTensor:
    x, batched = _prep(op, self, nsp)
    out_sp = _output_size(op, output_size, nsp)
    out = _alloc(x, batched, out_sp, x.dtype)
    n = out.numel()
    if n == 0:
        return _finish(out, batched)
    x5, o5 = _as5d(x, nsp, batched), _as5d(out, nsp, True)
    if all(s == 1 for s in out_sp) and _global_avg(x5, o5):
        return _finish(out, batched)
    bins = [_max_bin(s, o) for s, o in zip(x5.shape[2:], o5.shape[2:], strict=True)]
    block = block_size(n)
    launch(_adaptive_avg_kernel, (cdiv(n, block),), x5, out, n, *x5.shape[1:], *o5.shape[2:], *x5.stride(), *bins,
           CL=channels_last(out), BLOCK=block, INT64=needs_int64(n, x5, out), num_warps=_WARPS)
    return _finish(out, batched)


def adaptive_avg_pool1d(self: NBXTensor, output_size: list[int]) -> NBXTensor:
    """``aten::adaptive_avg_pool1d`` on (N, C, L) or (C, L)."""
    return _adaptive("adaptive_avg_pool1d", 1, self, output_size)


def adaptive_avg_pool2d(self: NBXTensor, output_size: list[int]) -> NBXTensor:
    """``aten::adaptive_avg_pool2d`` on (N, C, H, W) or (C, H, W)."""
    return _adaptive("adaptive_avg_pool2d", 2, self, output_size)


def _adaptive_avg_pool2d(self: NBXTensor, output_size: list[int]) -> NBXTensor:
    """``aten::_adaptive_avg_pool2d``: the same computation as adaptive_avg_pool2d."""
    return _adaptive("_adaptive_avg_pool2d", 2, self, output_size)


def _adaptive_avg_pool3d(self: NBXTensor, output_size: list[int]) -> NBXTensor:
    """``aten::_adaptive_avg_pool3d`` on (N, C, D, H, W) or (C, D, H, W)."""
    return _adaptive("_adaptive_avg_pool3d", 3, self, output_size)


def _adaptive_max(op: str, nsp: int, self: object, output_size: object) -> tuple[NBXTensor, NBXTensor]:
    """(values, int64 indices) of adaptive max pooling over ``nsp`` spatial dims: the max-pool kernel
    over torch's adaptive bins."""
    x, batched = _prep(op, self, nsp)
    out_sp = _output_size(op, output_size, nsp)
    # torch lays a 2-D result out in the input's memory format, a 3-D one contiguous whatever the input.
    keep_format = nsp < 3
    out = _alloc(x, batched, out_sp, x.dtype, keep_format)
    ind = _alloc(x, batched, out_sp, D.int64, keep_format)
    if out.numel() == 0:
        return _finish(out, batched), _finish(ind, batched)
    bins = tuple(_max_bin(s, o) for s, o in zip(x.shape[-nsp:], out_sp, strict=True))
    return _launch_max(x, nsp, batched, out, ind, bins, (1,) * nsp, (0,) * nsp, (1,) * nsp, True, True)


def adaptive_max_pool1d(self: NBXTensor, output_size: list[int]) -> tuple[NBXTensor, NBXTensor]:
    """``aten::adaptive_max_pool1d`` on (N, C, L) or (C, L): (values, int64 indices within each L row)."""
    op = "adaptive_max_pool1d"
    x, _ = _prep(op, self, 1)
    (size,) = _output_size(op, output_size, 1)
    # As torch: the 2-D pool over a height of 1, which also gives the 2-D pool's result layout (a
    # channels-last one for unit-stride channels).
    values, indices = _adaptive_max(op, 2, unsqueeze(x, -2), [1, size])
    return squeeze(values, -2), squeeze(indices, -2)


def adaptive_max_pool2d(self: NBXTensor, output_size: list[int]) -> tuple[NBXTensor, NBXTensor]:
    """``aten::adaptive_max_pool2d`` on (N, C, H, W) or (C, H, W): (values, int64 flat indices within
    each H*W plane)."""
    return _adaptive_max("adaptive_max_pool2d", 2, self, output_size)


def adaptive_max_pool3d(self: NBXTensor, output_size: list[int]) -> tuple[NBXTensor, NBXTensor]:
    """``aten::adaptive_max_pool3d`` on (N, C, D, H, W) or (C, D, H, W): (values, int64 flat indices
    within each D*H*W volume)."""
    return _adaptive_max("adaptive_max_pool3d", 3, self, output_size)
