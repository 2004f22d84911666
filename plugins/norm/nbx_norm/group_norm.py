"""``aten::native_group_norm`` and ``aten::group_norm`` on ``(N, C, *)`` inputs.

Each (sample, group) is one contiguous run of ``C // groups * HxW`` elements: :mod:`moments`
reduces it (split across programs when there are few groups), then one elementwise pass applies
``(x - mean) * rstd * weight[c] + bias[c]``: two reads and one write of the input in all. A
channels-last input is normalised in place in memory, to a channels-last result as torch's: a
unit is then ``HxW`` runs of ``C // groups`` channels.
"""

from __future__ import annotations

import triton
import triton.language as tl  # noqa: F401  (the interpreter runs a jit function with its module's tl)

from nbx_core import dtypes as D
from nbx_core.errors import NbxValueError, ShapeError
from nbx_core.ops.copy import contiguous
from nbx_core.ops.creation import empty
from nbx_core.ops.layout import CONTIGUOUS, suggest_memory_format
from nbx_core.ops.views import view
from nbx_core.runtime.pointwise import pointwise
from nbx_core.shape import numel
from nbx_core.tensor import NBXTensor, empty_tensor
from nbx_core.tensor.args import FLOATING, int_arg, tensor_arg

from .moments import apply_channels, moments
from .params import check_vector, stat_dtype


def _group_norm(
    op: str,
    input: NBXTensor,
    weight: NBXTensor | None,
    bias: NBXTensor | None,
    n: int,
    c: int,
    hxw: int,
    group: int,
    eps: float,
) -> tuple[NBXTensor, NBXTensor, NBXTensor]:
    x = tensor_arg(op, input, "input", dtypes=FLOATING, min_ndim=1)
    for v, arg in ((n, "N"), (c, "C"), (hxw, "HxW"), (group, "group")):
        int_arg(op, v, arg)
    if group <= 0 or c % group:
        raise NbxValueError(
            f"{op}: the number of channels C={c} must be divisible by num_groups={group}: "
            "pick a num_groups that divides the channels"
        )
    if x.numel() != n * c * hxw:
        raise ShapeError(f"{op}: input of shape {list(x.shape)} does not hold N*C*HxW = {n}*{c}*{hxw} elements")
    params = {"weight": weight, "bias": bias}
    sdt = stat_dtype(op, x, params)
    for name, t in params.items():
        check_vector(op, t, name, c)
    units = n * group
    fmt = suggest_memory_format(x) if x.ndim in (4, 5) else CONTIGUOUS
    if units and x.numel() and fmt != CONTIGUOUS and (x.shape[0], x.shape[1], numel(x.shape[2:])) == (n, c, hxw):
        return _channels_last(op, contiguous(x, memory_format=fmt), weight, bias, group, eps, sdt)
    out = empty_tensor(x.shape, x.dtype, x.device)
    if units == 0:
        return out, empty_tensor((n, group), sdt, x.device), empty_tensor((n, group), sdt, x.device)
    xc = contiguous(x)
    size = c // group * hxw
    mean, _, rstd = moments(xc, units, 1, size, size, size, eps)
    w = contiguous(weight) if weight is not None else None
    b = contiguous(bias) if bias is not None else None
    apply_channels(xc, out, mean, rstd, w, b, c, hxw, group, c // group)
    mean, rstd = view(mean, n, group), view(rstd, n, group)
    if sdt is not mean.dtype:
        mean, rstd = mean.to(sdt), rstd.to(sdt)
    return out, mean, rstd


@triton.jit
def _times(a, b, sc):
    return a * b


@triton.jit
def _normalize(x, scale, mean, shift, sc):
    return (x - mean) * scale + shift


def _channels_last(
    op: str, x: NBXTensor, weight: NBXTensor | None, bias: NBXTensor | None, group: int, eps: float, sdt: D.DType
) -> tuple[NBXTensor, NBXTensor, NBXTensor]:
    """Group norm of a dense channels-last ``x``, with a channels-last result as torch gives: a
    (sample, group) unit is ``HxW`` runs of ``C // groups`` channels, ``C`` apart, and the apply
    runs on the view ``(N, groups, C // groups, HxW)``, in place in memory."""
    n, c, hxw = x.shape[0], x.shape[1], numel(x.shape[2:])
    cg = c // group
    mean, _, rstd = moments(x, n * group, hxw, cg, cg, c, eps, per_outer=group, outer_stride=c * hxw)
    comp = D.compute_dtype(x.dtype)
    stat = (n, group, 1, 1)
    scale = view(rstd, stat)
    if weight is not None:
        scale = pointwise(op, _times, scale, view(contiguous(weight), (1, group, cg, 1)), compute=comp, out_dtype=comp)
    shift = view(contiguous(bias), (1, group, cg, 1)) if bias is not None else 0.0
    # The result is allocated laid out as x (dense channels-last), and written through the same view.
    out = empty(*x.shape, dtype=x.dtype, device=x.device, memory_format=suggest_memory_format(x))
    grouped = (n, group, cg, hxw)
    pointwise(
        op,
        _normalize,
        view(x, grouped),
        scale,
        view(mean, stat),
        shift,
        dtype=x.dtype,
        compute=comp,
        out_dtype=x.dtype,
        out=view(out, grouped),
    )
    mean, rstd = view(mean, n, group), view(rstd, n, group)
    if sdt is not mean.dtype:
        mean, rstd = mean.to(sdt), rstd.to(sdt)
    return out, mean, rstd


def native_group_norm(
    input: NBXTensor, weight: NBXTensor | None, bias: NBXTensor | None, N: int, C: int, HxW: int, group: int, eps: float
) -> tuple[NBXTensor, NBXTensor, NBXTensor]:
    """``aten::native_group_norm``: (out, mean, rstd), statistics of shape (N, group)."""
    return _group_norm("native_group_norm", input, weight, bias, N, C, HxW, group, eps)


def group_norm(
    input: NBXTensor,
    num_groups: int,
    weight: NBXTensor | None = None,
    bias: NBXTensor | None = None,
    eps: float = 1e-5,
    cudnn_enabled: bool = True,
) -> NBXTensor:
    """``aten::group_norm`` on an ``(N, C, *)`` input (``cudnn_enabled`` does not change the result)."""
    x = tensor_arg("group_norm", input, "input", dtypes=FLOATING, min_ndim=2)
    n, c = x.shape[0], x.shape[1]
    return _group_norm("group_norm", x, weight, bias, n, c, numel(x.shape[2:]), num_groups, eps)[0]
