"""Upsampling: nearest, nearest-exact and (bi)linear, with torch's source-index formulas.

Every op runs as an (N, C, D, H, W) gather, one output element per lane, lanes in the output's
memory order (channels-last stays channels-last). Per output coordinate ``o`` along a dim of input
size ``in``, with ``scale`` = 1/scale_factor when a scale is given, else in/out, in float32 as torch:

- nearest: ``min(floor(o * scale), in - 1)``;  nearest-exact: ``min(floor((o + 0.5) * scale), in - 1)``;
- linear: ``src = scale * o`` (align_corners, scale = (in-1)/(out-1)) or ``max(scale*(o+0.5)-0.5, 0)``,
  then the two taps ``i0 = floor(src)``, ``i0 + 1`` (clamped) with weights ``1 - l``, ``l``.
- antialiased bilinear and bicubic (``_upsample_bilinear2d_aa``, ``_upsample_bicubic2d_aa``, what
  ``F.interpolate(..., antialias=True)`` and torchvision's resize call): per dim, a filter (triangle,
  or Keys' cubic with a = -0.5) stretched by the scale when downsampling, centred at
  ``scale * (o + 0.5)``, its taps ``[trunc(center - support + 0.5), trunc(center + support + 0.5))``
  clamped to the input, its weights normalised to sum 1 (support = 1 or 2 input pixels, times the
  scale when above 1).

Both overloads of each op (``output_size`` with per-dim scales, and ``.vec`` with ``scale_factors``)
are served by one wrapper.
"""

import math
from collections.abc import Sequence

import numpy as np
import triton
import triton.language as tl

from nbx_core import dtypes as D
from nbx_core.errors import NbxTypeError, NbxValueError, ShapeError
from nbx_core.ops.views import unsqueeze
from nbx_core.runtime.kernels.indexing import block_indices, needs_int64
from nbx_core.runtime.launch import block_size, cdiv, launch
from nbx_core.tensor import NBXTensor
from nbx_core.tensor.args import FLOATING, int_list, tensor_arg

from .memory_format import channels_last, empty_output
from .pooling import out_coords

_WARPS = 4


@triton.jit
def _nearest(o, IN, scale, COMPUTE: tl.constexpr, EXACT: tl.constexpr):
    of = o.to(COMPUTE)
    if EXACT:
        of = of + 0.5
    src = tl.floor(of * scale).to(tl.int32)
    return tl.minimum(src, IN - 1)


@triton.jit
def _linear(o, IN, scale, COMPUTE: tl.constexpr, ALIGN: tl.constexpr):
    if ALIGN:
        src = scale * o.to(COMPUTE)
    else:
        src = tl.maximum(scale * (o.to(COMPUTE) + 0.5) - 0.5, 0.0)
    i0 = tl.minimum(tl.floor(src).to(tl.int32), IN - 1)
    lam = tl.minimum(tl.maximum(src - i0.to(COMPUTE), 0.0), 1.0)
    i1 = i0 + (i0 < IN - 1).to(tl.int32)
    return i0, i1, lam


