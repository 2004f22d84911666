"""Row normalisation (layer norm and RMS norm) over the trailing ``normalized_shape`` dims.

One kernel serves both. A row that fits one block (``FUSED_MAX`` elements) is read once into
registers and written once; several short rows share a program so that each moves a useful tile.
A longer row is walked twice in chunks: the first loop merges per-chunk moments (exact two-pass
mean and M2 inside a chunk, Chan's formula across chunks, so no catastrophic cancellation); the
second normalises. Statistics are float32 for half types (float64 for float64 input).
"""


from collections.abc import Mapping, Sequence
from pathlib import Path

# nbx_core.runtime.launch picks the backend, which must happen before Triton is first imported.
from nbx_core.runtime.launch import Prepared, cdiv, prepare, row_blocks

# isort: split
import triton
import triton.language as tl

from nbx_core import dtypes as D
from nbx_core.errors import ShapeError
from nbx_core.ops.copy import contiguous
from nbx_core.ops.creation import full
from nbx_core.runtime.plans import PlanCache, geometry
from nbx_core.runtime.pointwise import tl_dtype
from nbx_core.runtime.tuning import Config, frozen, row_tunable
from nbx_core.shape import numel
from nbx_core.tensor import NBXTensor, check_device, empty_tensor
from nbx_core.tensor.args import FLOATING, optional_tensor, tensor_arg

from .params import stat_dtype

FUSED_MAX = 32768
"""Longest row kept whole in registers; longer rows take the chunked kernel (tests lower it)."""
CHUNK = 4096
"""Chunk of the chunked kernel (capped by FUSED_MAX)."""


@triton.jit
def _rsqrt(v, COMPUTE: tl.constexpr):
    # float64 takes the IEEE root (rsqrt is approximate); float32 rsqrt is well within tolerance.
    if COMPUTE == tl.float64:
        return 1.0 / tl.sqrt(v)
    else:
        return tl.rsqrt(v)


@triton.jit
def _inv_std(var, eps, RMS: tl.constexpr, COMPUTE: tl.constexpr):
    rstd = _rsqrt(var + eps, COMPUTE)
    if not RMS:
        # torch's layer norm gives NaN where the variance overflows (its Welford update meets
        # inf - inf), not the 0 that 1/sqrt(inf) would give; rms_norm keeps the 0, as torch does.
        rstd = tl.where(var == float("inf"), float("nan"), rstd)
    return rstd


