"""``aten::grid_sampler_2d``: sample an (N, C, H, W) input at the (x, y) points of an (N, OH, OW, 2) grid;
``aten::grid_sampler_3d``: an (N, C, D, H, W) input at the (x, y, z) points of an (N, OD, OH, OW, 3) grid.

Interpolation 0 bilinear (trilinear in 3-D: the bilinear samples of the two planes around z,
weighted along z), 1 nearest (round half to even, as ``nearbyint``), 2 bicubic (A = -0.75; 2-D
only, as in torch); padding 0 zeros, 1 border (clamp), 2 reflection (about the corner pixels'
centres with align_corners, else about their edges), each with torch's formulas in GridSampler.h.
One output element per lane; the math runs in float32 (float64 for float64 inputs). The output is
contiguous, as torch's.
"""

import triton
import triton.language as tl

from nbx_core.errors import NbxValueError, ShapeError
from nbx_core.runtime.kernels.indexing import block_indices, needs_int64
from nbx_core.runtime.launch import block_size, cdiv, launch
from nbx_core.tensor import NBXTensor, check_device, empty_tensor
from nbx_core.tensor.args import FLOATING, same_dtype, tensor_arg

from .pooling import out_coords

_WARPS = 4


@triton.jit
def _unnormalize(coord, size, ALIGN: tl.constexpr):
    if ALIGN:
        return (coord + 1.0) / 2.0 * (size - 1)
    else:
        return ((coord + 1.0) * size - 1.0) / 2.0


@triton.jit
def _reflect(x, twice_low, twice_high):
    # Reflect into [low, high] (given doubled, to stay integral), as torch's reflect_coordinates.
    mn = twice_low / 2.0
    span = (twice_high - twice_low) / 2.0
    safe = tl.where(span > 0, span, 1.0)
    x = tl.abs(x - mn)
    flips = tl.floor(x / safe)
    extra = x - flips * safe
    even = flips - 2.0 * tl.floor(flips / 2.0) == 0
    r = tl.where(even, extra + mn, span - extra + mn)
    return tl.where(span > 0, r, 0.0)


@triton.jit
def _pad_coord(x, size, PAD: tl.constexpr, ALIGN: tl.constexpr):
    """torch's compute_coordinates: identity (zeros), clamp (border), reflect then clamp (reflection)."""
    if PAD == 1:
        x = tl.minimum(tl.maximum(x, 0.0), size - 1.0)
    elif PAD == 2:
        if ALIGN:
            x = _reflect(x, 0.0, 2.0 * (size - 1))
        else:
            x = _reflect(x, -1.0, 2.0 * size - 1.0)
        x = tl.minimum(tl.maximum(x, 0.0), size - 1.0)
    return x


@triton.jit
def _tap(base, ix, iy, H, W, sxh, sxw, mask, COMPUTE: tl.constexpr):
    """The input at integer (ix, iy) (float tensors), or 0 outside the image."""
    ok = mask & (ix >= 0) & (ix < W) & (iy >= 0) & (iy < H)
    xi = tl.where(ok, ix, 0).to(tl.int32)
    yi = tl.where(ok, iy, 0).to(tl.int32)
    return tl.load(base + yi * sxh + xi * sxw, mask=ok, other=0.0).to(COMPUTE)


@triton.jit
def _plane(base, iz, D, sxd, mask, INT64: tl.constexpr):
    """The start of plane ``iz`` (a float) of a volume, and ``mask`` cleared where it is outside."""
    ok = mask & (iz >= 0) & (iz < D)
    zi = tl.where(ok, iz, 0).to(tl.int32)
    if INT64:
        zi = zi.to(tl.int64)
    return base + zi * sxd, ok