@triton.jit
def _upsample_kernel(x_ptr, out_ptr, n, C, D, H, W, OD, OH, OW, sxn, sxc, sxd, sxh, sxw,
                     scale_d: tl.float64, scale_h: tl.float64, scale_w: tl.float64,
                     MODE: tl.constexpr, ALIGN: tl.constexpr, COMPUTE: tl.constexpr, CL: tl.constexpr,
                     BLOCK: tl.constexpr, INT64: tl.constexpr):
    # MODE 0: nearest; 1: nearest-exact; 2: linear over H and W (D is 1 there).
    idx, mask = block_indices(n, BLOCK, INT64)
    nb, c, od, oh, ow = out_coords(idx, C, OD, OH, OW, CL)
    base = x_ptr + nb * sxn + c * sxc
    # Scales arrive as float64 (exact for float32 values) and are used in the compute dtype, as torch does.
    scale_d = tl.full([1], scale_d, tl.float64).to(COMPUTE)
    scale_h = tl.full([1], scale_h, tl.float64).to(COMPUTE)
    scale_w = tl.full([1], scale_w, tl.float64).to(COMPUTE)
    if MODE == 2:
        h0, h1, lh = _linear(oh, H, scale_h, COMPUTE, ALIGN)
        w0, w1, lw = _linear(ow, W, scale_w, COMPUTE, ALIGN)
        v00 = tl.load(base + h0 * sxh + w0 * sxw, mask=mask, other=0.0).to(COMPUTE)
        v01 = tl.load(base + h0 * sxh + w1 * sxw, mask=mask, other=0.0).to(COMPUTE)
        v10 = tl.load(base + h1 * sxh + w0 * sxw, mask=mask, other=0.0).to(COMPUTE)
        v11 = tl.load(base + h1 * sxh + w1 * sxw, mask=mask, other=0.0).to(COMPUTE)
        res = (1.0 - lh) * ((1.0 - lw) * v00 + lw * v01) + lh * ((1.0 - lw) * v10 + lw * v11)
        tl.store(out_ptr + idx, res.to(out_ptr.dtype.element_ty), mask=mask)
    else:
        id_ = _nearest(od, D, scale_d, COMPUTE, MODE == 1)
        ih = _nearest(oh, H, scale_h, COMPUTE, MODE == 1)
        iw = _nearest(ow, W, scale_w, COMPUTE, MODE == 1)
        v = tl.load(base + id_ * sxd + ih * sxh + iw * sxw, mask=mask)
        tl.store(out_ptr + idx, v, mask=mask)


@triton.jit
def _aa_filter(x, CUBIC: tl.constexpr):
    x = tl.abs(x)
    if CUBIC:
        # Keys' cubic convolution with a = -0.5 (torch's antialiasing filter; PIL's too).
        return tl.where(x < 1.0, (1.5 * x - 2.5) * x * x + 1.0,
                        tl.where(x < 2.0, (((x - 5.0) * x + 8.0) * x - 4.0) * -0.5, 0.0))
    return tl.where(x < 1.0, 1.0 - x, 0.0)


@triton.jit
def _aa_window(o, IN, scale, CUBIC: tl.constexpr, COMPUTE: tl.constexpr):
    """(center, first tap, taps, 1 / filter stretch) of output coordinate ``o`` along one dim."""
    half = 2.0 if CUBIC else 1.0
    support = tl.where(scale >= 1.0, half * scale, half)
    stretch = 1.0 / tl.maximum(scale, 1.0)
    center = scale * (o.to(COMPUTE) + 0.5)
    # C++ casts truncate toward zero; the first tap is clamped at 0 either way.
    lo = tl.maximum((center - support + 0.5).to(tl.int32), 0)
    taps = tl.minimum((center + support + 0.5).to(tl.int32), IN) - lo
    return center, lo, taps, stretch


