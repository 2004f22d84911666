"""``aten::im2col``, ``aten::col2im`` and ``aten::unfold_backward``: gathers, one program per output block.

col2im and unfold_backward are sums over the patches that cover an output element; each output
element gathers its own contributions (no atomics), so results are deterministic. Inputs are read
through their strides; outputs are contiguous, as torch returns them. Sums of half types run in float32.
"""

import triton
import triton.language as tl

from nbx_core.errors import NbxValueError, ShapeError
from nbx_core.ops.copy import contiguous
from nbx_core.ops.views import squeeze, unsqueeze
from nbx_core.runtime.kernels.indexing import block_indices, needs_int64
from nbx_core.runtime.launch import block_size, cdiv, launch
from nbx_core.shape import wrap_dim
from nbx_core.tensor import NBXTensor, empty_tensor
from nbx_core.tensor.args import BOOL, FLOATING, int_arg, int_list, non_negative, positive, tensor_arg

_WARPS = 4


@triton.jit
def _im2col_kernel(x_ptr, out_ptr, n, C, H, W, KH, KW, OH, OW, sxn, sxc, sxh, sxw,
                   stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, BLOCK: tl.constexpr, INT64: tl.constexpr):
    idx, mask = block_indices(n, BLOCK, INT64)
    L = OH * OW
    l_ = idx % L
    row = (idx // L) % (C * KH * KW)
    nb = idx // (L * C * KH * KW)
    c = row // (KH * KW)
    ki = (row // KW) % KH
    kj = row % KW
    ih = (l_ // OW) * stride_h - pad_h + ki * dil_h
    iw = (l_ % OW) * stride_w - pad_w + kj * dil_w
    ok = mask & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)
    v = tl.load(x_ptr + nb * sxn + c * sxc + ih * sxh + iw * sxw, mask=ok, other=0)
    tl.store(out_ptr + idx, v, mask=mask)


@triton.jit
def _col2im_kernel(col_ptr, out_ptr, n, C, H, W, KH, KW, LH, LW, scn, scr, scl,
                   stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, BLOCK: tl.constexpr, INT64: tl.constexpr):
    idx, mask = block_indices(n, BLOCK, INT64)
    x = idx % W
    y = (idx // W) % H
    c = (idx // (W * H)) % C
    nb = idx // (W * H * C)
    acc = tl.zeros([BLOCK], dtype=tl.float64 if out_ptr.dtype.element_ty == tl.float64 else tl.float32)
    for ki in range(0, KH):
        th = y + pad_h - ki * dil_h
        bh = tl.where(th >= 0, th, 0) // stride_h
        ok_h = (th >= 0) & (bh * stride_h == th) & (bh < LH)
        for kj in range(0, KW):
            tw = x + pad_w - kj * dil_w
            bw = tl.where(tw >= 0, tw, 0) // stride_w
            ok = mask & ok_h & (tw >= 0) & (bw * stride_w == tw) & (bw < LW)
            off = nb * scn + ((c * KH + ki) * KW + kj) * scr + (bh * LW + bw) * scl
            acc += tl.load(col_ptr + off, mask=ok, other=0.0).to(acc.dtype)
    tl.store(out_ptr + idx, acc.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _unfold_backward_kernel(g_ptr, out_ptr, n, L, INNER, NWIN, SIZE, STEP, TAPS, sgo, sgw, sgi, sgj,
                            BLOCK: tl.constexpr, INT64: tl.constexpr):
    idx, mask = block_indices(n, BLOCK, INT64)
    inner = idx % INNER
    i = (idx // INNER) % L
    outer = idx // (INNER * L)
    acc = tl.zeros([BLOCK], dtype=tl.float64 if out_ptr.dtype.element_ty == tl.float64 else tl.float32)
    # Windows w covering i have w*STEP <= i < w*STEP + SIZE; walk them from the last one back.
    for t in range(0, TAPS):
        w = i // STEP - t
        j = i - w * STEP
        ok = mask & (w >= 0) & (w < NWIN) & (j < SIZE)
        off = outer * sgo + w * sgw + inner * sgi + j * sgj
        acc += tl.load(g_ptr + off, mask=ok, other=0.0).to(acc.dtype)
    tl.store(out_ptr + idx, acc.to(out_ptr.dtype.element_ty), mask=mask)


def _params(op: str, kernel_size: object, dilation: object, padding: object, stride: object) -> tuple:
    ks, dil = int_list(op, kernel_size, 2, "kernel_size"), int_list(op, dilation, 2, "dilation")
    pad, st = int_list(op, padding, 2, "padding"), int_list(op, stride, 2, "stride")
    positive(op, ks, "kernel_size")
    positive(op, dil, "dilation")
    positive(op, st, "stride")
    non_negative(op, pad, "padding")
    return ks, dil, pad, st


def _blocks(op: str, size: tuple[int, int], ks: tuple, dil: tuple, pad: tuple, st: tuple) -> tuple[int, int]:
    lh = (size[0] + 2 * pad[0] - dil[0] * (ks[0] - 1) - 1) // st[0] + 1
    lw = (size[1] + 2 * pad[1] - dil[1] * (ks[1] - 1) - 1) // st[1] + 1
    if lh < 1 or lw < 1:
        raise ShapeError(f"{op}: kernel_size {list(ks)} with dilation {list(dil)} does not fit the padded size "
                         f"({size[0] + 2 * pad[0]}, {size[1] + 2 * pad[1]}): the number of blocks ({lh}, {lw}) "
                         "must be positive")
    return lh, lw


def im2col(self: NBXTensor, kernel_size: list[int], dilation: list[int], padding: list[int],
           stride: list[int]) -> NBXTensor:
    """``aten::im2col`` (``F.unfold``): (N, C, H, W) -> (N, C*kH*kW, L)."""
    op = "im2col"
    x = tensor_arg(op, self, "input", dtypes=FLOATING | BOOL)
    if x.ndim not in (3, 4) or any(s == 0 for s in x.shape[-3:]):
        raise ShapeError(f"{op}: expected a non-empty 3-D or 4-D input (batch dim may be 0), got {list(x.shape)}")
    ks, dil, pad, st = _params(op, kernel_size, dilation, padding, stride)
    batched = x.ndim == 4
    x = x if batched else unsqueeze(x, 0)
    nb, c, h, w = x.shape
    lh, lw = _blocks(op, (h, w), ks, dil, pad, st)
    out = empty_tensor((nb, c * ks[0] * ks[1], lh * lw), x.dtype, x.device)
    n = out.numel()
    block = block_size(n)
    launch(_im2col_kernel, (cdiv(n, block),), x, out, n, c, h, w, ks[0], ks[1], lh, lw, *x.stride(),
           st[0], st[1], pad[0], pad[1], dil[0], dil[1], BLOCK=block, INT64=needs_int64(n, x, out),
           num_warps=_WARPS)
    return out if batched else squeeze(out, 0)


def col2im(self: NBXTensor, output_size: list[int], kernel_size: list[int], dilation: list[int],
           padding: list[int], stride: list[int]) -> NBXTensor:
    """``aten::col2im`` (``F.fold``): (N, C*kH*kW, L) -> (N, C, H, W), summing overlapping patches."""
    op = "col2im"
    col = tensor_arg(op, self, "input", dtypes=FLOATING)
    if col.ndim not in (2, 3) or any(s == 0 for s in col.shape[-2:]):
        raise ShapeError(f"{op}: expected a non-empty 2-D or 3-D input (batch dim may be 0), got {list(col.shape)}")
    size = int_list(op, output_size, 2, "output_size")
    positive(op, size, "output_size")
    ks, dil, pad, st = _params(op, kernel_size, dilation, padding, stride)
    batched = col.ndim == 3
    col = col if batched else unsqueeze(col, 0)
    nb, rows, length = col.shape
    if rows % (ks[0] * ks[1]):
        raise ShapeError(f"{op}: input.size(1)={rows} must be divisible by the product of kernel_size "
                         f"{list(ks)} = {ks[0] * ks[1]}")
    lh, lw = _blocks(op, size, ks, dil, pad, st)
    if lh * lw != length:
        raise ShapeError(f"{op}: input.size(2)={length} must match the number of blocks {lh}*{lw}={lh * lw} for "
                         f"output_size {list(size)}, kernel_size {list(ks)}, dilation {list(dil)}, padding "
                         f"{list(pad)} and stride {list(st)}")
    c = rows // (ks[0] * ks[1])
    out = empty_tensor((nb, c, *size), col.dtype, col.device)
    n = out.numel()
    block = block_size(n)
    launch(_col2im_kernel, (cdiv(n, block),), col, out, n, c, size[0], size[1], ks[0], ks[1], lh, lw,
           *col.stride(), st[0], st[1], pad[0], pad[1], dil[0], dil[1], BLOCK=block,
           INT64=needs_int64(n, col, out), num_warps=_WARPS)
    return out if batched else squeeze(out, 0)


def unfold_backward(grad_in: NBXTensor, input_sizes: list[int], dim: int, size: int, step: int) -> NBXTensor:
    """``aten::unfold_backward``: the gradient of ``Tensor.unfold(dim, size, step)``, summing overlaps."""
    op = "unfold_backward"
    g = tensor_arg(op, grad_in, "grad_in", dtypes=FLOATING)
    sizes = tuple(int_list(op, list(input_sizes), len(input_sizes), "input_sizes")) if len(input_sizes) else ()
    non_negative(op, sizes, "input_sizes")
    for v, arg in ((dim, "dim"), (size, "size"), (step, "step")):
        int_arg(op, v, arg)
    if step <= 0 or size < 0:
        raise NbxValueError(f"{op}: step must be positive and size non-negative, got step={step}, size={size}")
    nd = max(len(sizes), 1)
    d = wrap_dim(op, dim, nd)
    full = sizes if sizes else (1,)
    length = full[d]
    if size > length:
        raise ShapeError(f"{op}: size {size} is larger than input_sizes[{d}] = {length}")
    nwin = (length - size) // step + 1
    expect = (*full[:d], nwin, *full[d + 1:], size) if sizes else (size,)
    if tuple(g.shape) != expect:
        raise ShapeError(f"{op}: grad_in of shape {list(g.shape)} does not match the unfold of input_sizes "
                         f"{list(sizes)} (dim {d}, size {size}, step {step}): expected {list(expect)}")
    out = empty_tensor(sizes, g.dtype, g.device)
    n = out.numel()
    if n == 0:
        return out
    inner = 1
    for s in full[d + 1:]:
        inner *= s
    # Contiguous grad_in indexes as (outer, window, inner, j) with these strides.
    g = contiguous(g)
    block = block_size(n)
    launch(_unfold_backward_kernel, (cdiv(n, block),), g, out, n, length, inner, nwin, size, step,
           -(-size // step), nwin * inner * size, inner * size, size, 1, BLOCK=block,
           INT64=needs_int64(n, g, out), num_warps=_WARPS)
    return out