@triton.jit
def _row_norm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, mean_ptr, rstd_ptr, M, N, eps32, eps64: tl.float64,
                     RMS: tl.constexpr, HAS_W: tl.constexpr, HAS_B: tl.constexpr, STATS: tl.constexpr,
                     CHUNKED: tl.constexpr, ROWS: tl.constexpr, BLOCK: tl.constexpr,
                     COMPUTE: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    rmask = rows < M
    base = rows.to(tl.int64)[:, None] * N
    cols = tl.arange(0, BLOCK)[None, :]
    if COMPUTE == tl.float64:
        eps = eps64
    else:
        eps = eps32
    if not CHUNKED:
        mask = rmask[:, None] & (cols < N)
        x = tl.load(x_ptr + base + cols, mask=mask, other=0.0).to(COMPUTE)
        if RMS:
            mean = tl.zeros([ROWS], COMPUTE)
            xc = x
        else:
            mean = tl.sum(x, axis=1) / N
            xc = tl.where(mask, x - mean[:, None], 0.0)
        rstd = _inv_std(tl.sum(xc * xc, axis=1) / N, eps, RMS, COMPUTE)
        y = xc * rstd[:, None]
        if HAS_W:
            y = y * tl.load(w_ptr + cols, mask=cols < N).to(COMPUTE)
        if HAS_B:
            y = y + tl.load(b_ptr + cols, mask=cols < N).to(COMPUTE)
        tl.store(y_ptr + base + cols, y.to(y_ptr.dtype.element_ty), mask=mask)
    else:
        mean = tl.zeros([ROWS], COMPUTE)
        m2 = tl.zeros([ROWS], COMPUTE)
        seen = tl.zeros([1], COMPUTE)
        for start in range(0, N, BLOCK):
            cm = cols + start < N
            mask = rmask[:, None] & cm
            x = tl.load(x_ptr + base + start + cols, mask=mask, other=0.0).to(COMPUTE)
            if RMS:
                m2 += tl.sum(x * x, axis=1)
            else:
                cnt = tl.sum(cm.to(COMPUTE), axis=1)
                cmean = tl.sum(x, axis=1) / cnt
                xc = tl.where(mask, x - cmean[:, None], 0.0)
                delta = cmean - mean
                mean += delta * (cnt / (seen + cnt))
                m2 += tl.sum(xc * xc, axis=1) + delta * delta * (seen * cnt / (seen + cnt))
                seen += cnt
        rstd = _inv_std(m2 / N, eps, RMS, COMPUTE)
        for start in range(0, N, BLOCK):
            cm = cols + start < N
            mask = rmask[:, None] & cm
            x = tl.load(x_ptr + base + start + cols, mask=mask, other=0.0).to(COMPUTE)
            y = (x - mean[:, None]) * rstd[:, None]
            if HAS_W:
                y = y * tl.load(w_ptr + start + cols, mask=cm).to(COMPUTE)
            if HAS_B:
                y = y + tl.load(b_ptr + start + cols, mask=cm).to(COMPUTE)
            tl.store(y_ptr + base + start + cols, y.to(y_ptr.dtype.element_ty), mask=mask)
    if STATS:
        tl.store(mean_ptr + rows, mean.to(mean_ptr.dtype.element_ty), mask=rmask)
        tl.store(rstd_ptr + rows, rstd.to(rstd_ptr.dtype.element_ty), mask=rmask)


def row_block(n: int) -> int:
    """The row kernel's block for rows of ``n``: the row rounded up to a power of two, or the chunk
    of a row longer than FUSED_MAX."""
    return row_blocks(1, n, FUSED_MAX, CHUNK, 1)[0]


def _gpu_rule(dtype: str, n: int, block: int) -> Config:
    # More warps as the block grows (configs/h200.json holds the H200 sweep's shapes).
    return {"TILE": 4096, "num_warps": 4 if block <= 1024 else 8 if block <= 4096 else 16 if block <= 16384 else 32}


ROW_NORM = row_tunable("norm", "row_norm", _gpu_rule, {"TILE": 1 << 14, "num_warps": 1},
                       Path(__file__).with_name("configs"))
"""The row kernel's launch (see :func:`nbx_core.runtime.tuning.row_tunable`)."""


class _RowPlan:
    """What :func:`row_norm` derives from its operands' geometry (checked once per geometry): the
    result and statistics shapes, which operands need a contiguous copy, and the prepared launch."""

    def __init__(self, op: str, x: NBXTensor, shape: tuple[int, ...], weight: NBXTensor | None,
                 bias: NBXTensor | None, eps: float, rms: bool, stats: bool, config: Mapping[str, int] | None) -> None:
        x = tensor_arg(op, x, "input", dtypes=FLOATING)
        if not shape:
            raise ShapeError(f"{op}: normalized_shape must name at least one dim, got []")
        if x.ndim < len(shape) or tuple(x.shape[x.ndim - len(shape):]) != shape:
            raise ShapeError(f"{op}: given normalized_shape={list(shape)}, expected input with shape "
                             f"[*, {', '.join(map(str, shape))}], but got input of size {list(x.shape)}")
        params = {"weight": weight, "bias": bias}
        if rms:
            # rms_norm takes a weight of any floating dtype and always returns the input's dtype.
            optional_tensor(op, weight, "weight", dtypes=FLOATING)
            check_device(op, x, weight)
            self.sdt = x.dtype
        else:
            self.sdt = stat_dtype(op, x, params)
        for name, t in params.items():
            if t is not None and tuple(t.shape) != shape:
                raise ShapeError(f"{op}: expected {name} of shape {list(shape)} (normalized_shape), got "
                                 f"{list(t.shape)}")
        lead = x.shape[: x.ndim - len(shape)]
        m, n = numel(lead), numel(shape)
        self.shape, self.dtype, self.device = x.shape, x.dtype, x.device
        self.stat_shape = (*lead, *([1] * len(shape)))
        self.empty_rows = n == 0
        self.copies = tuple(t is not None and not t.is_contiguous() for t in (x, weight, bias))
        self.run: Prepared | None = None
        if m == 0 or n == 0:
            return
        cfg = ROW_NORM.choose(config, x.dtype.name, n, row_block(n))
        block, rows, chunked = row_blocks(m, n, FUSED_MAX, CHUNK, cfg["TILE"])
        self.run = prepare(_row_norm_kernel, (cdiv(m, rows),),
                           (None, None, None, None, None, None, m, n, float(eps), float(eps)), range(6),
                           RMS=rms, HAS_W=weight is not None, HAS_B=bias is not None, STATS=stats,
                           CHUNKED=chunked, ROWS=rows, BLOCK=block, COMPUTE=tl_dtype(D.compute_dtype(x.dtype)),
                           num_warps=cfg["num_warps"])


