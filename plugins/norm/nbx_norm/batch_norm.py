"""Batch norm in every ATen form, on ``(N, C, *)`` inputs, with torch's CPU semantics.

Training normalises with the batch statistics of each channel (biased variance) and returns them
as ``save_mean`` and ``save_invstd``; given running stats, it updates them in place:
``running = (1 - momentum) * running + momentum * stat``, the variance unbiased by n / (n - 1).
Inference normalises with the running stats and returns empty (0,) statistics, as torch's CPU
kernel does. Statistics are float32 for a float16/bfloat16 input with float32 parameters, else the
input's dtype.

``cudnn_batch_norm`` is CUDA-only in torch, so its reference here is torch's ``native_batch_norm``:
the same (out, save_mean, save_invstd) plus the cuDNN reserve buffer, which NBX does not need
and returns as an empty uint8 tensor.
"""

from __future__ import annotations

from typing import Any

# nbx_core.runtime.launch picks the backend, which must happen before Triton is first imported.
import nbx_core.runtime.launch  # noqa: F401

# isort: split
import triton
import triton.language as tl

from nbx_core import dtypes as D
from nbx_core.errors import NbxTypeError, NbxValueError
from nbx_core.ops.copy import clone, contiguous
from nbx_core.ops.creation import empty
from nbx_core.ops.layout import suggest_memory_format
from nbx_core.runtime.pointwise import pointwise
from nbx_core.shape import numel
from nbx_core.tensor import NBXTensor, empty_tensor
from nbx_core.tensor.args import FLOATING, tensor_arg

from .moments import apply_channels, moments
from .params import check_vector, stat_dtype

Stats = tuple[NBXTensor, NBXTensor, NBXTensor]


@triton.jit
def _ema(running, stat, sc):
    return running * (1.0 - sc[0]) + stat * sc[0]


@triton.jit
def _ema_unbiased(running, var, sc):
    # sc = (momentum, n); n == 1 gives 0 / 0 = nan, as torch does.
    return running * (1.0 - sc[0]) + var * sc[1] / (sc[1] - 1.0) * sc[0]


@triton.jit
def _invstd(var, sc):
    return 1.0 / tl.sqrt(var + sc[0])


@triton.jit
def _scale(var, weight, sc):
    return 1.0 / tl.sqrt(var + sc[0]) * weight


@triton.jit
def _normalize(x, scale, mean, bias, sc):
    # torch's CPU inference form: alpha = invstd * weight, beta = bias - mean * alpha.
    return x * scale + (bias - mean * scale)


def _per_channel(t: NBXTensor, ndim: int) -> NBXTensor:
    """A (C,) vector as (C, 1, ..., 1), broadcasting over an (N, C, *) input of ``ndim`` dims."""
    return NBXTensor(t.storage, (t.shape[0],) + (1,) * (ndim - 2), (t.stride(0),) + (0,) * (ndim - 2),
                     t.storage_offset(), t.dtype)


def _inference(op: str, x: NBXTensor, weight: NBXTensor | None, bias: NBXTensor | None, mean: NBXTensor,
               var: NBXTensor, eps: float) -> NBXTensor:
    # Elementwise over x with per-channel operands, so a plan fuses it with what follows and into the
    # convolution before it (nbx_core.runtime.fusion); the channel scale is one launch over C.
    comp = D.compute_dtype(x.dtype)
    if weight is None:
        scale = pointwise(op, _invstd, var, compute=comp, out_dtype=comp, sc=(float(eps),))
    else:
        scale = pointwise(op, _scale, var, weight, compute=comp, out_dtype=comp, sc=(float(eps),))
    n = x.ndim
    shift = _per_channel(bias, n) if bias is not None else 0.0
    # Laid out in the format torch suggests for x (channels-last stays so; other layouts are row-major).
    out = empty(*x.shape, dtype=x.dtype, device=x.device, memory_format=suggest_memory_format(x))
    return pointwise(op, _normalize, x, _per_channel(scale, n), _per_channel(mean, n), shift, dtype=x.dtype,
                     compute=comp, out_dtype=x.dtype, out=out)


