"""Convolution as one implicit GEMM: conv1d/conv2d/_conv_depthwise2d/convolution and the transposed forms.

Per group, the output is a GEMM with M = N*OH*OW rows, N = K/groups output channels and a
reduction over C/groups * R * S. Rows gather their input pixels straight from the input's strides,
so NCHW, channels-last and any other layout are read in place (channels-last makes the channel
loads contiguous, which is the fast path on the GPU). Two reduction orders:

- nested (C/groups >= 16): for each kernel tap (r, s), blocks of channels; one address per row;
- flat (few channels, the 7x7 stem, depthwise): the reduction index k -> (r, s, c), c fastest.

A transposed convolution is the same gather read backwards: output pixel ``oh`` takes input pixel
``ih = (oh + pad - r*dil) / stride`` where that division is exact and in range. 1-D convolutions run
as 2-D ones with H = 1. Half types accumulate in float32; float32 uses full-precision (ieee) dots;
float64 multiplies and sums in float64 without tensor cores.
"""

import triton
import triton.language as tl

from nbx_core import dtypes as D
from nbx_core.errors import NbxTypeError, NbxValueError, ShapeError
from nbx_core.kernels.dot import dot_operand
from nbx_core.kernels.indexing import needs_int64
from nbx_core.launch import BACKEND, cdiv, launch, next_pow2
from nbx_core.ops.views import squeeze, unsqueeze
from nbx_core.tensor import NBXTensor, check_device

from .args import check_float, empty_output, ints, non_negative, positive


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
def _mac(acc, a, b, MODE: tl.constexpr):
    # MODE 0: tensor-core dot (half types); 1: ieee float32 dot; 2: float64 multiply-add.
    if MODE == 0:
        acc = tl.dot(dot_operand(a), dot_operand(b), acc)
    elif MODE == 1:
        acc = tl.dot(a, b, acc, input_precision="ieee")
    else:
        acc += tl.sum(a[:, :, None].to(tl.float64) * b[None, :, :].to(tl.float64), axis=1)
    return acc


# Sizes and window parameters vary per layer: specializing on them (== 1, % 16) would only multiply
# compiled variants; strides and channel counts stay specialized for vectorized loads.
@triton.jit(do_not_specialize=["M", "H", "W", "OH", "OW", "R", "S", "stride_h", "stride_w", "pad_h", "pad_w",
                               "dil_h", "dil_w"])
def _conv_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr,
    M, H, W, OH, OW, Cg, Kg, R, S,
    sxn, sxc, sxh, sxw,
    swg, swk, swc, swr, sws,
    son, sok, soh, sow,
    stride_h, stride_w, pad_h, pad_w, dil_h, dil_w,
    TRANSPOSED: tl.constexpr, HAS_BIAS: tl.constexpr, FLAT_K: tl.constexpr, MODE: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, INT64: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    g = tl.program_id(2)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    if INT64:
        offs_m = offs_m.to(tl.int64)
        g = g.to(tl.int64)
    m_mask = offs_m < M
    n_mask = offs_n < Kg
    ow = offs_m % OW
    oh = (offs_m // OW) % OH
    nb = offs_m // (OW * OH)
    x_row = x_ptr + nb * sxn + g * Cg * sxc
    w_col = w_ptr + g * swg + offs_n * swk
    acc_ty = tl.float64 if MODE == 2 else tl.float32
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=acc_ty)
    if FLAT_K:
        for k0 in range(0, Cg * R * S, BLOCK_K):
            kk = k0 + offs_k
            k_mask = kk < Cg * R * S
            c = kk % Cg
            rs = kk // Cg
            r = rs // S
            s = rs % S
            ih, iw, ok = _in_coords(oh[:, None], ow[:, None], r[None, :], s[None, :], H, W, stride_h, stride_w,
                                    pad_h, pad_w, dil_h, dil_w, TRANSPOSED)
            a_mask = ok & m_mask[:, None] & k_mask[None, :]
            a = tl.load(x_row[:, None] + ih * sxh + iw * sxw + c[None, :] * sxc, mask=a_mask, other=0.0)
            b_off = (c * swc + r * swr + s * sws)[:, None]
            b = tl.load(w_col[None, :] + b_off, mask=k_mask[:, None] & n_mask[None, :], other=0.0)
            acc = _mac(acc, a, b, MODE)
    else:
        for rs in range(0, R * S):
            r = rs // S
            s = rs % S
            ih, iw, ok = _in_coords(oh, ow, r, s, H, W, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, TRANSPOSED)
            row_ok = ok & m_mask
            a_base = x_row + ih * sxh + iw * sxw
            b_base = w_col + r * swr + s * sws
            for c0 in range(0, Cg, BLOCK_K):
                c = c0 + offs_k
                c_mask = c < Cg
                a = tl.load(a_base[:, None] + c[None, :] * sxc, mask=row_ok[:, None] & c_mask[None, :], other=0.0)
                b = tl.load(b_base[None, :] + c[:, None] * swc, mask=c_mask[:, None] & n_mask[None, :], other=0.0)
                acc = _mac(acc, a, b, MODE)
    k_out = g * Kg + offs_n
    if HAS_BIAS:
        bias = tl.load(b_ptr + k_out, mask=n_mask, other=0.0)
        acc += bias.to(acc_ty)[None, :]
    out_off = (nb * son + oh * soh + ow * sow)[:, None] + (k_out * sok)[None, :]
    tl.store(out_ptr + out_off, acc.to(out_ptr.dtype.element_ty), mask=m_mask[:, None] & n_mask[None, :])


