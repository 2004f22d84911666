"""aten::lstm, inference semantics: the ``.input`` (padded) and ``.data`` (packed sequence) overloads.

Per layer and direction, one GEMM projects every time step's input at once (``x @ w_ih.T + b_ih``,
float32 gates; float64 for float64), then each step runs a GEMM that adds ``h @ w_hh.T`` into that
step's gates and a cell kernel that adds ``b_hh``, applies the gates (order i, f, g, o) and
updates ``c`` and ``h`` in place in the ``c_n``/``h_n`` slices, which hold the running state.
With projections (``proj_size > 0``: a fifth/third weight per layer) ``h = w_hr @ (o * tanh(c))``.
Packed input steps over ``batch_sizes``: step t uses the first ``batch_sizes[t]`` rows of the
state, so every sequence's final state stays in place when it ends (forward), and a sequence
starts from ``h0``/``c0`` when it first appears (reverse). ``h`` and ``c`` round to the input dtype
after each step, as torch's do; gate math is float32 (float64 for float64). Dropout between layers
is random, so ``train=True`` with ``dropout > 0`` and several layers is refused.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import triton
import triton.language as tl
from nbx_core import dtypes as D
from nbx_core.errors import NbxTypeError, NbxValueError, ShapeError
from nbx_core.ops.copy import copy_
from nbx_core.ops.views import narrow, permute, select
from nbx_core.runtime.kernels.copy import cast_to
from nbx_core.runtime.launch import cdiv, launch, next_pow2
from nbx_core.runtime.pointwise import tl_dtype
from nbx_core.runtime.tuning import Key, Tunable, bucket
from nbx_core.tensor import NBXTensor, check_device, empty_tensor
from nbx_core.tensor.args import FLOATING, INTEGRAL, check_dtype, same_dtype, tensor_arg

from .matmul import gemm

OP = "aten::lstm"
LSTM_CELL = Tunable(
    "linalg", "lstm_cell", {"BLOCK_B": "pow2", "BLOCK_H": "pow2", "num_warps": "pow2"},
    key=lambda size, rows, hidden: Key({"itemsize": size, "B": bucket(rows), "H": bucket(hidden)}),
    rule=lambda size, rows, hidden: {"BLOCK_B": 16, "BLOCK_H": 64, "num_warps": 4},
    interpreter=lambda size, rows, hidden: {"BLOCK_B": min(next_pow2(rows), 64),
                                            "BLOCK_H": min(max(next_pow2(hidden), 16), 256), "num_warps": 4},
    tables=Path(__file__).with_name("configs"))
"""The cell kernel's tiles: BLOCK_B batch rows by BLOCK_H hidden units, and its warps. Arguments:
the state's itemsize, the batch rows and the hidden size."""


@triton.jit
def _sigmoid(x):
    return 1.0 / (1.0 + tl.exp(-x))


@triton.jit
def _tanh(x):
    # From exp(-2|x|) <= 1: no overflow, and accurate near 0 unlike 2 * sigmoid(2x) - 1.
    e = tl.exp(-2.0 * tl.abs(x))
    t = (1.0 - e) / (1.0 + e)
    return tl.where(x < 0, -t, t)