@triton.jit
def _upsample_aa_kernel(x_ptr, out_ptr, n, C, H, W, OH, OW, sxn, sxc, sxh, sxw, max_h, max_w,
                        scale_h: tl.float64, scale_w: tl.float64, CUBIC: tl.constexpr, COMPUTE: tl.constexpr,
                        CL: tl.constexpr, BLOCK: tl.constexpr, INT64: tl.constexpr):
    # Each lane sums its output's window of taps (at most max_h x max_w), weights normalised per dim.
    idx, mask = block_indices(n, BLOCK, INT64)
    nb, c, _, oh, ow = out_coords(idx, C, 1, OH, OW, CL)
    base = x_ptr + nb * sxn + c * sxc
    scale_h = tl.full([1], scale_h, tl.float64).to(COMPUTE)
    scale_w = tl.full([1], scale_w, tl.float64).to(COMPUTE)
    ch, h0, nh, fh = _aa_window(oh, H, scale_h, CUBIC, COMPUTE)
    cw, w0, nw, fw = _aa_window(ow, W, scale_w, CUBIC, COMPUTE)
    total_w = tl.zeros([BLOCK], COMPUTE)
    for k in range(0, max_w):
        total_w += tl.where(k < nw, _aa_filter((k + w0 - cw + 0.5) * fw, CUBIC), 0.0)
    total_h = tl.zeros([BLOCK], COMPUTE)
    acc = tl.zeros([BLOCK], COMPUTE)
    for j in range(0, max_h):
        wy = tl.where(j < nh, _aa_filter((j + h0 - ch + 0.5) * fh, CUBIC), 0.0)
        total_h += wy
        row = tl.zeros([BLOCK], COMPUTE)
        for k in range(0, max_w):
            wx = tl.where(k < nw, _aa_filter((k + w0 - cw + 0.5) * fw, CUBIC), 0.0)
            v = tl.load(base + (h0 + j) * sxh + (w0 + k) * sxw, mask=mask & (j < nh) & (k < nw), other=0.0)
            row += wx * v.to(COMPUTE)
        acc += wy * row
    # A window whose weights sum to 0 keeps them (all 0), as torch does.
    acc = acc / (tl.where(total_h != 0.0, total_h, 1.0) * tl.where(total_w != 0.0, total_w, 1.0))
    tl.store(out_ptr + idx, acc.to(out_ptr.dtype.element_ty), mask=mask)


def _sizes(op: str, x: NBXTensor, nsp: int, output_size: object, scales: Sequence[object],
           scale_factors: object) -> tuple[tuple[int, ...], list[float | None]]:
    """Output sizes and per-dim scales from either overload (exactly one of size and factors)."""
    sp = tuple(x.shape[2:])
    if scale_factors is not None:
        if output_size is not None:
            raise NbxValueError(f"{op}: must specify exactly one of output_size and scale_factors")
        if not isinstance(scale_factors, Sequence) or len(scale_factors) != nsp:
            raise NbxValueError(f"{op}: scale_factors must be a list of {nsp} floats, got {scale_factors!r}")
        facs = [float(f) for f in scale_factors]
        if any(f <= 0 for f in facs):
            raise NbxValueError(f"{op}: scale_factors must be positive, got {facs}")
        return tuple(int(s * f) for s, f in zip(sp, facs, strict=True)), list(facs)
    if output_size is None:
        raise NbxValueError(f"{op}: must specify exactly one of output_size and scale_factors")
    out = int_list(op, output_size, nsp, "output_size")
    if len(list(output_size)) != nsp:
        raise NbxValueError(f"{op}: output_size must have {nsp} elements, got {list(output_size)}")
    for s in scales:
        if s is not None and not isinstance(s, int | float):
            raise NbxTypeError(f"{op}: scales must be floats or None, got {type(s).__name__}")
    return out, [None if s is None else float(s) for s in scales]


def _scale(size: int, out: int, scale: float | None, f32: bool) -> float:
    """torch's compute_scales_value: 1/scale when given and positive, else in/out (float32 unless float64)."""
    if scale is not None and scale > 0:
        v = 1.0 / scale
        return float(np.float32(v)) if f32 else v
    return float(np.float32(size) / np.float32(out)) if f32 else size / out


def _align_scale(size: int, out: int, f32: bool) -> float:
    if out <= 1:
        return 0.0
    return float(np.float32(size - 1) / np.float32(out - 1)) if f32 else (size - 1) / (out - 1)


