"""Per-unit mean and variance over strided segments, and the per-channel apply after them.

Group norm, batch norm and weight norm all reduce "units" of a contiguous tensor viewed as
``(outer, C, inner)``: a unit is ``rows`` segments of ``row_len`` contiguous elements, the first at
``u * unit_stride`` (or at a two-level offset: :func:`moments`), the next ``row_stride`` further
on. Group norm: a unit is one (sample, group), a single segment (``HxW`` segments of ``C // groups``
channels for a channels-last input). Batch norm: a unit is a channel, one segment of ``inner`` per
sample. Weight norm: a unit is one index of ``dim``.

A unit may be split across programs so that a few large units still fill the GPU: each program
merges per-chunk moments (exact two-pass inside a chunk, Chan's formula across chunks) into a
partial (mean, M2); a second tiny kernel merges the partials the same way. No sum-of-squares
cancellation anywhere. Statistics are float32 (float64 for float64 input).
"""


from collections.abc import Mapping
from pathlib import Path

# nbx_core.runtime.launch picks the backend, which must happen before Triton is first imported.
from nbx_core.runtime.launch import cdiv, launch, next_pow2

# isort: split
import triton
import triton.language as tl

from nbx_core import dtypes as D
from nbx_core.runtime.kernels.indexing import needs_int64
from nbx_core.runtime.pointwise import tl_dtype
from nbx_core.runtime.tuning import Key, Tunable, bucket
from nbx_core.tensor import NBXTensor, empty_tensor

from .layer_norm import _rsqrt


def _moments_key(dtype: str, units: int, rows: int, total: int) -> Key:
    return Key({"dtype": dtype, "U": bucket(units), "N": bucket(total), "layout": "one" if rows == 1 else "rows"})


MOMENTS = Tunable(
    "norm", "moments", {"CHUNK": "pow2", "PROGRAMS": "count", "num_warps": "pow2"}, key=_moments_key,
    # 1024 programs fill 132 SMs several times over; the interpreter runs one program per unit
    # (one program costs Python time there) and larger chunks.
    rule=lambda dtype, units, rows, total: {"CHUNK": 4096, "PROGRAMS": 1024, "num_warps": 8},
    interpreter=lambda dtype, units, rows, total: {"CHUNK": 1 << 14, "PROGRAMS": 1, "num_warps": 8},
    tables=Path(__file__).with_name("configs"))
"""The partial-moments kernel's launch: CHUNK, the elements a program reduces per loop step;
PROGRAMS, the programs that units are split between until there are this many (1: no split); its
warps. Arguments: the input's dtype name, the units, the segments of a unit and its elements."""

APPLY = Tunable(
    "norm", "apply_channels", {"TILE": "pow2", "num_warps": "pow2"},
    key=lambda dtype, inner: Key({"dtype": dtype, "N": bucket(inner)}),
    rule=lambda dtype, inner: {"TILE": 2048, "num_warps": 8},
    interpreter=lambda dtype, inner: {"TILE": 1 << 16, "num_warps": 8},
    tables=Path(__file__).with_name("configs"))
"""The per-channel apply's launch: TILE, the elements of a program's (rows, inner) tile, and its
warps. Arguments: the input's dtype name and the inner length (the elements of a row)."""