@triton.jit
def _bilinear(base, ix, iy, H, W, sxh, sxw, mask, COMPUTE: tl.constexpr):
    """torch's bilinear sample of the image at ``base`` at (ix, iy): its four corners, 0 outside."""
    x0 = tl.floor(ix)
    y0 = tl.floor(iy)
    x1 = x0 + 1.0
    y1 = y0 + 1.0
    return (_tap(base, x0, y0, H, W, sxh, sxw, mask, COMPUTE) * ((x1 - ix) * (y1 - iy))
            + _tap(base, x1, y0, H, W, sxh, sxw, mask, COMPUTE) * ((ix - x0) * (y1 - iy))
            + _tap(base, x0, y1, H, W, sxh, sxw, mask, COMPUTE) * ((x1 - ix) * (iy - y0))
            + _tap(base, x1, y1, H, W, sxh, sxw, mask, COMPUTE) * ((ix - x0) * (iy - y0)))


@triton.jit
def _nearbyint(v):
    """``v`` rounded half to even, as torch's nearest mode (``std::nearbyint``)."""
    f = tl.floor(v)
    d = v - f
    odd = f - 2.0 * tl.floor(f / 2.0) != 0
    return f + tl.where((d > 0.5) | ((d == 0.5) & odd), 1.0, 0.0)


@triton.jit
def _cubic_weights(t):
    a = -0.75
    x0 = t + 1.0
    x3 = 2.0 - t
    x2 = 1.0 - t
    w0 = ((a * x0 - 5.0 * a) * x0 + 8.0 * a) * x0 - 4.0 * a
    w1 = ((a + 2.0) * t - (a + 3.0)) * t * t + 1.0
    w2 = ((a + 2.0) * x2 - (a + 3.0)) * x2 * x2 + 1.0
    w3 = ((a * x3 - 5.0 * a) * x3 + 8.0 * a) * x3 - 4.0 * a
    return w0, w1, w2, w3


@triton.jit
def _cubic_row(base, x0, y, H, W, sxh, sxw, wx0, wx1, wx2, wx3, mask,
               PAD: tl.constexpr, ALIGN: tl.constexpr, COMPUTE: tl.constexpr):
    # Each tap is padded on its own and truncated to an int (torch's get_value_bounded).
    yy = _pad_coord(y, H, PAD, ALIGN).to(tl.int32).to(COMPUTE)
    v0 = _tap(base, _pad_coord(x0 - 1.0, W, PAD, ALIGN).to(tl.int32).to(COMPUTE), yy, H, W, sxh, sxw, mask, COMPUTE)
    v1 = _tap(base, _pad_coord(x0, W, PAD, ALIGN).to(tl.int32).to(COMPUTE), yy, H, W, sxh, sxw, mask, COMPUTE)
    v2 = _tap(base, _pad_coord(x0 + 1.0, W, PAD, ALIGN).to(tl.int32).to(COMPUTE), yy, H, W, sxh, sxw, mask, COMPUTE)
    v3 = _tap(base, _pad_coord(x0 + 2.0, W, PAD, ALIGN).to(tl.int32).to(COMPUTE), yy, H, W, sxh, sxw, mask, COMPUTE)
    return v0 * wx0 + v1 * wx1 + v2 * wx2 + v3 * wx3


