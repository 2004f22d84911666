"""Histograms: bincount and histc, atomic adds into a zeroed result.

- bincount: the output size (max + 1) is read back on the host first.
- histc: ``bins`` equal bins over a range the host knows, or over the data's extremes, which a
  reduction finds on the device and the histogram kernel reads there (no host read, so a plan can
  replay it); the counts are exact integers, cast once to the input dtype.
"""

from __future__ import annotations

import builtins
import math
import sys
from typing import Any

import triton
import triton.language as tl

from nbx_core import dtypes as D
from nbx_core.errors import NbxValueError, ShapeError
from nbx_core.runtime import checks
from nbx_core.runtime.kernels import precise
from nbx_core.runtime.kernels.copy import cast_to, contiguous_copy, copy_into
from nbx_core.runtime.kernels.indexing import block_indices, needs_int64, strided_offsets
from nbx_core.runtime.launch import block_size, cdiv, launch, next_pow2
from nbx_core.shape import coalesce_in_memory_order
from nbx_core.tensor import NBXTensor, check_device, empty_tensor
from nbx_core.tensor.args import FLOATING, INTEGRAL, int_arg, number_arg, out_arg, tensor_arg

from . import engine as E
from .rules import DTYPES


@triton.jit
def _bincount_kernel(
    x_ptr, w_ptr, out_ptr, n, sx, sw, WEIGHTED: tl.constexpr, BLOCK: tl.constexpr, INT64: tl.constexpr
):
    idx, mask = block_indices(n, BLOCK, INT64)
    v = tl.load(x_ptr + idx * sx, mask=mask, other=0).to(tl.int64)
    if WEIGHTED:
        w = cast_to(tl.load(w_ptr + idx * sw, mask=mask, other=0), out_ptr.dtype.element_ty)
    else:
        w = tl.full([BLOCK], 1, tl.int64)
    tl.atomic_add(out_ptr + v, w, mask=mask)


def bincount(self: NBXTensor, weights: NBXTensor | None = None, minlength: int = 0) -> NBXTensor:
    """aten::bincount of a 1-D non-negative integer tensor; float32 weights give float32, others float64."""
    x = tensor_arg("bincount", self, dtypes=INTEGRAL, ndim=1)
    if isinstance(minlength, bool) or not isinstance(minlength, int) or minlength < 0:
        raise NbxValueError(f"bincount: minlength must be an int >= 0, got {minlength!r}")
    if weights is not None:
        w = tensor_arg("bincount", weights, "weights", dtypes=DTYPES)
        check_device("bincount", x, w)
        if w.shape != x.shape:
            raise ShapeError(f"bincount: weights of shape {w.shape} must have the shape of self {x.shape}")
        out_dtype = D.float32 if w.dtype is D.float32 else D.float64
    else:
        out_dtype = D.int64
    n = x.numel()
    size = minlength
    if n:
        # The size depends on the data: one small reduction and a host read (zeros on aot).
        lo = E.reduce(x, (0,), False, E.MIN, D.int64).item()
        if lo < 0:
            raise NbxValueError(f"bincount: self must hold non-negative values, found {lo}")
        size = builtins.max(E.reduce(x, (0,), False, E.MAX, D.int64).item() + 1, minlength)
    out = empty_tensor((size,), out_dtype, x.device, zero=True)
    block = block_size(n, gpu=1024)
    launch(
        _bincount_kernel,
        (cdiv(n, block),),
        x,
        weights if weights is not None else x,
        out,
        n,
        x.stride(0),
        weights.stride(0) if weights is not None else 0,
        WEIGHTED=weights is not None,
        BLOCK=block,
        INT64=needs_int64(n, x, *([weights] if weights is not None else [])),
        num_warps=4,
    )
    return out


# -- histc ----------------------------------------------------------------------------------------

_LOCAL_BINS = 256
"""Up to this many bins a program counts its block with ``tl.histogram`` and adds one count per
bin to the result; more bins would cost each program more registers and shared memory than the
per-element atomic adds it saves (and the atomics spread over more addresses anyway)."""


_FLOAT64_MAX = tl.constexpr(sys.float_info.max)


@triton.jit
def _round(v, DT: tl.constexpr):
    """``v`` rounded to ``DT`` and widened back: torch computes each step of a half type's bin in
    that type."""
    return cast_to(v, DT).to(v.dtype)


@triton.jit
def _edge(v64, DT: tl.constexpr):
    """A float64 range end as torch's linspace stores it in ``DT`` (half types through float32, as
    c10's conversions go)."""
    if DT == tl.float64:
        return v64
    else:
        return cast_to(v64.to(tl.float32), DT).to(tl.float32)


