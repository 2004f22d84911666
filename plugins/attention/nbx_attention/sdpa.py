"""Scaled dot-product attention and its fused variants, on the flash kernel.

``scaled_dot_product_attention`` takes inputs of any rank >= 2 (leading dims broadcast, dim -3 is
the head dim for ``enable_gqa``). The fused variants take 4-D (B, H, L, E) inputs and keep their
own argument orders and outputs (shapes, dtypes and layouts are those of torch's meta kernels):

- ``_scaled_dot_product_flash_attention``: (out, logsumexp (B, H, L), None, None, L, S, rng_state,
  unused, debug_attn_mask (0,)).
- ``_scaled_dot_product_efficient_attention``: (out, log_sumexp (B, H, ceil(L / 32) * 32) or
  (B, H, 0), philox_seed, philox_offset); rows past L hold +inf.
- ``_scaled_dot_product_cudnn_attention``: (out, logsumexp (B, H, L, 1), None, None, L, S, seed,
  offset, None).
- ``_scaled_dot_product_flash_attention_for_cpu``: (out, logsumexp (B, H, L)); the mask is
  float32 or the query dtype, 2-D or 4-D.

Decisions: an attention mask together with ``is_causal`` combines the two (torch's CPU flash path
does so; its math path refuses). Dropout is inference-only here: ``dropout_p > 0`` raises (the random stream of torch
cannot be reproduced). Random-state outputs are int64 zeros: NBX has no uint64, so the flash
variant's ``rng_state``/``unused`` are int64 where torch's are uint64. A row that sees no key
(fully masked) gives zeros, as torch's CPU sdpa does; its logsumexp is 0 for the CPU variant and
+inf for the CUDA ones. ``return_debug_mask=True`` (dropout debugging) raises.
"""

from __future__ import annotations

import math
from typing import Any

from nbx_core import dtypes as D
from nbx_core.errors import NbxValueError, ShapeError
from nbx_core.ops import views
from nbx_core.ops.creation import full, zeros
from nbx_core.runtime.layouts import in_program
from nbx_core.shape import broadcast_shapes, numel
from nbx_core.tensor import NBXTensor, check_device, empty_tensor
from nbx_core.tensor.args import (
    BOOL,
    FLOATING,
    check_dtype,
    check_min_ndim,
    check_ndim,
    number_arg,
    optional_tensor,
    same_dtype,
    tensor_arg,
)

from .flash_attention import additive_mask, flash_forward

MAX_HEAD_DIM = 256


def _check_qkv(op: str, query: Any, key: Any, value: Any, min_dim: int = 2, exact_dim: int | None = None) -> None:
    for arg, t in (("query", query), ("key", key), ("value", value)):
        tensor_arg(op, t, arg)
        if exact_dim is not None:
            check_ndim(op, t, arg, exact_dim, f"{exact_dim}-D (batch, heads, length, head_dim)")
        check_min_ndim(op, t, arg, min_dim, "(..., length, head_dim)")
    check_dtype(op, query, "query", FLOATING, fix="cast the inputs")
    same_dtype(op, ("query", query), ("key", key), ("value", value))
    E, Ek = query.shape[-1], key.shape[-1]
    if E != Ek:
        raise ShapeError(f"{op}: query head dim {E} != key head dim {Ek}: they must match")
    if key.shape[-2] != value.shape[-2]:
        raise ShapeError(f"{op}: key length {key.shape[-2]} != value length {value.shape[-2]}: they must match")
    for arg, d in (("query/key", E), ("value", value.shape[-1])):
        if not 1 <= d <= MAX_HEAD_DIM:
            raise NbxValueError(f"{op}: {arg} head dim {d} is outside 1..{MAX_HEAD_DIM}, which NBX supports")


def _check_mask(op: str, mask: Any, query: NBXTensor, arg: str, allow_bool: bool = True) -> None:
    if mask is None:
        return
    optional_tensor(op, mask, arg, dtypes={D.float32, query.dtype} | (BOOL if allow_bool else set()))
    if mask.ndim < 2:
        raise ShapeError(f"{op}: {arg} must have at least 2 dims (L, S), got shape {list(mask.shape)}: "
                         "add the missing dims with unsqueeze")


def _check_dropout(op: str, dropout_p: Any) -> None:
    if number_arg(op, dropout_p, "dropout_p") != 0:
        raise NbxValueError(f"{op}: dropout_p={dropout_p} needs random dropout, which NBX (inference) does not "
                            "implement: pass dropout_p=0.0 (the model in eval mode)")


