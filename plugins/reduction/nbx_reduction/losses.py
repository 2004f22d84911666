"""cross_entropy_loss, nll_loss and mse_loss.

Cross-entropy is one fused pass per row (a row is one sample, or one spatial position of a
(N, C, d1, ...) input): an online softmax keeps the running max and the rescaled sum of exps over
the classes while the same loads feed the label-smoothing and class-probability sums, so the
log-softmax is never written. Per-row losses (and target weights, for ``mean``) then go through
the reduction engine. Target indices outside [0, C) that are not ``ignore_index`` are masked in the
kernel (no out-of-bounds read) and flagged; the flag is read back after every kernel of the op is
queued and raises IndexOutOfRangeError.
"""

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import triton
import triton.language as tl

from nbx_core import dtypes as D
from nbx_core.errors import IndexOutOfRangeError, NbxTypeError, NbxValueError, ShapeError
from nbx_core.runtime import checks
from nbx_core.runtime.kernels.copy import cast_to
from nbx_core.runtime.kernels.indexing import needs_int64
from nbx_core.runtime.launch import cdiv, launch, next_pow2
from nbx_core.runtime.pointwise import pointwise, tl_dtype
from nbx_core.runtime.tuning import Key, Tunable, bucket
from nbx_core.tensor import NBXTensor, check_device, empty_tensor
from nbx_core.tensor.args import FLOATING, check_dtype, tensor_arg

from . import engine as E
from .rules import DTYPES

NLL, CLASS_INDEX, CLASS_PROBS = 0, 1, 2
_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}
_MODES = {NLL: "nll", CLASS_INDEX: "index", CLASS_PROBS: "probs"}