@triton.jit
def _lstm_cell_kernel(g_ptr, bias_ptr, c_ptr, h_ptr, rows, H, sgb, sgh, scb, sch, shb, shh,
                      HAS_BIAS: tl.constexpr, ACC: tl.constexpr, BLOCK_B: tl.constexpr, BLOCK_H: tl.constexpr):
    rb = tl.program_id(0) * BLOCK_B + tl.arange(0, BLOCK_B)
    rh = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    mask = (rb[:, None] < rows) & (rh[None, :] < H)
    g = g_ptr + rb[:, None] * sgb + rh[None, :] * sgh
    gi = tl.load(g, mask=mask, other=0).to(ACC)
    gf = tl.load(g + H * sgh, mask=mask, other=0).to(ACC)
    gg = tl.load(g + 2 * H * sgh, mask=mask, other=0).to(ACC)
    go = tl.load(g + 3 * H * sgh, mask=mask, other=0).to(ACC)
    if HAS_BIAS:
        hmask = rh < H
        gi += tl.load(bias_ptr + rh, mask=hmask, other=0).to(ACC)[None, :]
        gf += tl.load(bias_ptr + H + rh, mask=hmask, other=0).to(ACC)[None, :]
        gg += tl.load(bias_ptr + 2 * H + rh, mask=hmask, other=0).to(ACC)[None, :]
        go += tl.load(bias_ptr + 3 * H + rh, mask=hmask, other=0).to(ACC)[None, :]
    c_off = rb[:, None] * scb + rh[None, :] * sch
    c_prev = tl.load(c_ptr + c_off, mask=mask, other=0).to(ACC)
    c = _sigmoid(gf) * c_prev + _sigmoid(gi) * _tanh(gg)
    c_store = cast_to(c, c_ptr.dtype.element_ty)
    tl.store(c_ptr + c_off, c_store, mask=mask)
    # h comes from c as rounded to the state dtype, as torch's step-by-step ops compute it.
    h = _sigmoid(go) * _tanh(c_store.to(ACC))
    tl.store(h_ptr + rb[:, None] * shb + rh[None, :] * shh, cast_to(h, h_ptr.dtype.element_ty), mask=mask)


def _t(w: NBXTensor) -> NBXTensor:
    return permute(w, 1, 0)


def cell(gates: NBXTensor, b_hh: NBXTensor | None, c: NBXTensor, h: NBXTensor,
         config: Mapping[str, int] | None = None) -> None:
    """One LSTM step of every row: ``gates`` (rows, 4 * hidden) plus ``b_hh`` update the state ``c``
    in place and write ``h`` (both (rows, hidden)); ``config`` replaces the lookup of :data:`LSTM_CELL`."""
    rows, hidden = c.shape
    if rows == 0 or hidden == 0:
        return
    cfg = LSTM_CELL.choose(config, c.dtype.itemsize, rows, hidden)
    bb, bh = cfg["BLOCK_B"], cfg["BLOCK_H"]
    launch(_lstm_cell_kernel, (cdiv(rows, bb), cdiv(hidden, bh)), gates, b_hh if b_hh is not None else c, c, h,
           rows, hidden, *gates.stride(), *c.stride(), *h.stride(), HAS_BIAS=b_hh is not None,
           ACC=tl_dtype(gates.dtype), BLOCK_B=bb, BLOCK_H=bh, num_warps=cfg["num_warps"])


class _Layer:
    """One layer-direction's weights, checked."""

    def __init__(self, weights: Sequence[NBXTensor], has_biases: bool, where: str) -> None:
        self.w_ih, self.w_hh = weights[0], weights[1]
        self.b_ih, self.b_hh = (weights[2], weights[3]) if has_biases else (None, None)
        self.w_hr = weights[4 if has_biases else 2] if len(weights) in (3, 5) else None
        four_h = self.w_ih.shape[0] if self.w_ih.ndim == 2 else -1
        self.hidden = four_h // 4
        self.out = self.w_hr.shape[0] if self.w_hr is not None else self.hidden
        shapes = [("w_ih", self.w_ih, 2, four_h), ("w_hh", self.w_hh, 2, four_h)]
        if has_biases:
            shapes += [("b_ih", self.b_ih, 1, four_h), ("b_hh", self.b_hh, 1, four_h)]
        for name, w, ndim, rows in shapes:
            if w.ndim != ndim or w.shape[0] != rows or rows % 4:
                raise ShapeError(f"{OP}: {where} {name} has shape {w.shape}; expected {ndim}-D with "
                                 f"4 * hidden_size = {four_h} rows")
        if self.w_hh.shape[1] != self.out:
            raise ShapeError(f"{OP}: {where} w_hh has shape {self.w_hh.shape}; expected ({four_h}, {self.out})")
        if self.w_hr is not None and (self.w_hr.ndim != 2 or self.w_hr.shape[1] != self.hidden):
            raise ShapeError(f"{OP}: {where} w_hr has shape {self.w_hr.shape}; expected (proj_size, {self.hidden})")