def _scale(op: str, scale: Any, E: int) -> float:
    if scale is None:
        return 1.0 / math.sqrt(E)
    return float(number_arg(op, scale, "scale"))


def _as4d(t: NBXTensor, outer: tuple[int, ...], heads: int, rows: int, cols: int) -> NBXTensor:
    """``t`` broadcast to (*outer, heads, rows, cols) and viewed (or, if it must, copied) as 4-D."""
    full_shape = (*outer, heads, rows, cols)
    t = views.expand(t, full_shape) if tuple(t.shape) != full_shape else t
    return views.reshape(t, (numel(outer), heads, rows, cols))


def _mask4d(op: str, mask: NBXTensor | None, full_shape: tuple[int, ...]) -> NBXTensor | None:
    if mask is None:
        return None
    if mask.ndim > len(full_shape) or broadcast_shapes(op, mask.shape, full_shape) != full_shape:
        raise ShapeError(f"{op}: attn_mask of shape {list(mask.shape)} does not broadcast to the attention "
                         f"weights' shape {list(full_shape)} (..., L, S)")
    return _as4d(mask, full_shape[:-3], full_shape[-3], full_shape[-2], full_shape[-1])


def _attention(op: str, query: NBXTensor, key: NBXTensor, value: NBXTensor, mask: NBXTensor | None,
               causal: bool, scale: float, gqa: bool, out: NBXTensor, lse: NBXTensor | None,
               masked_lse: float) -> None:
    """Broadcast the inputs to 4-D views and run the kernel into ``out`` (shape (*lead, L, Ev))."""
    L, S, E, EV = query.shape[-2], key.shape[-2], query.shape[-1], value.shape[-1]
    lead = tuple(out.shape[:-2])
    outer, H = (lead[:-1], lead[-1]) if lead else ((), 1)
    hk = key.shape[-3] if gqa else H
    hv = value.shape[-3] if gqa else H
    q4 = _as4d(query, outer, H, L, E)
    k4 = _as4d(key, outer, hk, S, E)
    v4 = _as4d(value, outer, hv, S, EV)
    if mask is not None and mask.dtype is D.bool_ and query.dtype is D.float64:
        # Triton 3.6 cannot compile the float64 kernel with a bool mask tile (an MMAv2 assertion);
        # 0 where a key is kept and -inf elsewhere, added to the scores, is the same softmax.
        mask = additive_mask(op, mask)
    m4 = _mask4d(op, mask, (*outer, H, L, S))
    o4 = views.reshape(out, (numel(outer), H, L, EV))
    l4 = views.reshape(lse, (numel(outer), H, L)) if lse is not None else None
    flash_forward(q4, k4, v4, m4, o4, l4, scale=scale, causal=bool(causal), masked_lse=masked_lse)


def _lead_shape(op: str, query: NBXTensor, key: NBXTensor, value: NBXTensor, gqa: bool) -> tuple[int, ...]:
    """The broadcast leading shape (heads last) of the output."""
    if not gqa:
        return broadcast_shapes(op, query.shape[:-2], key.shape[:-2], value.shape[:-2])
    for arg, t in (("query", query), ("key", key), ("value", value)):
        if t.ndim < 3:
            raise ShapeError(f"{op}: enable_gqa needs a heads dim (-3) in {arg}, got shape {list(t.shape)}")
    hq, hk, hv = query.shape[-3], key.shape[-3], value.shape[-3]
    if hk == 0 or hv == 0 or hq % hk or hq % hv:
        raise ShapeError(f"{op}: number of heads in key ({hk}) and value ({hv}) must divide the number of heads "
                         f"in query ({hq}) for grouped-query attention")
    return (*broadcast_shapes(op, query.shape[:-3], key.shape[:-3], value.shape[:-3]), hq)


def scaled_dot_product_attention(query: NBXTensor, key: NBXTensor, value: NBXTensor,
                                 attn_mask: NBXTensor | None = None, dropout_p: float = 0.0,
                                 is_causal: bool = False, *, scale: float | None = None,
                                 enable_gqa: bool = False) -> NBXTensor:
    """``aten::scaled_dot_product_attention``: softmax(q kᵀ · scale + mask) v, with torch's broadcasting,
    causal (top-left aligned, combined with a mask when both are given) and grouped-query heads."""
    op = "scaled_dot_product_attention"
    _check_qkv(op, query, key, value)
    _check_mask(op, attn_mask, query, "attn_mask")
    check_device(op, query, key, value, attn_mask)
    _check_dropout(op, dropout_p)
    sc = _scale(op, scale, query.shape[-1])
    lead = _lead_shape(op, query, key, value, bool(enable_gqa))
    shape = (*lead, query.shape[-2], value.shape[-1])
    if in_program() and len(shape) == 4:
        # Heads interleaved per position, as torch's CUDA kernels lay them out: the transpose(1, 2)
        # and reshape back to (batch, sequence, features) that follow attention are then a view.
        out = _permuted(shape, (0, 2, 1, 3), query.dtype, query.device)
    else:
        out = empty_tensor(shape, query.dtype, query.device)
    _attention(op, query, key, value, attn_mask, is_causal, sc, bool(enable_gqa), out, None, 0.0)
    return out


