"""Pairwise p-norm distances: aten::_cdist_forward and aten::_pdist_forward.

One tiled kernel computes ``dist(x[i], y[j])`` for a block of rows of ``x`` against a block of
rows of ``y``, walking the feature dim in chunks. The norm is a constexpr: p = 0 (count of
differing features), 1, 2, inf, any other p (``(sum |d|^p)^(1/p)``, computed in float64 so float32
results stay exact to rounding), and torch's matrix-product form of the Euclidean distance
(``sqrt(max(|x|^2 + |y|^2 - 2 x.y, 0))``), which cdist uses when ``compute_mode`` asks for it or,
by default, when either side has more than 25 rows. pdist is the same kernel over ``x`` against
itself, storing only the pairs ``i < j`` at their condensed (row-major upper triangle) index.
torch supports float32 and float64 here, and so does NBX.
"""


from collections.abc import Mapping
from pathlib import Path

import triton
import triton.language as tl
from nbx_core import dtypes as D
from nbx_core.errors import NbxValueError, ShapeError
from nbx_core.ops.copy import fill_
from nbx_core.runtime.kernels.indexing import needs_int64, strided_offsets
from nbx_core.runtime.launch import cdiv, launch, next_pow2
from nbx_core.runtime.pointwise import tl_dtype
from nbx_core.runtime.tuning import Key, Tunable, bucket
from nbx_core.shape import broadcast_shapes, broadcast_strides, coalesce, numel
from nbx_core.tensor import NBXTensor, check_device, empty_tensor
from nbx_core.tensor.args import number_arg, out_arg, same_dtype, tensor_arg

# The norms, as constexprs the kernel can read (``.value`` in Python).
P_ZERO, P_ONE, P_TWO, P_INF, P_GENERAL, P_TWO_MM = (tl.constexpr(i) for i in range(6))
_MM_ROWS = 25  # torch's threshold for the matrix-product Euclidean distance


@triton.jit
def _sqrt(x, ACC: tl.constexpr):
    # Correctly rounded, as torch's: float32 needs sqrt_rn (tl.sqrt may be approximate); float64's
    # tl.sqrt already is.
    if ACC == tl.float64:
        return tl.sqrt(x)
    else:
        return tl.sqrt_rn(x)


@triton.jit
def _dist_kernel(
    x_ptr, y_ptr, out_ptr, P, R, M, bshape, x_bs, y_bs, o_bs, sxp, sxm, syr, sym, sop, sor,
    p: tl.float64, NORM: tl.constexpr, PDIST: tl.constexpr, ACC: tl.constexpr, BNDIM: tl.constexpr,
    INT64: tl.constexpr, BLOCK_P: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_M: tl.constexpr,
):
    batch = tl.program_id(2)
    rp = tl.program_id(0) * BLOCK_P + tl.arange(0, BLOCK_P)
    rr = tl.program_id(1) * BLOCK_R + tl.arange(0, BLOCK_R)
    rk = tl.arange(0, BLOCK_M)
    if INT64:
        batch = batch.to(tl.int64)
        rp = rp.to(tl.int64)
        rr = rr.to(tl.int64)
        rk = rk.to(tl.int64)
    x_base = x_ptr + strided_offsets(batch, bshape, x_bs, BNDIM) + rp[:, None] * sxp
    y_base = y_ptr + strided_offsets(batch, bshape, y_bs, BNDIM) + rr[:, None] * syr
    pmask, rmask = rp < P, rr < R
    if NORM == P_GENERAL:
        acc = tl.zeros((BLOCK_P, BLOCK_R), tl.float64)
    else:
        acc = tl.zeros((BLOCK_P, BLOCK_R), ACC)
    xx = tl.zeros((BLOCK_P,), ACC)
    yy = tl.zeros((BLOCK_R,), ACC)
    for k0 in range(0, M, BLOCK_M):
        kmask = (rk + k0) < M
        x = tl.load(x_base + (rk[None, :] + k0) * sxm, mask=pmask[:, None] & kmask[None, :], other=0).to(ACC)
        y = tl.load(y_base + (rk[None, :] + k0) * sym, mask=rmask[:, None] & kmask[None, :], other=0).to(ACC)
        if NORM == P_TWO_MM:
            acc = tl.dot(x, tl.trans(y), acc, input_precision="ieee")
            xx += tl.sum(x * x, axis=1)
            yy += tl.sum(y * y, axis=1)
        else:
            d = tl.abs(x[:, None, :] - y[None, :, :])
            if NORM == P_ZERO:
                acc += tl.sum((d != 0).to(ACC), axis=2)
            elif NORM == P_ONE:
                acc += tl.sum(d, axis=2)
            elif NORM == P_TWO:
                acc += tl.sum(d * d, axis=2)
            elif NORM == P_INF:
                acc = tl.maximum(acc, tl.max(d, axis=2))
            else:
                # |d|^p as exp2(p log2 |d|): 0 for d = 0 when p > 0, inf when p < 0, like pow.
                d64 = d.to(tl.float64)
                term = tl.exp2(p * tl.log2(d64))
                acc += tl.sum(tl.where(kmask[None, None, :], term, 0.0), axis=2)
    if NORM == P_TWO:
        res = _sqrt(acc, ACC)
    elif NORM == P_TWO_MM:
        res = _sqrt(tl.maximum(xx[:, None] + yy[None, :] - 2 * acc, 0.0), ACC)
    elif NORM == P_GENERAL:
        res = tl.exp2(tl.log2(acc) / p).to(ACC)
    else:
        res = acc
    if PDIST:
        # Row i's pairs (i, j > i) start at i*P - i*(i+1)/2 in the condensed output.
        mask = pmask[:, None] & rmask[None, :] & (rr[None, :] > rp[:, None])
        off = rp[:, None] * P - (rp[:, None] * (rp[:, None] + 1)) // 2 + rr[None, :] - rp[:, None] - 1
        off = tl.where(mask, off, 0)
    else:
        mask = pmask[:, None] & rmask[None, :]
        off = strided_offsets(batch, bshape, o_bs, BNDIM) + rp[:, None] * sop + rr[None, :] * sor
    tl.store(out_ptr + off, res.to(out_ptr.dtype.element_ty), mask=mask)


