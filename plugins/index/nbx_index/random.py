"""Seeded, counter-based random ops: ``randperm`` and ``multinomial``.

Random numbers come from Triton's Philox (``tl.rand``/``tl.randint``) keyed by a 64-bit seed and
the element's position. The seed of a call mixes the user seed (:func:`manual_seed`, default 0)
with a per-process call counter, so a run is reproducible from ``manual_seed`` and successive calls
differ. The streams are NBX's own: they do not reproduce torch's generator.

- randperm sorts random 32-bit keys (ties broken by position) and returns the positions.
- multinomial without replacement is the exponential race: the ``k`` largest ``log(u) / p``
  (a topk); with replacement each sample inverts the row's CDF.
"""

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import triton
import triton.language as tl

from nbx_core import dtypes as D
from nbx_core.errors import NbxTypeError, NbxValueError
from nbx_core.ops import creation
from nbx_core.runtime.kernels.copy import contiguous_copy
from nbx_core.runtime.launch import cdiv, launch, next_pow2
from nbx_core.runtime.tuning import Key, Tunable, bucket
from nbx_core.tensor import NBXTensor, empty_tensor
from nbx_core.tensor.args import int_arg

_state = {"seed": 0, "calls": 0}

MULTINOMIAL = Tunable(
    "index",
    "multinomial",
    {"BLOCK_S": "pow2", "BLOCK_N": "pow2"},
    key=lambda dtype, n, s: Key({"dtype": dtype, "N": bucket(n), "S": bucket(s)}),
    rule=lambda dtype, n, s: {"BLOCK_S": min(next_pow2(s), 64), "BLOCK_N": min(next_pow2(n), 128)},
    interpreter=lambda dtype, n, s: {"BLOCK_S": min(next_pow2(s), 64), "BLOCK_N": min(next_pow2(n), 4096)},
    tables=Path(__file__).with_name("configs"),
)
"""Tiles of multinomial with replacement: BLOCK_S samples per program, which walk the row's CDF
BLOCK_N categories at a time (a [BLOCK_S, BLOCK_N] comparison per step; the interpreter takes rows
up to 4096 in one step). Arguments: the weights' dtype name, the categories and the samples per row."""


def manual_seed(seed: int) -> None:
    """Seed nbx-index's random ops (randperm, multinomial) and restart their call counter."""
    int_arg("manual_seed", seed, "seed")
    _state["seed"], _state["calls"] = seed % 2**63, 0


def _next_seed() -> int:
    _state["calls"] += 1
    return (_state["seed"] * 0x9E3779B97F4A7C15 + _state["calls"] * 0xBF58476D1CE4E5B9) % 2**31


@triton.jit
def _randint_kernel(out_ptr, n, seed, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + i, tl.randint(seed, i).to(tl.int32, bitcast=True), mask=i < n)


def randperm(
    n: int, *, generator: Any = None, dtype: Any = None, layout: Any = None, device: Any = None, pin_memory: Any = None
) -> NBXTensor:
    """``aten::randperm``: a random permutation of ``0..n-1`` (seed: :func:`manual_seed`)."""
    op = "aten::randperm"
    if generator is not None:
        raise NbxValueError(f"{op}: torch generators are not supported: seed with nbx_index.random.manual_seed")
    if not isinstance(n, int) or n < 0:
        raise NbxValueError(f"{op}: n must be a non-negative int, got {n!r}")
    dt = D.as_dtype(dtype) if dtype is not None else D.int64
    if dt is D.bool_ or dt.is_complex:
        raise NbxTypeError(f"{op}: dtype {dt} cannot hold a permutation: use an integer or float dtype")
    keys = creation.empty((n,), dtype=D.int32, device=device)
    if n == 0:
        return empty_tensor((0,), dt, keys.device)
    block = min(next_pow2(n), 1024)
    launch(_randint_kernel, (cdiv(n, block),), keys, n, _next_seed(), BLOCK=block)
    from .sort import _select

    perm = _select(op, keys, n, 0, False)[1]
    return perm if dt is D.int64 else contiguous_copy(perm, dt)