def _fused_lead(op: str, query: NBXTensor, key: NBXTensor, value: NBXTensor) -> tuple[int, int]:
    """(B, H) of 4-D fused-variant inputs; key/value heads may divide the query heads."""
    B, H = query.shape[0], query.shape[1]
    for arg, t in (("key", key), ("value", value)):
        if t.shape[0] != B:
            raise ShapeError(f"{op}: {arg} batch {t.shape[0]} != query batch {B}: they must match")
        if t.shape[1] == 0 or H % t.shape[1]:
            raise ShapeError(f"{op}: {arg} heads ({t.shape[1]}) must divide query heads ({H})")
    return B, H


def _permuted(shape: tuple[int, ...], order: tuple[int, ...], dtype: D.DType, device: Any) -> NBXTensor:
    """An empty tensor of ``shape`` laid out as its dims permuted by ``order`` (torch's layouts)."""
    base = empty_tensor(tuple(shape[i] for i in order), dtype, device)
    inverse = tuple(order.index(i) for i in range(len(order)))
    return views.permute(base, inverse)


def _rng(device: Any, shape: tuple[int, ...] = ()) -> NBXTensor:
    return zeros(shape, dtype=D.int64, device=device)


def _fused(op: str, query: Any, key: Any, value: Any, bias: Any, dropout_p: Any, is_causal: Any, scale: Any,
           *, same_head_dim: bool, mask_arg: str, out_order: tuple[int, ...],
           lse_shape: tuple[int, ...] | None, lse_order: tuple[int, ...], masked_lse: float,
           lse_dtype: D.DType = D.float32) -> tuple[NBXTensor, NBXTensor | None]:
    """Shared body of the fused variants: checks, output in torch's layout, logsumexp (padded with inf)."""
    _check_qkv(op, query, key, value, exact_dim=4)
    if same_head_dim and value.shape[-1] != query.shape[-1]:
        raise ShapeError(f"{op}: value head dim {value.shape[-1]} != query head dim {query.shape[-1]}: this "
                         "variant needs one head size; use scaled_dot_product_attention")
    _check_mask(op, bias, query, mask_arg, allow_bool=mask_arg == "attn_bias")
    check_device(op, query, key, value, bias)
    _check_dropout(op, dropout_p)
    sc = _scale(op, scale, query.shape[-1])
    B, H = _fused_lead(op, query, key, value)
    L = query.shape[2]
    out = _permuted((B, H, L, value.shape[-1]), out_order, query.dtype, query.device)
    lse = None
    if lse_shape is not None:
        if lse_shape[2] > L:
            lse = full(lse_shape, float("inf"), dtype=lse_dtype, device=query.device)
        else:
            lse = _permuted(lse_shape, lse_order, lse_dtype, query.device)
    view = views.narrow(lse, 2, 0, L) if lse is not None and lse_shape[2] != L else lse
    if view is not None and view.ndim == 4:
        view = views.select(view, 3, 0)
    _attention(op, query, key, value, bias, is_causal, sc, True, out, view, masked_lse)
    return out, lse


def _scaled_dot_product_flash_attention(query: NBXTensor, key: NBXTensor, value: NBXTensor, dropout_p: float = 0.0,
                                        is_causal: bool = False, return_debug_mask: bool = False, *,
                                        scale: float | None = None) -> tuple[Any, ...]:
    """``aten::_scaled_dot_product_flash_attention`` (the CUDA flash kernel's outputs, inference only)."""
    op = "_scaled_dot_product_flash_attention"
    if return_debug_mask:
        raise NbxValueError(f"{op}: return_debug_mask=True (dropout debugging) is not supported: pass False")
    out, lse = _fused(op, query, key, value, None, dropout_p, is_causal, scale, same_head_dim=True,
                      mask_arg="attn_bias", out_order=(0, 1, 2, 3), lse_shape=tuple(query.shape[:3]),
                      lse_order=(0, 1, 2), masked_lse=float("inf"))
    debug = empty_tensor((0,), query.dtype, query.device)
    return (out, lse, None, None, query.shape[2], key.shape[2], _rng(query.device, (2,)), _rng(query.device),
            debug)