def _norm(p: float, use_mm: bool) -> int:
    if p == 0:
        return P_ZERO.value
    if p == 1:
        return P_ONE.value
    if p == 2:
        return (P_TWO_MM if use_mm else P_TWO).value
    if p == float("inf"):
        return P_INF.value
    return P_GENERAL.value


_NORM_NAMES = ("p0", "p1", "p2", "inf", "p", "mm")


def _gpu_blocks(norm: int, size: int, p: int, r: int, m: int) -> dict[str, int]:
    # The direct norms hold a P x R x M block in registers: small tiles; the matrix-product form's
    # tl.dot takes 64 x 64 outputs, 32 features a step.
    if norm == P_TWO_MM.value:
        return {"BLOCK_P": 64, "BLOCK_R": 64, "BLOCK_M": 32, "num_warps": 4}
    return {"BLOCK_P": 32, "BLOCK_R": 32, "BLOCK_M": 8, "num_warps": 4}


def _interpreter_blocks(norm: int, size: int, p: int, r: int, m: int) -> dict[str, int]:
    # Few programs: each side up to 32 (64 for the matrix-product form), at least 16 as tl.dot needs.
    side = 64 if norm == P_TWO_MM.value else 32
    return {"BLOCK_P": min(max(16, next_pow2(p)), side), "BLOCK_R": min(max(16, next_pow2(r)), side),
            "BLOCK_M": min(max(16, next_pow2(m)), side), "num_warps": 1}


DISTANCE = Tunable(
    "linalg", "distance", {"BLOCK_P": "pow2", "BLOCK_R": "pow2", "BLOCK_M": "pow2", "num_warps": "pow2"},
    key=lambda norm, size, p, r, m: Key({"norm": _NORM_NAMES[norm], "itemsize": size, "P": bucket(p),
                                         "R": bucket(r), "M": bucket(m)}),
    rule=_gpu_blocks, interpreter=_interpreter_blocks, tables=Path(__file__).with_name("configs"))
"""The distance kernel's tiles: BLOCK_P rows of x by BLOCK_R rows of y, BLOCK_M features a step, and
its warps. Arguments: the norm (P_ZERO ... P_TWO_MM, as an int), the itemsize, and P, R and M."""


DTYPES = frozenset({D.float32, D.float64})
"""What torch's distance kernels take."""