def _layers(params: Sequence[NBXTensor], has_biases: bool, num_layers: int, dirs: int) -> list[_Layer]:
    n = num_layers * dirs
    if num_layers < 1 or len(params) % max(n, 1) or len(params) // n not in ((4, 5) if has_biases else (2, 3)):
        group = "w_ih, w_hh, b_ih, b_hh" if has_biases else "w_ih, w_hh"
        raise NbxValueError(
            f"{OP}: got {len(params)} params for num_layers={num_layers}, bidirectional={dirs == 2}, "
            f"has_biases={has_biases}: expected {n} groups of {group} (plus w_hr with projections)")
    per = len(params) // n
    return [_Layer(params[i * per:(i + 1) * per], has_biases, f"layer {i // dirs} direction {i % dirs}")
            for i in range(n)]


def _check(input: NBXTensor, hx: Sequence[NBXTensor], params: Sequence[NBXTensor], dropout: float,
           train: bool, num_layers: int) -> None:
    named = [("input", input), *((f"hx[{i}]", h) for i, h in enumerate(hx)),
             *((f"params[{i}]", p) for i, p in enumerate(params))]
    for name, t in named:
        tensor_arg(OP, t, name)
    same_dtype(OP, *named)
    check_dtype(OP, input, "input", FLOATING)
    if len(hx) != 2:
        raise NbxValueError(f"{OP}: hx must be [h0, c0], got {len(hx)} tensors")
    check_device(OP, input, *hx, *params)
    if train and dropout > 0 and num_layers > 1:
        raise NbxValueError(f"{OP}: dropout={dropout} with train=True is random and NBX runs inference only: "
                            "pass train=False")