@triton.jit
def _grid_sample_kernel(x_ptr, g_ptr, out_ptr, n, C, H, W, OH, OW, sxn, sxc, sxh, sxw, sgn, sgh, sgw, sgk,
                        INTERP: tl.constexpr, PAD: tl.constexpr, ALIGN: tl.constexpr, COMPUTE: tl.constexpr,
                        BLOCK: tl.constexpr, INT64: tl.constexpr):
    idx, mask = block_indices(n, BLOCK, INT64)
    ow = idx % OW
    oh = (idx // OW) % OH
    c = (idx // (OW * OH)) % C
    nb = idx // (OW * OH * C)
    g_off = nb * sgn + oh * sgh + ow * sgw
    gx = tl.load(g_ptr + g_off, mask=mask, other=0.0).to(COMPUTE)
    gy = tl.load(g_ptr + g_off + sgk, mask=mask, other=0.0).to(COMPUTE)
    base = x_ptr + nb * sxn + c * sxc
    ix = _unnormalize(gx, W, ALIGN)
    iy = _unnormalize(gy, H, ALIGN)
    if INTERP == 2:
        x0 = tl.floor(ix)
        y0 = tl.floor(iy)
        wx0, wx1, wx2, wx3 = _cubic_weights(ix - x0)
        wy0, wy1, wy2, wy3 = _cubic_weights(iy - y0)
        r0 = _cubic_row(base, x0, y0 - 1.0, H, W, sxh, sxw, wx0, wx1, wx2, wx3, mask, PAD, ALIGN, COMPUTE)
        r1 = _cubic_row(base, x0, y0, H, W, sxh, sxw, wx0, wx1, wx2, wx3, mask, PAD, ALIGN, COMPUTE)
        r2 = _cubic_row(base, x0, y0 + 1.0, H, W, sxh, sxw, wx0, wx1, wx2, wx3, mask, PAD, ALIGN, COMPUTE)
        r3 = _cubic_row(base, x0, y0 + 2.0, H, W, sxh, sxw, wx0, wx1, wx2, wx3, mask, PAD, ALIGN, COMPUTE)
        res = r0 * wy0 + r1 * wy1 + r2 * wy2 + r3 * wy3
    else:
        ix = _pad_coord(ix, W, PAD, ALIGN)
        iy = _pad_coord(iy, H, PAD, ALIGN)
        if INTERP == 0:
            res = _bilinear(base, ix, iy, H, W, sxh, sxw, mask, COMPUTE)
        else:
            res = _tap(base, _nearbyint(ix), _nearbyint(iy), H, W, sxh, sxw, mask, COMPUTE)
    tl.store(out_ptr + idx, res.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _grid_sample_3d_kernel(x_ptr, g_ptr, out_ptr, n, C, D, H, W, OD, OH, OW, sxn, sxc, sxd, sxh, sxw,
                           sgn, sgd, sgh, sgw, sgk,
                           INTERP: tl.constexpr, PAD: tl.constexpr, ALIGN: tl.constexpr, COMPUTE: tl.constexpr,
                           BLOCK: tl.constexpr, INT64: tl.constexpr):
    idx, mask = block_indices(n, BLOCK, INT64)
    nb, c, od, oh, ow = out_coords(idx, C, OD, OH, OW, False)
    g_off = nb * sgn + od * sgd + oh * sgh + ow * sgw
    gx = tl.load(g_ptr + g_off, mask=mask, other=0.0).to(COMPUTE)
    gy = tl.load(g_ptr + g_off + sgk, mask=mask, other=0.0).to(COMPUTE)
    gz = tl.load(g_ptr + g_off + 2 * sgk, mask=mask, other=0.0).to(COMPUTE)
    base = x_ptr + nb * sxn + c * sxc
    ix = _pad_coord(_unnormalize(gx, W, ALIGN), W, PAD, ALIGN)
    iy = _pad_coord(_unnormalize(gy, H, ALIGN), H, PAD, ALIGN)
    iz = _pad_coord(_unnormalize(gz, D, ALIGN), D, PAD, ALIGN)
    if INTERP == 0:
        z0 = tl.floor(iz)
        z1 = z0 + 1.0
        base0, ok0 = _plane(base, z0, D, sxd, mask, INT64)
        base1, ok1 = _plane(base, z1, D, sxd, mask, INT64)
        res = (_bilinear(base0, ix, iy, H, W, sxh, sxw, ok0, COMPUTE) * (z1 - iz)
               + _bilinear(base1, ix, iy, H, W, sxh, sxw, ok1, COMPUTE) * (iz - z0))
    else:
        base_z, ok_z = _plane(base, _nearbyint(iz), D, sxd, mask, INT64)
        res = _tap(base_z, _nearbyint(ix), _nearbyint(iy), H, W, sxh, sxw, ok_z, COMPUTE)
    tl.store(out_ptr + idx, res.to(out_ptr.dtype.element_ty), mask=mask)


def _check(op: str, input: object, grid: object, nsp: int, interpolation_mode: object,
           padding_mode: object) -> tuple[NBXTensor, NBXTensor]:
    """The input and grid of a grid sampler over ``nsp`` spatial dims, and its modes, checked."""
    x = tensor_arg(op, input, "input", dtypes=FLOATING)
    g = tensor_arg(op, grid, "grid", dtypes=FLOATING)
    check_device(op, x, g)
    same_dtype(op, ("input", x), ("grid", g))
    nd = nsp + 2
    if x.ndim != nd or g.ndim != nd or g.shape[-1] != nsp:
        out = ", ".join(f"{d}_out" for d in "DHW"[3 - nsp:])
        raise ShapeError(f"{op}: expected a {nd}-D input and an (N, {out}, {nsp}) grid, got {list(x.shape)} and "
                         f"{list(g.shape)}")
    if x.shape[0] != g.shape[0]:
        raise ShapeError(f"{op}: grid batch {g.shape[0]} must equal input batch {x.shape[0]}")
    if any(s == 0 for s in x.shape[2:]):
        raise ShapeError(f"{op}: input spatial sizes must be non-zero, got {list(x.shape)}")
    for v, arg in ((interpolation_mode, "interpolation_mode"), (padding_mode, "padding_mode")):
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= 2:
            raise NbxValueError(f"{op}: {arg} must be 0, 1 or 2, got {v!r}")
    return x, g


def _launch(kernel: object, x: NBXTensor, g: NBXTensor, interpolation_mode: int, padding_mode: int,
            align_corners: bool) -> NBXTensor:
    """Sample ``x`` at ``g``'s points with ``kernel`` into a new contiguous (N, C, *grid's spatial) result."""
    out = empty_tensor((*x.shape[:2], *g.shape[1:-1]), x.dtype, x.device)
    n = out.numel()
    block = block_size(n, gpu=512)
    compute = tl.float64 if x.dtype.name == "float64" else tl.float32
    launch(kernel, (cdiv(n, block),), x, g, out, n, *x.shape[1:], *out.shape[2:], *x.stride(), *g.stride(),
           INTERP=interpolation_mode, PAD=padding_mode, ALIGN=bool(align_corners), COMPUTE=compute,
           BLOCK=block, INT64=needs_int64(n, x, g, out), num_warps=_WARPS)
    return out


def grid_sampler_2d(input: NBXTensor, grid: NBXTensor, interpolation_mode: int, padding_mode: int,
                    align_corners: bool) -> NBXTensor:
    """``aten::grid_sampler_2d`` (``F.grid_sample`` on 4-D inputs)."""
    x, g = _check("grid_sampler_2d", input, grid, 2, interpolation_mode, padding_mode)
    return _launch(_grid_sample_kernel, x, g, interpolation_mode, padding_mode, align_corners)


def grid_sampler_3d(input: NBXTensor, grid: NBXTensor, interpolation_mode: int, padding_mode: int,
                    align_corners: bool) -> NBXTensor:
    """``aten::grid_sampler_3d`` (``F.grid_sample`` on 5-D inputs): trilinear or nearest sampling."""
    op = "grid_sampler_3d"
    x, g = _check(op, input, grid, 3, interpolation_mode, padding_mode)
    if interpolation_mode == 2:
        raise NbxValueError(f"{op}: interpolation_mode 2 (bicubic) takes 4-D inputs only, as in torch; for a 5-D "
                            "input use 0 (mode='bilinear', trilinear here) or 1 (mode='nearest')")
    return _launch(_grid_sample_3d_kernel, x, g, interpolation_mode, padding_mode, align_corners)