def _cdist_forward(x1: NBXTensor, x2: NBXTensor, p: float, compute_mode: int | None = None, *,
                   out: NBXTensor | None = None) -> NBXTensor:
    """aten::_cdist_forward: p-norm distances between rows of x1 (*B, P, M) and x2 (*B, R, M) → (*B, P, R)."""
    op = "aten::_cdist_forward"
    tensor_arg(op, x1, "x1", dtypes=DTYPES, min_ndim=2)
    tensor_arg(op, x2, "x2", dtypes=DTYPES, min_ndim=2)
    p = float(number_arg(op, p, "p"))
    same_dtype(op, ("x1", x1), ("x2", x2))
    if x1.shape[-1] != x2.shape[-1]:
        raise ShapeError(f"{op}: x1 and x2 must have the same number of columns, got {x1.shape[-1]} and "
                         f"{x2.shape[-1]}")
    if p < 0:
        raise NbxValueError(f"{op}: cdist only supports non-negative p values, got p={p}")
    if compute_mode not in (None, 0, 1, 2):
        raise NbxValueError(f"{op}: compute_mode must be None, 0, 1 or 2 (possible modes), got {compute_mode}")
    device = check_device(op, x1, x2)
    batch = broadcast_shapes(op, x1.shape[:-2], x2.shape[:-2])
    rows1, rows2, m = x1.shape[-2], x2.shape[-2], x1.shape[-1]
    shape = (*batch, rows1, rows2)
    res = out_arg(op, out, shape, x1.dtype)
    if res is None:
        res = empty_tensor(shape, x1.dtype, device)
    if numel(shape) == 0:
        return res
    if m == 0:
        return fill_(res, 0.0)
    use_mm = compute_mode == 1 or (compute_mode in (None, 0) and (rows1 > _MM_ROWS or rows2 > _MM_ROWS))
    # Triton 3.6 cannot compile a float64 tl.dot for sm_90: float64 takes the direct form (same values
    # up to float64 rounding).
    return cdist_into(res, x1, x2, p, _norm(p, use_mm and x1.dtype is not D.float64))


def cdist_into(res: NBXTensor, x1: NBXTensor, x2: NBXTensor, p: float, norm: int,
               config: Mapping[str, int] | None = None) -> NBXTensor:
    """Write the distances of the checked ``x1`` (*B1, P, M) and ``x2`` (*B2, R, M), M > 0, in ``norm``
    (P_ZERO ... P_TWO_MM, as an int) into ``res`` (*B, P, R), not empty, and return it; ``config``
    replaces the lookup of :data:`DISTANCE`."""
    rows1, rows2, m = x1.shape[-2], x2.shape[-2], x1.shape[-1]
    batch = tuple(res.shape[:-2])
    s1 = broadcast_strides(x1.shape, x1.stride(), (*batch, rows1, m))
    s2 = broadcast_strides(x2.shape, x2.stride(), (*batch, rows2, m))
    so = res.stride()
    nb = len(batch)
    bshape, (b1, b2, bo) = coalesce(batch, s1[:nb], s2[:nb], so[:nb])
    cfg = DISTANCE.choose(config, norm, x1.dtype.itemsize, rows1, rows2, m)
    bp, br = cfg["BLOCK_P"], cfg["BLOCK_R"]
    launch(_dist_kernel, (cdiv(rows1, bp), cdiv(rows2, br), numel(batch)), x1, x2, res, rows1, rows2, m,
           bshape, b1, b2, bo, s1[-2], s1[-1], s2[-2], s2[-1], so[-2], so[-1], p,
           NORM=norm, PDIST=False, ACC=tl_dtype(x1.dtype), BNDIM=len(bshape),
           INT64=needs_int64(res.numel(), x1, x2, res), BLOCK_P=bp, BLOCK_R=br, BLOCK_M=cfg["BLOCK_M"],
           num_warps=cfg["num_warps"])
    return res


def _pdist_forward(self: NBXTensor, p: float = 2.0, *, out: NBXTensor | None = None) -> NBXTensor:
    """aten::_pdist_forward: distances between all row pairs i < j of a contiguous (N, M) input."""
    op = "aten::_pdist_forward"
    tensor_arg(op, self, "self", dtypes=DTYPES, ndim=2)
    p = float(number_arg(op, p, "p"))
    if not self.is_contiguous():
        raise NbxValueError(f"{op}: _pdist_forward requires a contiguous input: call .contiguous() first")
    n, m = self.shape
    shape = (n * (n - 1) // 2,)
    if out is not None and (out.shape != shape or out.dtype is not self.dtype or not out.is_contiguous()):
        raise ShapeError(f"{op}: out must be a contiguous {self.dtype} tensor of shape {shape}")
    res = out if out is not None else empty_tensor(shape, self.dtype, self.device)
    if shape[0] == 0:
        return res
    if m == 0:
        return fill_(res, 0.0)
    norm = _norm(p, False)
    cfg = DISTANCE.lookup(norm, self.dtype.itemsize, n, n, m)
    bp, br = cfg["BLOCK_P"], cfg["BLOCK_R"]
    st = self.stride()
    launch(_dist_kernel, (cdiv(n, bp), cdiv(n, br), 1), self, self, res, n, n, m,
           (1,), (0,), (0,), (0,), st[0], st[1], st[0], st[1], 0, 0, p,
           NORM=norm, PDIST=True, ACC=tl_dtype(self.dtype), BNDIM=1, INT64=needs_int64(n * n, self, res),
           BLOCK_P=bp, BLOCK_R=br, BLOCK_M=cfg["BLOCK_M"], num_warps=cfg["num_warps"])
    return res