@triton.jit
def _race_kernel(out_ptr, p_ptr, n, p_row, p_col, seed, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    c = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    m = c < n
    p = tl.load(p_ptr + row * p_row + c * p_col, mask=m, other=0).to(tl.float32)
    u = tl.rand(seed, row * n + c)
    u = tl.maximum(u, 1e-30)
    key = tl.where(p > 0, tl.log(u) / p, float("-inf"))
    tl.store(out_ptr + row * n + c, key, mask=m)


@triton.jit
def _cdf_kernel(out_ptr, p_ptr, n, S, p_row, p_col, seed, BLOCK_S: tl.constexpr, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    s = tl.program_id(1) * BLOCK_S + tl.arange(0, BLOCK_S)
    total = 0.0
    for c0 in range(0, n, BLOCK_N):
        c = c0 + tl.arange(0, BLOCK_N)
        total += tl.sum(tl.load(p_ptr + row * p_row + c * p_col, mask=c < n, other=0).to(tl.float32), axis=0)
    target = tl.rand(seed, row * S + s) * total
    # The sample is the number of categories whose running CDF lies at or below the target.
    count = tl.zeros([BLOCK_S], tl.int64)
    last = tl.zeros([BLOCK_S], tl.int64)
    run = 0.0
    for c0 in range(0, n, BLOCK_N):
        c = c0 + tl.arange(0, BLOCK_N)
        p = tl.load(p_ptr + row * p_row + c * p_col, mask=c < n, other=0).to(tl.float32)
        cdf = run + tl.cumsum(p, axis=0)
        count += tl.sum(((cdf[None, :] <= target[:, None]) & (c < n)[None, :]).to(tl.int64), axis=1)
        last = tl.maximum(last, tl.max(tl.where(p > 0, c, 0), axis=0).to(tl.int64))
        run += tl.sum(p, axis=0)
    # Rounding can push the target to the total: such a sample takes the last possible category.
    tl.store(out_ptr + row * S + s, tl.minimum(count, last), mask=s < S)


def multinomial(self: NBXTensor, num_samples: int, replacement: bool = False, *, generator: Any = None) -> NBXTensor:
    """``aten::multinomial``: ``num_samples`` category indices per row of the weights ``self`` (1-D or
    2-D, non-negative); without ``replacement`` each category is drawn at most once."""
    op = "aten::multinomial"
    if generator is not None:
        raise NbxValueError(f"{op}: torch generators are not supported: seed with nbx_index.random.manual_seed")
    if not self.dtype.is_floating_point:
        raise NbxTypeError(f"{op}: weights must be floating, got {self.dtype}: cast them with .to('float32')")
    if self.ndim not in (1, 2):
        raise NbxValueError(f"{op}: weights must be 1-D or 2-D, got {self.ndim} dims")
    n = self.shape[-1]
    if n == 0:
        raise NbxValueError(f"{op}: weights have no categories")
    if not isinstance(num_samples, int) or num_samples <= 0:
        raise NbxValueError(f"{op}: num_samples must be a positive int, got {num_samples!r}")
    if not replacement and num_samples > n:
        raise NbxValueError(
            f"{op}: cannot draw {num_samples} samples without replacement from {n} categories: "
            "pass replacement=True or fewer samples"
        )
    rows = self.shape[0] if self.ndim == 2 else 1
    p_row = self.stride(0) if self.ndim == 2 else 0
    p_col = self.stride(-1)
    out_shape = (*self.shape[:-1], num_samples)
    if rows == 0:
        return empty_tensor(out_shape, D.int64, self.device)
    if not replacement:
        keys = empty_tensor((rows, n), D.float32, self.device)
        block = min(next_pow2(n), 1024)
        launch(_race_kernel, (rows, cdiv(n, block)), keys, self, n, p_row, p_col, _next_seed(), BLOCK=block)
        from .sort import topk

        idx = topk(keys, num_samples, -1, True, True)[1]
        return idx if self.ndim == 2 else idx.reshape(out_shape)
    out = empty_tensor(out_shape, D.int64, self.device)
    sample_rows(out, self, rows, n, num_samples, p_row, p_col, _next_seed())
    return out


def sample_rows(
    out: NBXTensor,
    p: NBXTensor,
    rows: int,
    n: int,
    samples: int,
    p_row: int,
    p_col: int,
    seed: int,
    config: Mapping[str, int] | None = None,
) -> None:
    """``samples`` draws with replacement from each of ``rows`` rows of ``n`` weights (``p[r, c]`` at
    ``r * p_row + c * p_col``) into ``out`` (``(rows, samples)`` contiguous int64), by ``seed``;
    ``config`` replaces :data:`MULTINOMIAL`'s lookup."""
    cfg = MULTINOMIAL.choose(config, p.dtype.name, n, samples)
    launch(
        _cdf_kernel,
        (rows, cdiv(samples, cfg["BLOCK_S"])),
        out,
        p,
        n,
        samples,
        p_row,
        p_col,
        seed,
        BLOCK_S=cfg["BLOCK_S"],
        BLOCK_N=cfg["BLOCK_N"],
    )