@triton.jit
def _partial_kernel(x_ptr, pmean_ptr, pm2_ptr, total, span, row_len, unit_stride, row_stride, per_outer,
                    outer_stride, ONE_ROW: tl.constexpr, BLOCK: tl.constexpr, COMPUTE: tl.constexpr,
                    INT64: tl.constexpr):
    u = tl.program_id(0)
    s = tl.program_id(1)
    outer = u // per_outer
    inner = u - outer * per_outer
    if INT64:
        base = outer.to(tl.int64) * outer_stride + inner.to(tl.int64) * unit_stride
        lo = s.to(tl.int64) * span
    else:
        base = outer * outer_stride + inner * unit_stride
        lo = s * span
    hi = tl.minimum(lo + span, total)
    mean = tl.zeros([1], COMPUTE)
    m2 = tl.zeros([1], COMPUTE)
    seen = tl.zeros([1], COMPUTE)
    for start in range(lo, hi, BLOCK):
        k = start + tl.arange(0, BLOCK)
        mask = k < hi
        if ONE_ROW:
            off = k
        else:
            # A unit of several segments (batch and weight norm): a division per element.
            r = k // row_len
            off = r * row_stride + (k - r * row_len)
        x = tl.load(x_ptr + base + off, mask=mask, other=0.0).to(COMPUTE)
        x = tl.reshape(x, [1, BLOCK])
        m = tl.reshape(mask, [1, BLOCK])
        cnt = tl.sum(m.to(COMPUTE), axis=1)
        cmean = tl.sum(x, axis=1) / cnt
        xc = tl.where(m, x - cmean[:, None], 0.0)
        delta = cmean - mean
        mean += delta * (cnt / (seen + cnt))
        m2 += tl.sum(xc * xc, axis=1) + delta * delta * (seen * cnt / (seen + cnt))
        seen += cnt
    idx = u * tl.num_programs(1) + s + tl.arange(0, 1)
    tl.store(pmean_ptr + idx, mean)
    tl.store(pm2_ptr + idx, m2)


@triton.jit
def _combine_kernel(pmean_ptr, pm2_ptr, mean_ptr, var_ptr, rstd_ptr, units, splits, total, span,
                    eps32, eps64: tl.float64, RSTD: tl.constexpr, BLOCK: tl.constexpr, COMPUTE: tl.constexpr):
    u = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    umask = u < units
    mean = tl.zeros([BLOCK], COMPUTE)
    m2 = tl.zeros([BLOCK], COMPUTE)
    seen = tl.zeros([BLOCK], COMPUTE)
    for s in range(0, splits):
        pm = tl.load(pmean_ptr + u * splits + s, mask=umask, other=0.0)
        pv = tl.load(pm2_ptr + u * splits + s, mask=umask, other=0.0)
        cnt = tl.minimum(tl.maximum(tl.zeros([BLOCK], COMPUTE) + (total - s * span), 0.0), span)
        tot = seen + cnt
        # An empty split adds nothing (and would divide 0 by 0).
        frac = tl.where(cnt > 0, cnt / tl.where(tot > 0, tot, 1.0), 0.0)
        delta = pm - mean
        mean += delta * frac
        m2 += pv + delta * delta * seen * frac
        seen = tot
    # Lanes past the last unit divide by 1; an empty unit keeps 0 / 0 = nan, as torch reports it.
    var = m2 / tl.where(umask, seen, 1.0)
    tl.store(mean_ptr + u, mean, mask=umask)
    tl.store(var_ptr + u, var, mask=umask)
    if RSTD:
        if COMPUTE == tl.float64:
            eps = eps64
        else:
            eps = eps32
        tl.store(rstd_ptr + u, _rsqrt(var + eps, COMPUTE), mask=umask)


def moments(x: NBXTensor, units: int, rows: int, row_len: int, unit_stride: int, row_stride: int,
            eps: float | None = None, *, per_outer: int | None = None, outer_stride: int = 0,
            config: Mapping[str, int] | None = None) -> tuple[NBXTensor, NBXTensor, NBXTensor | None]:
    """(mean, biased variance, rsqrt(variance + eps) or None without ``eps``) of each unit of ``x``.

    Units come in runs of ``per_outer`` (default: all of them), a run ``outer_stride`` elements
    after the one before, and units of a run ``unit_stride`` apart: unit ``u`` starts at
    ``u // per_outer * outer_stride + u % per_outer * unit_stride`` (group norm of a channels-last
    input: per sample, its groups ``C // groups`` channels apart).

    Each is a 1-D tensor of ``units`` values in the statistics dtype (float32, float64 for
    float64 ``x``). A unit of no elements has mean 0 and variance nan, as torch reports it.
    ``config`` replaces :data:`MOMENTS`'s lookup.
    """
    sdt = D.compute_dtype(x.dtype)
    compute = tl_dtype(sdt)
    total = rows * row_len
    cfg = MOMENTS.choose(config, x.dtype.name, units, rows, total)
    block = min(cfg["CHUNK"], next_pow2(max(total, 1)))
    splits = max(1, min(cdiv(cfg["PROGRAMS"], max(units, 1)), cdiv(total, block)))
    span = cdiv(cdiv(max(total, 1), splits), block) * block
    pmean = empty_tensor((units * splits,), sdt, x.device)
    pm2 = empty_tensor((units * splits,), sdt, x.device)
    mean = empty_tensor((units,), sdt, x.device)
    var = empty_tensor((units,), sdt, x.device)
    rstd = empty_tensor((units,), sdt, x.device) if eps is not None else var
    launch(_partial_kernel, (units, splits), x, pmean, pm2, total, span, row_len, unit_stride, row_stride,
           per_outer or max(units, 1), outer_stride, ONE_ROW=rows == 1, BLOCK=block, COMPUTE=compute,
           INT64=needs_int64(x.numel(), x),
           num_warps=cfg["num_warps"])
    ublock = min(1024, next_pow2(units))
    launch(_combine_kernel, (cdiv(units, ublock),), pmean, pm2, mean, var, rstd, units, splits, total, span,
           float(eps or 0.0), float(eps or 0.0), RSTD=eps is not None, BLOCK=ublock, COMPUTE=compute,
           num_warps=4)
    return mean, var, rstd if eps is not None else None