@triton.jit
def _histc_kernel(
    x_ptr,
    lo_ptr,
    hi_ptr,
    cnt_ptr,
    flag_ptr,
    n,
    bins,
    lo: tl.float64,
    hi: tl.float64,
    shape,
    strides,
    FROM_DATA: tl.constexpr,
    NDIM: tl.constexpr,
    LOCAL: tl.constexpr,
    NBINS: tl.constexpr,
    BLOCK: tl.constexpr,
    INT64: tl.constexpr,
):
    idx, mask = block_indices(n, BLOCK, INT64)
    x = tl.load(x_ptr + strided_offsets(idx, shape, strides, NDIM), mask=mask, other=0)
    DT = x_ptr.dtype.element_ty
    # The range: min and max as given, or the data's extremes (a reduction that ran before, read
    # here so that no host waits for it), widened by 1 each way when they are equal.
    left = tl.zeros([1], tl.float64)
    right = tl.zeros([1], tl.float64)
    if FROM_DATA:
        left += tl.load(lo_ptr).to(tl.float64)
        right += tl.load(hi_ptr).to(tl.float64)
        # NaN or inf among the data leaves no range to bin over (NaN fails every comparison). The
        # range then becomes [0, 1], with nothing counted, so that no lane computes with it.
        bad = ~((tl.abs(left) <= _FLOAT64_MAX) & (tl.abs(right) <= _FLOAT64_MAX))
        if tl.program_id(0) == 0:
            tl.store(flag_ptr + tl.arange(0, 1), bad.to(tl.int64), mask=bad)
        left = tl.where(bad, 0.0, left)
        right = tl.where(bad, 1.0, right)
        same = left == right
        left = tl.where(same, left - 1, left)
        right = tl.where(same, right + 1, right)
    else:
        left += lo
        right += hi
        bad = left != left  # never: the host checked the range
    left = _edge(left, DT)
    right = _edge(right, DT)
    xv = x.to(left.dtype)
    # NaN fails both comparisons; a value equal to max is in range and lands in the last bin.
    valid = mask & (xv >= left) & (xv <= right) & ~bad
    # torch's linear interpolation, (x - left) * bins / (right - left), each step in the input
    # dtype (an exact division for float32: Triton's default is approximate).
    scaled = _round(_round(xv - left, DT) * _round(tl.zeros([1], left.dtype) + bins, DT), DT)
    pos = _round(precise.div(scaled, _round(right - left, DT)), DT)
    # max itself gives pos == bins: the last bin holds its right edge. The clamp also keeps the
    # rounding of half types (and a degenerate rounded range) inside the result.
    pos = tl.minimum(tl.maximum(tl.where(valid, pos, 0.0), 0.0), bins - 1)
    if LOCAL:
        counts = tl.histogram(pos.to(tl.int32), NBINS, mask=valid)
        r = tl.arange(0, NBINS)
        tl.atomic_add(cnt_ptr + r, counts.to(tl.int64), mask=(r < bins) & (counts > 0))
    else:
        tl.atomic_add(cnt_ptr + pos.to(tl.int64), tl.full([BLOCK], 1, tl.int64), mask=valid)


def _range_error(op: str) -> NbxValueError:
    return NbxValueError(
        f"{op}: min == max asks for the range of self's values, and self holds NaN or inf, so that range is "
        "not finite: pass finite min and max (min < max) to bin such data"
    )


def histc(self: NBXTensor, bins: int = 100, min: Any = 0, max: Any = 0, *, out: NBXTensor | None = None) -> NBXTensor:
    """aten::histc (and .out): ``bins`` equal bins over [min, max] of a floating tensor's values, in its dtype.

    ``min == max`` bins over the data's own extremes, found on the device. Values outside the
    range and NaN are not counted; a value equal to max counts in the last bin.
    """
    op = "aten::histc"
    x = tensor_arg(op, self, dtypes=FLOATING)
    bins = int_arg(op, bins, "bins")
    if bins <= 0:
        raise NbxValueError(f"{op}: bins must be > 0, got {bins}: pass the number of bins, at least 1")
    lo = float(number_arg(op, min, "min", allow_bool=True))
    hi = float(number_arg(op, max, "max", allow_bool=True))
    res = out_arg(op, out, (bins,), x.dtype)
    n = x.numel()
    # As torch: equal ends take the data's range (checked on the device), an empty input's equal
    # ends widen by 1 each way.
    from_data = lo == hi and n > 0
    if not from_data:
        if lo == hi:
            lo, hi = lo - 1, hi + 1
        if not (math.isfinite(lo) and math.isfinite(hi)):
            raise NbxValueError(f"{op}: the range [{lo}, {hi}] is not finite: pass finite min and max")
        if not lo < hi:
            raise NbxValueError(
                f"{op}: max must be larger than min, got min={min} and max={max}: swap them, or pass min == max "
                "to bin over the data's range"
            )
    counts = empty_tensor((bins,), D.int64, x.device, zero=True)
    if n:
        shape, (st,) = coalesce_in_memory_order(x.shape, x.stride())
        ends = (
            (
                E.reduce(x, tuple(range(x.ndim)), False, E.MIN, x.dtype),
                E.reduce(x, tuple(range(x.ndim)), False, E.MAX, x.dtype),
            )
            if from_data
            else (counts, counts)
        )
        flag = checks.slot(x.device) if from_data else counts
        block = block_size(n, gpu=2048)
        launch(
            _histc_kernel,
            (cdiv(n, block),),
            x,
            *ends,
            counts,
            flag,
            n,
            bins,
            0.0 if from_data else lo,
            0.0 if from_data else hi,
            shape,
            st,
            FROM_DATA=from_data,
            NDIM=len(shape),
            LOCAL=bins <= _LOCAL_BINS,
            NBINS=next_pow2(bins) if bins <= _LOCAL_BINS else 1,
            BLOCK=block,
            INT64=needs_int64(n, x),
            num_warps=4,
        )
        if from_data:
            checks.raise_later(flag, lambda _: _range_error(op))
    if res is None:
        return contiguous_copy(counts, x.dtype)
    copy_into(res, counts)
    return res