def _blocks(m: int, cg: int, kg: int, flat: bool, red: int) -> tuple[int, int, int, int, int]:
    """(BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages) for the backend."""
    bn = min(128, max(16, next_pow2(kg)))
    bk = min(64, max(16, next_pow2(red if flat else cg)))
    if BACKEND == "cpu":
        return min(128, max(16, next_pow2(m))), bn, bk, 1, 1
    # Small layers (7x7 maps) give too few 128-row tiles to fill the GPU's 132 SMs: halve BLOCK_M.
    bm = 128 if cdiv(m, 128) * cdiv(kg, bn) >= 132 else 64
    return bm, bn, bk, 8 if bn >= 64 and bm == 128 else 4, 3 if bk == 64 and bn == 128 else 4


def _conv(op: str, x: NBXTensor, w: NBXTensor, bias: NBXTensor | None, stride: tuple[int, int],
          pad: tuple[int, int], dil: tuple[int, int], transposed: bool, out_pad: tuple[int, int], groups: int,
          out_hw: tuple[int, int] | None = None) -> NBXTensor:
    """The 2-D (N, C, H, W) convolution behind every wrapper; ``out_hw`` overrides the output size."""
    n, c, h, wd = x.shape
    if transposed:
        cg, kg, r, s = w.shape[0] // groups, w.shape[1], w.shape[2], w.shape[3]
        if w.shape[0] != c:
            raise ShapeError(f"{op}: weight of shape {list(w.shape)} expects {w.shape[0]} input channels, got "
                             f"input of shape {list(x.shape)}: a transposed weight is (C_in, C_out/groups, kH, kW)")
        if c % groups:
            raise NbxValueError(f"{op}: input channels {c} must be divisible by groups={groups}")
    else:
        kg, cg, r, s = w.shape[0] // groups, w.shape[1], w.shape[2], w.shape[3]
        if w.shape[0] % groups:
            raise NbxValueError(f"{op}: out channels {w.shape[0]} (weight.shape[0]) must be divisible by "
                                f"groups={groups}")
        if cg * groups != c:
            raise ShapeError(f"{op}: input of shape {list(x.shape)} has {c} channels but weight of shape "
                             f"{list(w.shape)} with groups={groups} expects {cg * groups}: match the channels")
    k = kg * groups
    if bias is not None and (bias.ndim != 1 or bias.shape[0] != k):
        raise ShapeError(f"{op}: bias must have shape [{k}] (one per output channel), got {list(bias.shape)}")
    if transposed:
        for o, st, d in zip(out_pad, stride, dil, strict=True):
            if o >= st and o >= d:
                raise NbxValueError(f"{op}: output_padding {list(out_pad)} must be smaller than either stride "
                                    f"{list(stride)} or dilation {list(dil)}")
        oh = (h - 1) * stride[0] - 2 * pad[0] + dil[0] * (r - 1) + out_pad[0] + 1
        ow = (wd - 1) * stride[1] - 2 * pad[1] + dil[1] * (s - 1) + out_pad[1] + 1
        if oh <= 0 or ow <= 0:
            raise ShapeError(f"{op}: output size ({oh}, {ow}) is too small for input {list(x.shape)}: "
                             "reduce padding or raise stride")
    else:
        eff_h, eff_w = dil[0] * (r - 1) + 1, dil[1] * (s - 1) + 1
        if out_hw is None and (h + 2 * pad[0] < eff_h or wd + 2 * pad[1] < eff_w):
            raise ShapeError(f"{op}: kernel size ({eff_h}, {eff_w}) (with dilation) can't be greater than the "
                             f"padded input size ({h + 2 * pad[0]}, {wd + 2 * pad[1]}): pad the input or use a "
                             "smaller kernel")
        oh, ow = out_hw or ((h + 2 * pad[0] - eff_h) // stride[0] + 1, (wd + 2 * pad[1] - eff_w) // stride[1] + 1)
    out = empty_output((n, k, oh, ow), x.dtype, x)
    m = n * oh * ow
    if m == 0 or k == 0:
        return out
    if cg == 0:
        raise ShapeError(f"{op}: input of shape {list(x.shape)} has no channels to convolve")
    flat = cg < 16
    bm, bn, bk, warps, stages = _blocks(m, cg, kg, flat, cg * r * s)
    ws = w.stride()
    if transposed:
        wg, wk, wc = cg * ws[0], ws[1], ws[0]
    else:
        wg, wk, wc = kg * ws[0], ws[0], ws[1]
    mode = 2 if x.dtype is D.float64 else 1 if x.dtype is D.float32 else 0
    grid = (cdiv(m, bm), cdiv(kg, bn), groups)
    launch(
        _conv_kernel, grid, x, w, bias if bias is not None else x, out,
        m, h, wd, oh, ow, cg, kg, r, s, *x.stride(), wg, wk, wc, ws[2], ws[3], *out.stride(),
        stride[0], stride[1], pad[0], pad[1], dil[0], dil[1],
        TRANSPOSED=transposed, HAS_BIAS=bias is not None, FLAT_K=flat, MODE=mode,
        BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, INT64=needs_int64(m * k, x, w, out),
        num_warps=warps, num_stages=stages,
    )
    return out


def _check_tensors(op: str, x: object, w: object, bias: object) -> tuple[NBXTensor, NBXTensor, NBXTensor | None]:
    x = check_float(op, x, "input")
    w = check_float(op, w, "weight")
    if bias is not None:
        bias = check_float(op, bias, "bias")
    check_device(op, x, w, bias)
    for t, arg in ((w, "weight"), (bias, "bias")):
        if t is not None and t.dtype is not x.dtype:
            raise NbxTypeError(f"{op}: input is {x.dtype} but {arg} is {t.dtype}: cast them to one dtype")
    return x, w, bias


def _as_int(op: str, value: object, arg: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise NbxTypeError(f"{op}: {arg} must be an int, got {type(value).__name__}")
    return value


def _convnd(op: str, spatial: int, input: object, weight: object, bias: object, stride: object, padding: object,
            dilation: object, transposed: bool, output_padding: object, groups: object) -> NBXTensor:
    """Checks and 1-D/unbatched reshaping around :func:`_conv`; ``padding`` may be "same" or "valid"."""
    x, w, bias = _check_tensors(op, input, weight, bias)
    groups = _as_int(op, groups, "groups")
    if groups <= 0:
        raise NbxValueError(f"{op}: groups must be positive, got {groups}")
    if w.ndim != spatial + 2:
        raise ShapeError(f"{op}: weight must be {spatial + 2}-D (out, in/groups, *kernel), got shape {list(w.shape)}")
    if x.ndim not in (spatial + 1, spatial + 2):
        raise ShapeError(f"{op}: expected {spatial + 1}-D (unbatched) or {spatial + 2}-D (batched) input, got "
                         f"shape {list(x.shape)}")
    st = ints(op, stride, spatial, "stride")
    dil = ints(op, dilation, spatial, "dilation")
    opad = ints(op, output_padding, spatial, "output_padding")
    positive(op, st, "stride")
    positive(op, dil, "dilation")
    non_negative(op, opad, "output_padding")
    batched = x.ndim == spatial + 2
    if not batched:
        x = unsqueeze(x, 0)
    out_hw = None
    if isinstance(padding, str):
        if padding == "valid":
            pad = (0,) * spatial
        elif padding == "same":
            if any(v != 1 for v in st):
                raise NbxValueError(f"{op}: padding='same' is not supported for strided convolutions "
                                    f"(stride {list(st)}): use stride 1 or explicit padding")
            # Total padding dil*(k-1); the odd extra pixel goes on the right/bottom, as torch pads it.
            pad = tuple(d * (kk - 1) // 2 for d, kk in zip(dil, w.shape[2:], strict=True))
            out_hw = tuple(x.shape[2:])
        else:
            raise NbxValueError(f"{op}: invalid padding string {padding!r}: use 'same', 'valid' or ints")
    else:
        pad = ints(op, padding, spatial, "padding")
    non_negative(op, pad, "padding")
    if spatial == 1:
        x, w = unsqueeze(x, 2), unsqueeze(w, 2)
        st, pad, dil, opad = (1, *st), (0, *pad), (1, *dil), (0, *opad)
        out_hw = (1, *out_hw) if out_hw is not None else None
    out = _conv(op, x, w, bias, st, pad, dil, transposed, opad, groups, out_hw)
    if spatial == 1:
        out = squeeze(out, 2)
    return out if batched else squeeze(out, 0)


def convolution(input: NBXTensor, weight: NBXTensor, bias: NBXTensor | None, stride: list[int],
                padding: list[int], dilation: list[int], transposed: bool, output_padding: list[int],
                groups: int) -> NBXTensor:
    """``aten::convolution`` (what torch.export emits): 1-D or 2-D, plain or transposed, batched input."""
    w = check_float("convolution", weight, "weight")
    spatial = w.ndim - 2
    if spatial not in (1, 2):
        raise ShapeError(f"convolution: NBX supports 1-D and 2-D convolutions (3-D or 4-D weight), got weight of "
                         f"shape {list(w.shape)}")
    x = check_float("convolution", input, "input")
    if x.ndim != w.ndim:
        raise ShapeError(f"convolution: input of shape {list(x.shape)} must have the weight's {w.ndim} dims")
    return _convnd("convolution", spatial, x, w, bias, stride, padding, dilation, bool(transposed),
                   output_padding, groups)


def conv1d(input: NBXTensor, weight: NBXTensor, bias: NBXTensor | None = None, stride: object = 1,
           padding: object = 0, dilation: object = 1, groups: int = 1) -> NBXTensor:
    """``aten::conv1d`` and ``conv1d.padding`` (``padding`` "same"/"valid")."""
    return _convnd("conv1d", 1, input, weight, bias, stride, padding, dilation, False, 0, groups)


def conv2d(input: NBXTensor, weight: NBXTensor, bias: NBXTensor | None = None, stride: object = 1,
           padding: object = 0, dilation: object = 1, groups: int = 1) -> NBXTensor:
    """``aten::conv2d`` and ``conv2d.padding`` (``padding`` "same"/"valid")."""
    return _convnd("conv2d", 2, input, weight, bias, stride, padding, dilation, False, 0, groups)


def conv_transpose1d(input: NBXTensor, weight: NBXTensor, bias: NBXTensor | None = None, stride: object = 1,
                     padding: object = 0, output_padding: object = 0, groups: int = 1,
                     dilation: object = 1) -> NBXTensor:
    """``aten::conv_transpose1d``: weight (C_in, C_out/groups, kW)."""
    if isinstance(padding, str):
        raise NbxTypeError("conv_transpose1d: padding must be ints, got a string")
    return _convnd("conv_transpose1d", 1, input, weight, bias, stride, padding, dilation, True, output_padding,
                   groups)


def conv_transpose2d(input: NBXTensor, weight: NBXTensor, bias: NBXTensor | None = None, stride: object = 1,
                     padding: object = 0, output_padding: object = 0, groups: int = 1,
                     dilation: object = 1) -> NBXTensor:
    """``aten::conv_transpose2d.input``: weight (C_in, C_out/groups, kH, kW)."""
    if isinstance(padding, str):
        raise NbxTypeError("conv_transpose2d: padding must be ints, got a string")
    return _convnd("conv_transpose2d", 2, input, weight, bias, stride, padding, dilation, True, output_padding,
                   groups)


def _conv_depthwise2d(self: NBXTensor, weight: NBXTensor, kernel_size: list[int], bias: NBXTensor | None,
                      stride: list[int], padding: list[int], dilation: list[int]) -> NBXTensor:
    """``aten::_conv_depthwise2d``: groups = input channels, weight (C*multiplier, 1, kH, kW)."""
    op = "_conv_depthwise2d"
    x, w, bias = _check_tensors(op, self, weight, bias)
    if x.ndim != 4 or w.ndim != 4:
        raise ShapeError(f"{op}: expected 4-D input and weight, got {list(x.shape)} and {list(w.shape)}")
    ks = ints(op, kernel_size, 2, "kernel_size")
    if tuple(w.shape[2:]) != ks:
        raise ShapeError(f"{op}: kernel_size {list(ks)} does not match weight of shape {list(w.shape)}")
    if w.shape[1] != 1 or x.shape[1] == 0 or w.shape[0] % x.shape[1]:
        raise ShapeError(f"{op}: weight of shape {list(w.shape)} must be (C*multiplier, 1, kH, kW) for input "
                         f"of shape {list(x.shape)}")
    return _convnd(op, 2, x, w, bias, stride, padding, dilation, False, 0, x.shape[1])
