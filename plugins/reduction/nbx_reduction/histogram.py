"""bincount: an atomic-add histogram; the output size (max + 1) is read back on the host first."""

from __future__ import annotations

import builtins

import triton
import triton.language as tl

from nbx_core import dtypes as D
from nbx_core.errors import NbxValueError, ShapeError
from nbx_core.runtime.kernels.copy import cast_to
from nbx_core.runtime.kernels.indexing import block_indices, needs_int64
from nbx_core.runtime.launch import block_size, cdiv, launch
from nbx_core.tensor import NBXTensor, check_device, empty_tensor
from nbx_core.tensor.args import INTEGRAL, tensor_arg

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