def _scaled_dot_product_efficient_attention(query: NBXTensor, key: NBXTensor, value: NBXTensor,
                                            attn_bias: NBXTensor | None, compute_log_sumexp: bool,
                                            dropout_p: float = 0.0, is_causal: bool = False, *,
                                            scale: float | None = None) -> tuple[Any, ...]:
    """``aten::_scaled_dot_product_efficient_attention``: output laid out (B, L, H, Ev), logsumexp padded
    to a multiple of 32 rows (empty unless ``compute_log_sumexp``)."""
    op = "_scaled_dot_product_efficient_attention"
    B, H, L = (query.shape[:3] if isinstance(query, NBXTensor) and query.ndim == 4 else (0, 0, 0))
    rows = -(-L // 32) * 32 if compute_log_sumexp else 0
    out, lse = _fused(op, query, key, value, attn_bias, dropout_p, is_causal, scale, same_head_dim=False,
                      mask_arg="attn_bias", out_order=(0, 2, 1, 3), lse_shape=(B, H, rows) if rows else None,
                      lse_order=(0, 1, 2), masked_lse=float("inf"))
    if lse is None:
        lse = empty_tensor((B, H, 0), D.float32, query.device)
    return out, lse, _rng(query.device), _rng(query.device)


def _scaled_dot_product_cudnn_attention(query: NBXTensor, key: NBXTensor, value: NBXTensor,
                                        attn_bias: NBXTensor | None, compute_log_sumexp: bool,
                                        dropout_p: float = 0.0, is_causal: bool = False,
                                        return_debug_mask: bool = False, *,
                                        scale: float | None = None) -> tuple[Any, ...]:
    """``aten::_scaled_dot_product_cudnn_attention``: logsumexp (B, H, L, 1) is always returned (as torch's
    meta kernel does), debug mask None."""
    op = "_scaled_dot_product_cudnn_attention"
    if return_debug_mask:
        raise NbxValueError(f"{op}: return_debug_mask=True (dropout debugging) is not supported: pass False")
    B, H, L = (query.shape[:3] if isinstance(query, NBXTensor) and query.ndim == 4 else (0, 0, 0))
    out, lse = _fused(op, query, key, value, attn_bias, dropout_p, is_causal, scale, same_head_dim=False,
                      mask_arg="attn_bias", out_order=(0, 1, 2, 3), lse_shape=(B, H, L, 1), lse_order=(0, 1, 2, 3),
                      masked_lse=float("inf"))
    return (out, lse, None, None, L, key.shape[2], _rng(query.device), _rng(query.device), None)


def _scaled_dot_product_flash_attention_for_cpu(query: NBXTensor, key: NBXTensor, value: NBXTensor,
                                                dropout_p: float = 0.0, is_causal: bool = False, *,
                                                attn_mask: NBXTensor | None = None,
                                                scale: float | None = None) -> tuple[NBXTensor, NBXTensor]:
    """``aten::_scaled_dot_product_flash_attention_for_cpu``: output laid out (B, L, H, E), logsumexp
    (B, H, L) laid out (B, L, H), float32 (float64 for float64 inputs); the mask is 2-D or 4-D and float."""
    op = "_scaled_dot_product_flash_attention_for_cpu"
    if isinstance(attn_mask, NBXTensor) and attn_mask.ndim not in (2, 4):
        raise ShapeError(f"{op}: attn_mask must be 2-D (L, S) or 4-D (B, H, L, S), got shape "
                         f"{list(attn_mask.shape)}")
    shape = tuple(query.shape[:3]) if isinstance(query, NBXTensor) and query.ndim == 4 else (0, 0, 0)
    lse_dtype = D.float64 if isinstance(query, NBXTensor) and query.dtype is D.float64 else D.float32
    # torch's CPU kernel lays the output out like the query: (B, L, H, E) when the query is a
    # transposed view of that layout, else contiguous.
    blhe = isinstance(query, NBXTensor) and query.ndim == 4 and query.stride(1) < query.stride(2)
    return _fused(op, query, key, value, attn_mask, dropout_p, is_causal, scale, same_head_dim=True,
                  mask_arg="attn_mask", out_order=(0, 2, 1, 3) if blhe else (0, 1, 2, 3), lse_shape=shape,
                  lse_order=(0, 2, 1),
                  masked_lse=0.0, lse_dtype=lse_dtype)