def _run(steps: list[tuple[int, int]], x: NBXTensor, hx: Sequence[NBXTensor], layers: list[_Layer],
         dirs: int, batch: int) -> tuple[NBXTensor, NBXTensor, NBXTensor]:
    """The layers over a packed sequence: ``x`` (rows, in), ``steps`` the (first row, rows) of each step."""
    h0, c0 = hx
    n = len(layers)
    hidden, out_size = layers[0].hidden, layers[0].out
    for name, t, last in (("hx[0] (h0)", h0, out_size), ("hx[1] (c0)", c0, hidden)):
        if t.shape != (n, batch, last):
            raise ShapeError(f"{OP}: {name} has shape {t.shape}; expected ({n}, {batch}, {last})")
    h_n, c_n = empty_tensor(h0.shape, x.dtype, x.device), empty_tensor(c0.shape, x.dtype, x.device)
    copy_(h_n, h0)
    copy_(c_n, c0)
    acc = D.float64 if x.dtype is D.float64 else D.float32
    for li in range(n // dirs):
        if x.shape[1] != layers[li * dirs].w_ih.shape[1]:
            raise ShapeError(f"{OP}: layer {li} input has {x.shape[1]} features but w_ih expects "
                             f"{layers[li * dirs].w_ih.shape[1]}")
        out = empty_tensor((x.shape[0], dirs * out_size), x.dtype, x.device)
        for d in range(dirs):
            lay = layers[li * dirs + d]
            if (lay.hidden, lay.out) != (hidden, out_size):
                raise ShapeError(f"{OP}: layer {li} direction {d} has hidden/proj sizes ({lay.hidden}, {lay.out}); "
                                 f"layer 0 has ({hidden}, {out_size})")
            gates = gemm(OP, x, _t(lay.w_ih), lay.b_ih, beta=1, out_dtype=acc)
            h, c = select(h_n, 0, li * dirs + d), select(c_n, 0, li * dirs + d)
            h_pre = empty_tensor((batch, hidden), x.dtype, x.device) if lay.w_hr is not None else None
            out_d = narrow(out, 1, d * out_size, out_size)
            for start, rows in (steps if d == 0 else steps[::-1]):
                g = narrow(gates, 0, start, rows)
                h_rows, c_rows = narrow(h, 0, 0, rows), narrow(c, 0, 0, rows)
                gemm(OP, h_rows, _t(lay.w_hh), g, beta=1, out=g)
                if h_pre is None:
                    cell(g, lay.b_hh, c_rows, h_rows)
                else:
                    hp = narrow(h_pre, 0, 0, rows)
                    cell(g, lay.b_hh, c_rows, hp)
                    gemm(OP, hp, _t(lay.w_hr), out=h_rows)
                copy_(narrow(out_d, 0, start, rows), h_rows)
        x = out
    return x, h_n, c_n


def lstm(input: NBXTensor, *args: Any) -> tuple[NBXTensor, NBXTensor, NBXTensor]:
    """aten::lstm.input(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first)
    and aten::lstm.data(data, batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidirectional)
    → (output, h_n, c_n)."""
    if len(args) == 8 and isinstance(args[0], list | tuple):
        return _lstm_input(input, *args)
    if len(args) == 8 and isinstance(args[0], NBXTensor):
        return _lstm_data(input, *args)
    raise NbxTypeError(f"{OP}: expected the .input overload (input, hx, params, has_biases, num_layers, dropout, "
                       "train, bidirectional, batch_first) or the .data overload (data, batch_sizes, hx, params, "
                       f"has_biases, num_layers, dropout, train, bidirectional); got {len(args) + 1} arguments")


def _lstm_input(input: NBXTensor, hx: Sequence[NBXTensor], params: Sequence[NBXTensor], has_biases: bool,
                num_layers: int, dropout: float, train: bool, bidirectional: bool,
                batch_first: bool) -> tuple[NBXTensor, NBXTensor, NBXTensor]:
    _check(input, hx, params, dropout, train, num_layers)
    if input.ndim != 3:
        raise ShapeError(f"{OP}: input must be 3-D ({'batch, seq' if batch_first else 'seq, batch'}, features), "
                         f"got shape {input.shape}")
    if input.shape[1 if batch_first else 0] == 0:
        raise ShapeError(f"{OP}: expected sequence length to be larger than 0, got input of shape {input.shape}")
    dirs = 2 if bidirectional else 1
    layers = _layers(params, has_biases, num_layers, dirs)
    x = permute(input, 1, 0, 2) if batch_first else input
    seq, batch, feat = x.shape
    # Time-major rows: step t is rows [t * batch, (t + 1) * batch).
    if x.is_contiguous():
        packed = NBXTensor(x.storage, (seq * batch, feat), (feat, 1), x.storage_offset(), x.dtype)
    else:
        packed = empty_tensor((seq * batch, feat), input.dtype, input.device)
        copy_(NBXTensor(packed.storage, x.shape, (batch * feat, feat, 1), 0, packed.dtype), x)
    out, h_n, c_n = _run([(t * batch, batch) for t in range(seq)], packed, hx, layers, dirs, batch)
    width = out.shape[1]
    tm = NBXTensor(out.storage, (seq, batch, width), (batch * width, width, 1), 0, out.dtype)
    if not batch_first:
        return tm, h_n, c_n
    res = empty_tensor((batch, seq, width), out.dtype, out.device)
    copy_(res, permute(tm, 1, 0, 2))
    return res, h_n, c_n


def _lstm_data(data: NBXTensor, batch_sizes: NBXTensor, hx: Sequence[NBXTensor], params: Sequence[NBXTensor],
               has_biases: bool, num_layers: int, dropout: float, train: bool,
               bidirectional: bool) -> tuple[NBXTensor, NBXTensor, NBXTensor]:
    _check(data, hx, params, dropout, train, num_layers)
    if data.ndim != 2:
        raise ShapeError(f"{OP}: packed data must be 2-D (rows, features), got shape {data.shape}")
    tensor_arg(OP, batch_sizes, "batch_sizes", dtypes=INTEGRAL, ndim=1)
    sizes = [int(s) for s in batch_sizes.tolist()]
    if any(b <= 0 for b in sizes) or any(a < b for a, b in zip(sizes, sizes[1:], strict=False)) \
            or sum(sizes) != data.shape[0]:
        raise NbxValueError(f"{OP}: batch_sizes {sizes} must be positive, non-increasing and sum to the "
                            f"{data.shape[0]} rows of data")
    dirs = 2 if bidirectional else 1
    layers = _layers(params, has_biases, num_layers, dirs)
    steps, start = [], 0
    for b in sizes:
        steps.append((start, b))
        start += b
    return _run(steps, data, hx, layers, dirs, sizes[0] if sizes else 0)