_plans: PlanCache[_RowPlan] = PlanCache()


def row_norm(op: str, x: NBXTensor, normalized_shape: Sequence[int], weight: NBXTensor | None,
             bias: NBXTensor | None, eps: float, rms: bool, stats: bool, *,
             config: Mapping[str, int] | None = None) -> tuple[NBXTensor, NBXTensor | None, NBXTensor | None]:
    """Normalise ``x`` over its trailing ``normalized_shape``; returns (out, mean, rstd).

    ``mean`` and ``rstd`` have torch's shape (leading dims, then ones) and are None unless ``stats``.
    ``config`` replaces :data:`ROW_NORM`'s lookup.
    """
    shape = tuple(int(s) for s in normalized_shape)
    key = (op, geometry(x), shape, geometry(weight), geometry(bias), eps, rms, stats, frozen(config))
    plan = _plans.get(key, lambda: _RowPlan(op, x, shape, weight, bias, eps, rms, stats, config))
    device = plan.device
    out = empty_tensor(plan.shape, plan.dtype, device)
    mean = rstd = None
    if stats:
        if plan.empty_rows:
            # torch's answer for empty rows: mean 0, rstd nan.
            return out, full(plan.stat_shape, 0.0, dtype=plan.sdt, device=device), full(
                plan.stat_shape, float("nan"), dtype=plan.sdt, device=device)
        mean = empty_tensor(plan.stat_shape, plan.sdt, device)
        rstd = empty_tensor(plan.stat_shape, plan.sdt, device)
    if plan.run is None:
        return out, mean, rstd
    cx, cw, cb = plan.copies
    xc = contiguous(x) if cx else x
    w = xc if weight is None else contiguous(weight) if cw else weight
    b = xc if bias is None else contiguous(bias) if cb else bias
    plan.run(xc, w, b, out, mean if stats else out, rstd if stats else out)
    return out, mean, rstd


def native_layer_norm(input: NBXTensor, normalized_shape: Sequence[int], weight: NBXTensor | None,
                      bias: NBXTensor | None, eps: float) -> tuple[NBXTensor, NBXTensor, NBXTensor]:
    """``aten::native_layer_norm``: (out, mean, rstd), statistics shaped [*lead, 1, ...]."""
    out, mean, rstd = row_norm("native_layer_norm", input, normalized_shape, weight, bias, eps,
                               rms=False, stats=True)
    return out, mean, rstd


def layer_norm(input: NBXTensor, normalized_shape: Sequence[int], weight: NBXTensor | None = None,
               bias: NBXTensor | None = None, eps: float = 1e-5, cudnn_enable: bool = True) -> NBXTensor:
    """``aten::layer_norm``: the normalised output only (``cudnn_enable`` does not change the result)."""
    return row_norm("layer_norm", input, normalized_shape, weight, bias, eps, rms=False, stats=False)[0]