def _batch_norm(op: str, input: NBXTensor, weight: NBXTensor | None, bias: NBXTensor | None,
                running_mean: NBXTensor | None, running_var: NBXTensor | None, training: bool, momentum: float,
                eps: float) -> Stats:
    x = tensor_arg(op, input, "input", dtypes=FLOATING, min_ndim=2)
    if not isinstance(training, bool):
        raise NbxTypeError(f"{op}: training must be a bool, got {type(training).__name__}")
    params = {"weight": weight, "bias": bias, "running_mean": running_mean, "running_var": running_var}
    sdt = stat_dtype(op, x, params)
    c = x.shape[1]
    for name, t in params.items():
        check_vector(op, t, name, c)
    if (running_mean is None) != (running_var is None):
        raise NbxValueError(f"{op}: pass both running_mean and running_var, or neither")
    if not training and running_mean is None:
        raise NbxValueError(f"{op}: inference (training=False) needs running_mean and running_var")
    if training and x.numel() == 0:
        raise NbxValueError(f"{op}: training needs an input with at least one element, got shape {list(x.shape)}")
    if not training:
        assert running_mean is not None and running_var is not None
        out = _inference(op, x, weight, bias, running_mean, running_var, eps)
        empty = empty_tensor((0,), sdt, x.device)
        return out, empty, empty_tensor((0,), sdt, x.device)
    out = empty_tensor(x.shape, x.dtype, x.device)
    inner = numel(x.shape[2:])
    w = contiguous(weight) if weight is not None else None
    b = contiguous(bias) if bias is not None else None
    xc = contiguous(x)
    count = x.shape[0] * inner
    mean, var, rstd = moments(xc, c, x.shape[0], inner, inner, c * inner, eps)
    apply_channels(xc, out, mean, rstd, w, b, c, inner, 0, 1)
    if running_mean is not None:
        pointwise(op, _ema, running_mean, mean, sc=(float(momentum),), out=running_mean)
        pointwise(op, _ema_unbiased, running_var, var, sc=(float(momentum), float(count)), out=running_var)
    if sdt is not mean.dtype:
        mean, rstd = mean.to(sdt), rstd.to(sdt)
    return out, mean, rstd


def native_batch_norm(input: NBXTensor, weight: NBXTensor | None, bias: NBXTensor | None,
                      running_mean: NBXTensor | None, running_var: NBXTensor | None, training: bool,
                      momentum: float, eps: float) -> Stats:
    """``aten::native_batch_norm``: (out, save_mean, save_invstd); updates running stats in training."""
    return _batch_norm("native_batch_norm", input, weight, bias, running_mean, running_var, training,
                       momentum, eps)


def batch_norm(input: NBXTensor, weight: NBXTensor | None, bias: NBXTensor | None,
               running_mean: NBXTensor | None, running_var: NBXTensor | None, training: bool, momentum: float,
               eps: float, cudnn_enabled: bool) -> NBXTensor:
    """``aten::batch_norm``: the output of native_batch_norm (``cudnn_enabled`` changes nothing).

    An empty input comes back as a copy, whatever its rank or mode, as torch's composite returns it.
    """
    if isinstance(input, NBXTensor) and input.numel() == 0:
        return clone(input)
    return _batch_norm("batch_norm", input, weight, bias, running_mean, running_var, training, momentum, eps)[0]


_LEGIT = ("running_mean", "running_var", "training", "momentum", "eps")
_LEGIT_NO_STATS = ("training", "momentum", "eps")


def _native_batch_norm_legit(input: NBXTensor, weight: NBXTensor | None, bias: NBXTensor | None, *args: Any,
                             **kwargs: Any) -> Stats:
    """``aten::_native_batch_norm_legit``, both overloads.

    ``default``: (..., running_mean, running_var, training, momentum, eps), stats updated in place;
    ``no_stats``: (..., training, momentum, eps), batch statistics only.
    """
    op = "_native_batch_norm_legit"
    with_stats = "running_mean" in kwargs or (bool(args) and isinstance(args[0], NBXTensor))
    names = _LEGIT if with_stats else _LEGIT_NO_STATS
    if len(args) > len(names) or set(kwargs) - set(names[len(args):]):
        raise NbxTypeError(f"{op}: expected arguments (input, weight, bias, {', '.join(names)}), got "
                           f"{len(args)} more positional and keywords {sorted(kwargs)}")
    bound = dict(zip(names, args, strict=False)) | kwargs
    missing = [n for n in names if n not in bound]
    if missing:
        raise NbxTypeError(f"{op}: missing arguments {missing}")
    return _batch_norm(op, input, weight, bias, bound.get("running_mean"), bound.get("running_var"),
                       bound["training"], bound["momentum"], bound["eps"])


def _native_batch_norm_legit_no_training(input: NBXTensor, weight: NBXTensor | None, bias: NBXTensor | None,
                                         running_mean: NBXTensor, running_var: NBXTensor, momentum: float,
                                         eps: float) -> Stats:
    """``aten::_native_batch_norm_legit_no_training`` (what torch.export emits for eval-mode BN)."""
    return _batch_norm("_native_batch_norm_legit_no_training", input, weight, bias, running_mean, running_var,
                       False, momentum, eps)


def cudnn_batch_norm(input: NBXTensor, weight: NBXTensor, bias: NBXTensor | None,
                     running_mean: NBXTensor | None, running_var: NBXTensor | None, training: bool,
                     exponential_average_factor: float,
                     epsilon: float) -> tuple[NBXTensor, NBXTensor, NBXTensor, NBXTensor]:
    """``aten::cudnn_batch_norm``: native_batch_norm's three results plus an empty uint8 reserve buffer."""
    op = "cudnn_batch_norm"
    if not isinstance(weight, NBXTensor):
        raise NbxTypeError(f"{op}: weight is required (a tensor of C elements), got {type(weight).__name__}")
    out, mean, invstd = _batch_norm(op, input, weight, bias, running_mean, running_var, training,
                                    exponential_average_factor, epsilon)
    return out, mean, invstd, empty_tensor((0,), D.uint8, input.device)