def _upsample(op: str, nsp: int, mode: int, input: object, output_size: object, scales: Sequence[object],
              scale_factors: object, align_corners: bool = False) -> NBXTensor:
    # Nearest modes copy values: they take uint8 images too (as torch's CUDA kernels do).
    x = tensor_arg(op, input, "input", dtypes=FLOATING | {D.uint8} if mode != 2 else FLOATING)
    if x.ndim != nsp + 2:
        raise ShapeError(f"{op}: expected a {nsp + 2}-D (N, C, *spatial) input, got shape {list(x.shape)}")
    if any(s == 0 for s in x.shape[1:]):
        raise ShapeError(f"{op}: input sizes except the batch dim must be non-zero, got {list(x.shape)}")
    out_sp, sc = _sizes(op, x, nsp, output_size, scales, scale_factors)
    if any(o <= 0 for o in out_sp):
        raise ShapeError(f"{op}: output sizes must be positive, got {list(out_sp)} for input {list(x.shape)}")
    out = empty_output((*x.shape[:2], *out_sp), x.dtype, x)
    n = out.numel()
    if n == 0:
        return out
    f32 = x.dtype is not D.float64
    x5, o5 = x, out
    for _ in range(3 - nsp):
        x5, o5 = unsqueeze(x5, 2), unsqueeze(o5, 2)
    sc = [None] * (3 - nsp) + sc
    vals = []
    for s, o, scl in zip(x5.shape[2:], o5.shape[2:], sc, strict=True):
        if mode == 2:
            vals.append(_align_scale(s, o, f32) if align_corners else _scale(s, o, scl, f32))
        elif mode == 0 and o == s:
            vals.append(1.0)  # torch's shortcuts: identity, and o >> 1 when the size doubles
        elif mode == 0 and o == 2 * s:
            vals.append(0.5)
        else:
            vals.append(_scale(s, o, scl, f32))
    block = block_size(n)
    launch(_upsample_kernel, (cdiv(n, block),), x5, out, n, *x5.shape[1:], *o5.shape[2:], *x5.stride(), *vals,
           MODE=mode, ALIGN=bool(align_corners), COMPUTE=tl.float32 if f32 else tl.float64, CL=channels_last(out),
           BLOCK=block, INT64=needs_int64(n, x5, out), num_warps=_WARPS)
    return out


def _max_taps(size: int, scale: float, cubic: bool) -> int:
    """The most taps of a window along a dim (its support is 1 or 2 pixels, stretched above scale 1)."""
    support = (2.0 if cubic else 1.0) * max(scale, 1.0)
    return min(size, math.floor(2 * support) + 2)


def _upsample_aa(op: str, cubic: bool, input: object, output_size: object, align_corners: bool,
                 scales: Sequence[object], scale_factors: object) -> NBXTensor:
    x = tensor_arg(op, input, "input", dtypes=FLOATING)
    if x.ndim != 4:
        raise ShapeError(f"{op}: expected a 4-D (N, C, H, W) input, got shape {list(x.shape)}")
    if any(s == 0 for s in x.shape[1:]):
        raise ShapeError(f"{op}: input sizes except the batch dim must be non-zero, got {list(x.shape)}")
    (oh, ow), sc = _sizes(op, x, 2, output_size, scales, scale_factors)
    if oh <= 0 or ow <= 0:
        raise ShapeError(f"{op}: output sizes must be positive, got {[oh, ow]} for input {list(x.shape)}")
    out = empty_output((*x.shape[:2], oh, ow), x.dtype, x)
    n = out.numel()
    if n == 0:
        return out
    f32 = x.dtype is not D.float64
    scale = [_align_scale(s, o, f32) if align_corners else _scale(s, o, f, f32)
             for s, o, f in zip(x.shape[2:], (oh, ow), sc, strict=True)]
    block = block_size(n)
    launch(_upsample_aa_kernel, (cdiv(n, block),), x, out, n, *x.shape[1:], oh, ow, *x.stride(),
           _max_taps(x.shape[2], scale[0], cubic), _max_taps(x.shape[3], scale[1], cubic), *scale,
           CUBIC=cubic, COMPUTE=tl.float32 if f32 else tl.float64, CL=channels_last(out), BLOCK=block,
           INT64=needs_int64(n, x, out), num_warps=_WARPS)
    return out


def _split(scales: tuple, scale_factors: object) -> tuple[tuple, object]:
    """The ``.vec`` overload passes scale_factors where the default one passes its first scale."""
    if scale_factors is None and scales and isinstance(scales[0], list | tuple):
        return (None,) * len(scales), scales[0]
    return scales, scale_factors