@triton.jit
def _apply_kernel(x_ptr, y_ptr, mean_ptr, rstd_ptr, w_ptr, b_ptr, nrows, C, inner, units_per_outer, cpg,
                  HAS_W: tl.constexpr, HAS_B: tl.constexpr, ROWS: tl.constexpr, BLOCK: tl.constexpr,
                  COMPUTE: tl.constexpr, INT64: tl.constexpr):
    # A tile of ROWS (outer, channel) rows by BLOCK inner elements: index math once per row.
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    rmask = rows < nrows
    c = rows % C
    unit = (rows // C) * units_per_outer + c // cpg
    mean = tl.load(mean_ptr + unit, mask=rmask, other=0.0).to(COMPUTE)
    scale = tl.load(rstd_ptr + unit, mask=rmask, other=0.0).to(COMPUTE)
    if HAS_W:
        scale = scale * tl.load(w_ptr + c, mask=rmask, other=0.0).to(COMPUTE)
    if HAS_B:
        shift = tl.load(b_ptr + c, mask=rmask, other=0.0).to(COMPUTE)
    else:
        shift = tl.zeros([ROWS], COMPUTE)
    if INT64:
        off = rows.to(tl.int64)[:, None] * inner + cols[None, :]
    else:
        off = rows[:, None] * inner + cols[None, :]
    mask = rmask[:, None] & (cols[None, :] < inner)
    x = tl.load(x_ptr + off, mask=mask, other=0.0).to(COMPUTE)
    y = (x - mean[:, None]) * scale[:, None] + shift[:, None]
    tl.store(y_ptr + off, y.to(y_ptr.dtype.element_ty), mask=mask)


def apply_channels(x: NBXTensor, out: NBXTensor, mean: NBXTensor, rstd: NBXTensor, weight: NBXTensor | None,
                   bias: NBXTensor | None, channels: int, inner: int, units_per_outer: int,
                   channels_per_unit: int, *, config: Mapping[str, int] | None = None) -> None:
    """``out = (x - mean[u]) * rstd[u] * weight[c] + bias[c]`` over the contiguous ``(outer, C, inner)``.

    ``u = outer_index * units_per_outer + c // channels_per_unit``: group norm passes (groups,
    C // groups), batch norm (0, 1). ``weight`` and ``bias`` are contiguous vectors of C or None.
    ``config`` replaces :data:`APPLY`'s lookup.
    """
    n = x.numel()
    if n == 0:
        return
    cfg = APPLY.choose(config, x.dtype.name, inner)
    block = min(next_pow2(inner), cfg["TILE"])
    rows = max(1, cfg["TILE"] // block)
    nrows = n // inner
    launch(_apply_kernel, (cdiv(nrows, rows), cdiv(inner, block)), x, out, mean, rstd,
           weight if weight is not None else x, bias if bias is not None else x, nrows, channels, inner,
           units_per_outer, channels_per_unit, HAS_W=weight is not None, HAS_B=bias is not None, ROWS=rows,
           BLOCK=block, COMPUTE=tl_dtype(D.compute_dtype(x.dtype)), INT64=needs_int64(n, x),
           num_warps=cfg["num_warps"])