def _tiles(mode: int, rows: int, classes: int, cap: int) -> dict[str, int]:
    # A load holds at most `cap` elements: up to `cap` classes and as many rows as fit, at most 64
    # (nll reads one class a row: up to 1024 rows); loads of 2048 elements or more get 8 warps.
    bc = 1 if mode == NLL else min(next_pow2(classes), cap)
    bm = min(next_pow2(rows), max(cap // bc, 1), 1024 if mode == NLL else 64)
    return {"BLOCK_M": bm, "BLOCK_C": bc, "num_warps": 8 if bm * bc >= 2048 else 4}


XENT = Tunable(
    "reduction",
    "xent",
    {"BLOCK_M": "pow2", "BLOCK_C": "pow2", "num_warps": "pow2"},
    key=lambda mode, size, rows, classes: Key(
        {"mode": _MODES[mode], "itemsize": size, "M": bucket(rows), "C": bucket(classes)}
    ),
    rule=lambda mode, size, rows, classes: _tiles(mode, rows, classes, 4096),
    interpreter=lambda mode, size, rows, classes: _tiles(mode, rows, classes, 1024),
    tables=Path(__file__).with_name("configs"),
)
"""The loss kernel's tiles: BLOCK_M rows by BLOCK_C classes a load, and its warps. Arguments: the
mode (NLL, CLASS_INDEX or CLASS_PROBS), the input's itemsize, the rows and the classes."""


@triton.jit
def _xent_kernel(
    x_ptr,
    t_ptr,
    w_ptr,
    loss_ptr,
    wt_ptr,
    flag_ptr,
    M,
    C,
    I,
    so,
    sc,
    si,
    to,
    tc,
    ti,
    sw,
    ignore_index,
    eps: tl.float64,
    MODE: tl.constexpr,
    ACC: tl.constexpr,
    WEIGHTED: tl.constexpr,
    SMOOTH: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_C: tl.constexpr,
    INT64: tl.constexpr,
):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cr = tl.arange(0, BLOCK_C)
    if INT64:
        rows = rows.to(tl.int64)
        cr = cr.to(tl.int64)
    ok = rows < M
    base = (rows // I) * so + (rows % I) * si
    tbase = (rows // I) * to + (rows % I) * ti
    if MODE != 2:
        t = tl.load(t_ptr + tbase, mask=ok, other=0).to(tl.int64)
        keep = ok & (t != ignore_index)
        bad = keep & ((t < 0) | (t >= C))
        if tl.max(bad.to(tl.int32), axis=0) != 0:
            tl.atomic_max(flag_ptr, 1)
            tl.store(flag_ptr + 1 + t * 0, t, mask=bad)
        keep = keep & ~bad
        tt = tl.where(keep, t, 0)
        x_t = tl.load(x_ptr + base + tt * sc, mask=keep, other=0).to(ACC)
        if WEIGHTED:
            w_t = tl.load(w_ptr + tt * sw, mask=keep, other=0).to(ACC)
        else:
            w_t = tl.where(keep, 1.0, 0.0).to(ACC)
    if MODE == 0:
        loss = tl.where(keep, -w_t * x_t, 0.0)
    else:
        m_run = tl.full([BLOCK_M], float("-inf"), ACC)
        s_run = tl.zeros([BLOCK_M], ACC)
        a = tl.zeros([BLOCK_M, BLOCK_C], ACC)
        b = tl.zeros([BLOCK_M, BLOCK_C], ACC)
        for c0 in range(0, C, BLOCK_C):
            c = cr + c0
            m2 = ok[:, None] & (c < C)[None, :]
            x = tl.load(x_ptr + base[:, None] + c[None, :] * sc, mask=m2, other=float("-inf")).to(ACC)
            m_new = tl.maximum(m_run, tl.max(x, axis=1))
            # A row that is all -inf so far keeps a finite shift (exp(-inf - 0) = 0, not NaN).
            shift = tl.where(m_new == float("-inf"), 0.0, m_new)
            s_run = s_run * tl.exp(m_run - shift) + tl.sum(tl.exp(x - shift[:, None]), axis=1)
            m_run = m_new
            if MODE == 2 or SMOOTH:
                if MODE == 2:
                    coef = tl.load(t_ptr + tbase[:, None] + c[None, :] * tc, mask=m2, other=0).to(ACC)
                    coef = (coef * (1.0 - eps) + eps / C).to(ACC)
                else:
                    coef = tl.where(m2, 1.0, 0.0)
                if WEIGHTED:
                    coef = coef * tl.load(w_ptr + c * sw, mask=c < C, other=0).to(ACC)[None, :]
                a += tl.where(m2, coef * x, 0.0)
                b += tl.where(m2, coef, 0.0)
        lse = m_run + tl.log(s_run)
        # -sum_c coef_c * log_softmax_c = lse * sum(coef) - sum(coef * x).
        smooth = lse * tl.sum(b, axis=1) - tl.sum(a, axis=1)
        if MODE == 2:
            loss = tl.where(ok, smooth, 0.0)
        else:
            nll = -w_t * (x_t - lse)
            if SMOOTH:
                nll = ((1.0 - eps) * nll + (eps / C) * smooth).to(ACC)
            loss = tl.where(keep, nll, 0.0)
    tl.store(loss_ptr + rows, cast_to(loss, loss_ptr.dtype.element_ty), mask=ok)
    if MODE != 2:
        tl.store(wt_ptr + rows, w_t, mask=ok)


@triton.jit
def _div(a, b, sc):
    return a / b


@triton.jit
def _sq_diff(a, b, sc):
    d = a - b
    return d * d


def _reduction(op: str, reduction: Any) -> int:
    if isinstance(reduction, bool) or reduction not in _REDUCTIONS:
        raise NbxValueError(f"{op}: reduction must be 0 (none), 1 (mean) or 2 (sum), got {reduction!r}")
    return reduction


def _index_target(op: str, target: Any, shape: tuple[int, ...]) -> NBXTensor:
    t = check_dtype(
        op,
        tensor_arg(op, target, "target"),
        "target",
        {D.int64, D.uint8},
        fix="class indices are int64 (or uint8): cast it with .to(int64) first",
    )
    if t.shape != shape:
        raise ShapeError(f"{op}: target of shape {t.shape} does not match the input: expected {shape}")
    return t


def _weight(op: str, weight: Any, classes: int) -> NBXTensor | None:
    if weight is None:
        return None
    w = tensor_arg(op, weight, "weight", dtypes=FLOATING)
    if w.shape != (classes,):
        raise ShapeError(f"{op}: weight of shape {w.shape} must be 1-D with one entry per class ({classes})")
    return w


def class_loss(
    op: str,
    mode: int,
    x: NBXTensor,
    class_dim: int,
    t: NBXTensor,
    w: NBXTensor | None,
    reduction: int,
    ignore_index: int,
    eps: float,
    config: Mapping[str, int] | None = None,
) -> NBXTensor:
    """``op``'s loss in ``mode`` of the checked input ``x`` (classes along ``class_dim``), target ``t``
    and class weights ``w``; ``reduction`` 0 (none), 1 (mean) or 2 (sum). ``config`` replaces the
    lookup of :data:`XENT`."""
    px = E.plan(x, (class_dim,))
    rows = px.O * px.I
    if mode == CLASS_PROBS:
        pt = E.plan(t, (class_dim,))
        t_arg, to, tc, ti = pt.x, pt.so, pt.sk, pt.si
    else:
        pt = E.plan(t, ())
        t_arg, to, tc, ti = pt.x, pt.so * px.I, 0, pt.so
    out_shape = tuple(s for d, s in enumerate(x.shape) if d != class_dim)
    acc = D.compute_dtype(x.dtype)
    if reduction == 0:
        loss = empty_tensor(out_shape, x.dtype, x.device)
    else:
        loss = empty_tensor((rows,), acc, x.device)
    wt = empty_tensor((rows,), acc, x.device)
    # Targets out of range raise a checks flag [raised, a bad target], read at the next host wait.
    flag = checks.slot(x.device) if mode != CLASS_PROBS else wt
    if rows:
        cfg = XENT.choose(config, mode, x.dtype.itemsize, rows, px.K)
        launch(
            _xent_kernel,
            (cdiv(rows, cfg["BLOCK_M"]),),
            px.x,
            t_arg,
            w if w is not None else px.x,
            loss,
            wt,
            flag,
            rows,
            px.K,
            px.I,
            px.so,
            px.sk,
            px.si,
            to,
            tc,
            ti,
            w.stride(0) if w is not None else 0,
            int(ignore_index),
            float(eps),
            MODE=mode,
            ACC=tl_dtype(acc),
            WEIGHTED=w is not None,
            SMOOTH=eps > 0,
            BLOCK_M=cfg["BLOCK_M"],
            BLOCK_C=cfg["BLOCK_C"],
            INT64=needs_int64(rows * px.K, px.x, t_arg),
            num_warps=cfg["num_warps"],
        )
    if reduction == 2:
        result = E.reduce(loss, (0,), False, E.SUM, x.dtype)
    elif reduction == 1 and mode == CLASS_PROBS:
        result = E.reduce(loss, (0,), False, E.SUM, x.dtype, post=E.Q_MEAN)
    elif reduction == 1:
        total = E.reduce(loss, (0,), False, E.SUM, acc)
        weight_sum = E.reduce(wt, (0,), False, E.SUM, acc)
        result = pointwise(f"aten::{op}", _div, total, weight_sum, out_dtype=x.dtype)
    else:
        result = loss
    if mode != CLASS_PROBS:
        checks.raise_later(
            flag,
            lambda value: IndexOutOfRangeError(
                f"{op}: target index {value} is out of bounds: targets must lie in [0, {px.K}) or equal ignore_index "
                f"({ignore_index})"
            ),
        )
    return result


def cross_entropy_loss(
    self: NBXTensor,
    target: NBXTensor,
    weight: NBXTensor | None = None,
    reduction: int = 1,
    ignore_index: int = -100,
    label_smoothing: float = 0.0,
) -> NBXTensor:
    """aten::cross_entropy_loss with class-index or class-probability targets, (C,), (N, C) or (N, C, d...)."""
    op = "cross_entropy_loss"
    x = tensor_arg(op, self, dtypes=FLOATING)
    t = tensor_arg(op, target, "target", dtypes=DTYPES)
    check_device(op, x, t, *([weight] if isinstance(weight, NBXTensor) else []))
    if x.ndim == 0:
        raise ShapeError(f"{op}: input must have at least 1 dim (the classes), got a 0-dim tensor")
    red = _reduction(op, reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise NbxValueError(f"{op}: label_smoothing must be between 0.0 and 1.0, got {label_smoothing}")
    class_dim = 0 if x.ndim == 1 else 1
    w = _weight(op, weight, x.shape[class_dim])
    if t.shape == x.shape:
        if not t.dtype.is_floating_point:
            raise NbxTypeError(
                f"{op}: a target of the input's shape holds class probabilities and must be "
                f"floating point, got {t.dtype}"
            )
        if ignore_index >= 0:
            raise NbxValueError(f"{op}: ignore_index is not supported with class-probability targets")
        return class_loss(op, CLASS_PROBS, x, class_dim, t, w, red, ignore_index, label_smoothing)
    shape = tuple(s for d, s in enumerate(x.shape) if d != class_dim)
    t = _index_target(op, t, shape)
    return class_loss(op, CLASS_INDEX, x, class_dim, t, w, red, ignore_index, label_smoothing)


def nll_loss(
    self: NBXTensor, target: NBXTensor, weight: NBXTensor | None = None, reduction: int = 1, ignore_index: int = -100
) -> NBXTensor:
    """aten::nll_loss of (C,) or (N, C) log-probabilities; mean divides by the targets' total weight."""
    op = "nll_loss"
    x = tensor_arg(op, self, dtypes=FLOATING)
    check_device(op, x, *[v for v in (target, weight) if isinstance(v, NBXTensor)])
    if x.ndim not in (1, 2):
        raise ShapeError(
            f"{op}: input should be 1-D or 2-D, got {x.ndim} dims: use cross_entropy_loss or reshape to (N, C)"
        )
    red = _reduction(op, reduction)
    class_dim = x.ndim - 1
    w = _weight(op, weight, x.shape[class_dim])
    t = _index_target(op, target, x.shape[:1] if x.ndim == 2 else ())
    return class_loss(op, NLL, x, class_dim, t, w, red, ignore_index, 0.0)


def mse_loss(self: NBXTensor, target: NBXTensor, reduction: int = 1) -> NBXTensor:
    """aten::mse_loss: (self - target)^2, broadcast, reduced by mean or sum (none keeps it)."""
    op = "mse_loss"
    x = tensor_arg(op, self, dtypes=FLOATING)
    t = tensor_arg(op, target, "target", dtypes=FLOATING)
    check_device(op, x, t)
    red = _reduction(op, reduction)
    result = D.promote_types(x.dtype, t.dtype)
    if red == 0:
        return pointwise(f"aten::{op}", _sq_diff, x, t, dtype=result)
    # Squares stay in the accumulator type (float32 for half types) until the reduction rounds once.
    sq = pointwise(f"aten::{op}", _sq_diff, x, t, dtype=result, out_dtype=D.compute_dtype(result))
    return E.reduce(sq, tuple(range(sq.ndim)), False, E.SUM, result, post=E.Q_MEAN if red == 1 else E.Q_NONE)