def upsample_nearest1d(input: NBXTensor, output_size: object = None, scales: object = None,
                       scale_factors: object = None) -> NBXTensor:
    """``aten::upsample_nearest1d`` and ``.vec`` on (N, C, L)."""
    s, f = _split((scales,), scale_factors)
    return _upsample("upsample_nearest1d", 1, 0, input, output_size, s, f)


def upsample_nearest2d(input: NBXTensor, output_size: object = None, scales_h: object = None,
                       scales_w: object = None, scale_factors: object = None) -> NBXTensor:
    """``aten::upsample_nearest2d`` and ``.vec`` on (N, C, H, W)."""
    s, f = _split((scales_h, scales_w), scale_factors)
    return _upsample("upsample_nearest2d", 2, 0, input, output_size, s, f)


def upsample_nearest3d(input: NBXTensor, output_size: object = None, scales_d: object = None,
                       scales_h: object = None, scales_w: object = None, scale_factors: object = None) -> NBXTensor:
    """``aten::upsample_nearest3d`` and ``.vec`` on (N, C, D, H, W)."""
    s, f = _split((scales_d, scales_h, scales_w), scale_factors)
    return _upsample("upsample_nearest3d", 3, 0, input, output_size, s, f)


def _upsample_nearest_exact1d(input: NBXTensor, output_size: object = None, scales: object = None,
                              scale_factors: object = None) -> NBXTensor:
    """``aten::_upsample_nearest_exact1d`` and ``.vec`` on (N, C, L)."""
    s, f = _split((scales,), scale_factors)
    return _upsample("_upsample_nearest_exact1d", 1, 1, input, output_size, s, f)


def _upsample_nearest_exact2d(input: NBXTensor, output_size: object = None, scales_h: object = None,
                              scales_w: object = None, scale_factors: object = None) -> NBXTensor:
    """``aten::_upsample_nearest_exact2d`` and ``.vec`` on (N, C, H, W)."""
    s, f = _split((scales_h, scales_w), scale_factors)
    return _upsample("_upsample_nearest_exact2d", 2, 1, input, output_size, s, f)


def upsample_linear1d(input: NBXTensor, output_size: object = None, align_corners: bool = False,
                      scales: object = None, scale_factors: object = None) -> NBXTensor:
    """``aten::upsample_linear1d`` and ``.vec`` on (N, C, L)."""
    s, f = _split((scales,), scale_factors)
    return _upsample("upsample_linear1d", 1, 2, input, output_size, s, f, align_corners)


def upsample_bilinear2d(input: NBXTensor, output_size: object = None, align_corners: bool = False,
                        scales_h: object = None, scales_w: object = None, scale_factors: object = None) -> NBXTensor:
    """``aten::upsample_bilinear2d`` and ``.vec`` on (N, C, H, W)."""
    s, f = _split((scales_h, scales_w), scale_factors)
    return _upsample("upsample_bilinear2d", 2, 2, input, output_size, s, f, align_corners)


def _upsample_bilinear2d_aa(input: NBXTensor, output_size: object = None, align_corners: bool = False,
                            scales_h: object = None, scales_w: object = None,
                            scale_factors: object = None) -> NBXTensor:
    """``aten::_upsample_bilinear2d_aa`` and ``.vec`` on (N, C, H, W): antialiased bilinear resize."""
    s, f = _split((scales_h, scales_w), scale_factors)
    return _upsample_aa("_upsample_bilinear2d_aa", False, input, output_size, align_corners, s, f)


def _upsample_bicubic2d_aa(input: NBXTensor, output_size: object = None, align_corners: bool = False,
                           scales_h: object = None, scales_w: object = None,
                           scale_factors: object = None) -> NBXTensor:
    """``aten::_upsample_bicubic2d_aa`` and ``.vec`` on (N, C, H, W): antialiased bicubic resize."""
    s, f = _split((scales_h, scales_w), scale_factors)
    return _upsample_aa("_upsample_bicubic2d_aa", True, input, output_size, align_corners, s, f)
