"""``aten::_weight_norm`` and ``aten::_weight_norm_interface``: ``w = v * g / ||v||``.

The norm is torch's ``norm_except_dim(v, 2, dim)``: the 2-norm over every dim but ``dim``, so one
value per index of ``dim``; ``dim=-1`` is not wrapped but means the norm of the whole tensor (what
``torch.nn.utils.weight_norm(dim=None)`` passes); other negative dims wrap. Any dim works for both
ops (torch's CPU ``_weight_norm_interface`` takes only the first or last dim).

``g`` holding one value per norm is read in the norm's layout whatever its shape (torch's fused
path); otherwise it broadcasts against the norm's keep-dim shape (torch's composite path).
``_weight_norm_interface`` returns the norm in ``g``'s shape, float32 for half-type ``v``.
"""

from __future__ import annotations

# nbx_core.runtime.launch picks the backend, which must happen before Triton is first imported.
import nbx_core.runtime.launch  # noqa: F401

# isort: split
import triton
import triton.language as tl

from nbx_core import dtypes as D
from nbx_core.errors import ShapeError
from nbx_core.ops.copy import contiguous
from nbx_core.ops.creation import zeros
from nbx_core.ops.views import reshape
from nbx_core.runtime.pointwise import pointwise
from nbx_core.shape import numel, wrap_dim
from nbx_core.tensor import NBXTensor, check_device
from nbx_core.tensor.args import FLOATING, int_arg, same_dtype, tensor_arg

from .moments import moments


@triton.jit
def _norm_from_moments(mean, var, sc):
    # sum(x^2) = n * (var + mean^2), sc = (n,)
    return tl.sqrt(sc[0] * (var + mean * mean))


@triton.jit
def _scale(v, g, norm, sc):
    return v * (g / norm)


def _norm(op: str, v: NBXTensor, g: NBXTensor, dim: int) -> tuple[NBXTensor, tuple[int, ...]]:
    """The norm (in the statistics dtype) and its keep-dim shape."""
    v = tensor_arg(op, v, "v", dtypes=FLOATING, min_ndim=1)
    tensor_arg(op, g, "g", dtypes=FLOATING)
    check_device(op, v, g)
    same_dtype(op, ("v", v), ("g", g))
    int_arg(op, dim, "dim")
    vc = contiguous(v)
    if dim == -1:
        units, outer, inner = 1, 1, v.numel()
        keep = (1,) * v.ndim
    else:
        d = wrap_dim(op, dim, v.ndim)
        units, outer, inner = v.shape[d], numel(v.shape[:d]), numel(v.shape[d + 1 :])
        keep = tuple(s if i == d else 1 for i, s in enumerate(v.shape))
    count = outer * inner
    sdt = D.compute_dtype(v.dtype)
    if count == 0:
        return zeros(keep, dtype=sdt, device=v.device), keep
    mean, var, _ = moments(vc, units, outer, inner, inner, units * inner)
    norm = pointwise(op, _norm_from_moments, mean, var, sc=(float(count),))
    return reshape(norm, keep), keep


def _weight(op: str, v: NBXTensor, g: NBXTensor, norm: NBXTensor, keep: tuple[int, ...]) -> NBXTensor:
    gv = reshape(g, keep) if g.numel() == numel(keep) else g
    return pointwise(op, _scale, v, gv, norm, dtype=v.dtype)


def _weight_norm(v: NBXTensor, g: NBXTensor, dim: int = 0) -> NBXTensor:
    """``aten::_weight_norm``: ``v * (g / norm_except_dim(v, 2, dim))``."""
    op = "_weight_norm"
    norm, keep = _norm(op, v, g, dim)
    return _weight(op, v, g, norm, keep)


def _weight_norm_interface(v: NBXTensor, g: NBXTensor, dim: int = 0) -> tuple[NBXTensor, NBXTensor]:
    """``aten::_weight_norm_interface``: (w, norm), the norm shaped like ``g``."""
    op = "_weight_norm_interface"
    norm, keep = _norm(op, v, g, dim)
    if g.numel() != numel(keep):
        raise ShapeError(
            f"{op}: g must hold one value per norm ({numel(keep)} for dim={dim}), got shape {list(g.shape)}"
        )
    return _weight(op, v, g, norm, keep), reshape(norm, g.shape)
