"""``sort`` and ``topk`` along one dim: packed keys, in-register chunk sorts, merge passes.

Each element of a row becomes one int64 *packed key*: its value mapped to an int32 whose signed
order is torch's order (floats: -0.0 equals 0.0, NaN is the largest; descending flips the bits),
shifted up 32 bits, with the element's position in the low 32 bits. Keys are distinct, so sorting
them ascending is a stable sort, and the position comes back out of the low bits.

- The chunk kernel sorts ``CHUNK`` keys of a row in registers (``tl.sort``) and keeps the first
  ``KEEP`` of them (all for sort, the top ``k`` rounded up to a power of two for topk).
- sort: rows longer than a chunk are merged in passes of doubling run length. A merge program
  writes a block of consecutive outputs of one pair of runs: a binary search finds where the
  block starts and ends in each run (merge path), and a bitonic merge in registers orders it.
- topk: rows that fit in registers take ``nbx_index.topk`` (a threshold select); longer rows keep
  the first ``k`` of each chunk and chunk-sort the candidates again until one chunk holds them all.

Values and indices are then gathered from the input by position (by the last merge pass, when
there is one). 64-bit dtypes (int64, float64) do not fit a packed key: they use a rank kernel
(each element counts the elements before it in the order), O(n^2) per row, meant for the short
rows they appear in.
"""

from collections.abc import Mapping
from pathlib import Path

# nbx_core.runtime.launch picks the backend, which must happen before Triton is first imported.
from nbx_core.runtime.launch import cdiv, launch, next_pow2

# isort: split
import triton
import triton.language as tl

from nbx_core import dtypes as D
from nbx_core.errors import IndexOutOfRangeError, NbxTypeError, NbxValueError
from nbx_core.ops import views as V
from nbx_core.runtime.kernels.copy import contiguous_copy, copy_into
from nbx_core.runtime.tuning import Key, Tunable, bucket
from nbx_core.shape import wrap_dim
from nbx_core.tensor import NBXTensor, empty_tensor
from nbx_core.tensor.args import int_arg

from .sortkeys import LOW, PAD, key32


@triton.jit
def _chunk_kernel(out_ptr, src_ptr, n, nchunks, nv, src_row, out_row, src_step,
                  PACKED: tl.constexpr, DESC: tl.constexpr, CHUNK: tl.constexpr, KEEP: tl.constexpr,
                  BLOCK_V: tl.constexpr):
    # A program sorts BLOCK_V (row, chunk) pairs, one per tile row: on the interpreter, where each
    # tl.sort costs the same whatever its size, that is one call for many chunks.
    v = (tl.program_id(0) * BLOCK_V + tl.arange(0, BLOCK_V)).to(tl.int64)
    row = v // nchunks
    c = v % nchunks
    t = tl.arange(0, CHUNK)
    pos = c[:, None] * CHUNK + t[None, :]
    m = (v < nv)[:, None] & (pos < n)
    if PACKED:
        key = tl.load(src_ptr + row[:, None] * src_row + pos, mask=m, other=PAD)
    else:
        x = tl.load(src_ptr + row[:, None] * src_row + pos * src_step, mask=m)
        key = (key32(x, DESC).to(tl.int64) << 32) | pos
        key = tl.where(m, key, PAD)
    key = tl.sort(key, 1)
    keep = (v < nv)[:, None] & (t < KEEP)[None, :]
    tl.store(out_ptr + row[:, None] * out_row + c[:, None] * KEEP + t[None, :], key, mask=keep)


@triton.jit
def _merge_kernel(dst_ptr, src_ptr, val_ptr, x_ptr, n_pad, run, steps, k, x_row, x_step,
                  UNPACK: tl.constexpr, BLOCK: tl.constexpr, LOG: tl.constexpr):
    # A program writes BLOCK consecutive outputs of one merged pair of runs A, B (BLOCK divides
    # 2 * run). Where its outputs start and end in A (the co-ranks of its two diagonals) is found
    # by binary search; the BLOCK inputs are then loaded as A's part ascending, padding, B's part
    # reversed: a bitonic sequence, which LOG compare-exchange stages sort. A goes first on ties.
    # int64 offsets: besides their range, the interpreter checks no int64 arithmetic for overflow.
    row = tl.program_id(0).to(tl.int64)
    o0 = tl.program_id(1).to(tl.int64) * BLOCK
    s = o0 // (2 * run) * (2 * run)
    la = tl.minimum(n_pad - s, run)
    lb = tl.minimum(tl.maximum(n_pad - s - run, 0), run)
    base = src_ptr + row * n_pad + s
    d0 = o0 - s
    d1 = tl.minimum(d0 + BLOCK, la + lb)
    lo0, hi0 = tl.maximum(d0 - lb, 0), tl.minimum(d0, la)
    lo1, hi1 = tl.maximum(d1 - lb, 0), tl.minimum(d1, la)
    for _ in range(steps):
        go0 = lo0 < hi0
        go1 = lo1 < hi1
        mid0 = (lo0 + hi0) // 2
        mid1 = (lo1 + hi1) // 2
        a0 = tl.load(base + mid0, mask=go0, other=0)
        b0 = tl.load(base + run + d0 - 1 - mid0, mask=go0, other=0)
        a1 = tl.load(base + mid1, mask=go1, other=0)
        b1 = tl.load(base + run + d1 - 1 - mid1, mask=go1, other=0)
        right0 = go0 & (a0 <= b0)
        right1 = go1 & (a1 <= b1)
        lo0, hi0 = tl.where(right0, mid0 + 1, lo0), tl.where(go0 & ~right0, mid0, hi0)
        lo1, hi1 = tl.where(right1, mid1 + 1, lo1), tl.where(go1 & ~right1, mid1, hi1)
    na = lo1 - lo0
    nb = d1 - lo1 - (d0 - lo0)
    t = tl.arange(0, BLOCK)
    in_a = t < na
    in_b = t >= BLOCK - nb
    off = tl.where(in_a, lo0 + t, run + d0 - lo0 + (BLOCK - 1 - t))
    key = tl.load(base + off, mask=in_a | in_b, other=PAD)
    # Bitonic merge: stage i compare-exchanges elements 2**(LOG-1-i) apart, smaller one first. An
    # element's partner is the xor of the pair with itself: one reduction of two per stage. (A
    # nested jit function would cost the interpreter a re-patch per call.)
    right = tl.arange(0, 2)[None, :, None] == 1
    for i in tl.static_range(LOG):
        y = tl.reshape(key, [2**i, 2, 2 ** (LOG - 1 - i)])
        other = y ^ tl.xor_sum(y, 1)[:, None, :]
        key = tl.reshape(tl.where((y > other) != right, other, y), [BLOCK])
    dest = o0 + t
    m = t < d1 - d0
    if UNPACK:
        m = m & (dest < k)
        pos = key & LOW
        tl.store(dst_ptr + row * k + dest, pos, mask=m)
        tl.store(val_ptr + row * k + dest, tl.load(x_ptr + row * x_row + pos * x_step, mask=m), mask=m)
    else:
        tl.store(dst_ptr + row * n_pad + dest, key, mask=m)


@triton.jit
def _unpack_kernel(val_ptr, idx_ptr, keys_ptr, x_ptr, k, key_row, x_row, x_step, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    t = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    m = t < k
    pos = tl.load(keys_ptr + row * key_row + t, mask=m, other=0) & LOW
    tl.store(idx_ptr + row * k + t, pos, mask=m)
    tl.store(val_ptr + row * k + t, tl.load(x_ptr + row * x_row + pos * x_step, mask=m), mask=m)


@triton.jit
def _rank_kernel(idx_ptr, x_ptr, n, x_row, x_step, DESC: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    i = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mi = i < n
    a = tl.load(x_ptr + row * x_row + i.to(tl.int64) * x_step, mask=mi)
    rank = tl.zeros([BLOCK], tl.int64)
    for j0 in range(0, n, BLOCK):
        j = j0 + tl.arange(0, BLOCK)
        mj = j < n
        b = tl.load(x_ptr + row * x_row + j.to(tl.int64) * x_step, mask=mj)
        av = a[:, None]
        bv = b[None, :]
        if a.dtype.is_floating():
            # NaN is the largest value, -0.0 equals 0.0 (== already says so).
            a_nan = av != av
            b_nan = bv != bv
            if DESC:
                before = (~b_nan & ~a_nan & (bv > av)) | (b_nan & ~a_nan)
            else:
                before = (~b_nan & ~a_nan & (bv < av)) | (~b_nan & a_nan)
            same = (av == bv) | (a_nan & b_nan)
        else:
            before = (bv > av) if DESC else (bv < av)
            same = av == bv
        before = before | (same & (j[None, :] < i[:, None]))
        rank += tl.sum((before & mj[None, :]).to(tl.int64), axis=1)
    tl.store(idx_ptr + row * n + rank, i.to(tl.int64), mask=mi)


@triton.jit
def _take_kernel(val_ptr, idx_ptr, x_ptr, k, n, x_row, x_step, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    t = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    m = t < k
    pos = tl.load(idx_ptr + row * n + t, mask=m, other=0)
    tl.store(val_ptr + row * k + t, tl.load(x_ptr + row * x_row + pos * x_step, mask=m), mask=m)


SORT = Tunable(
    "index", "sort",
    {"CHUNK": "pow2", "CHUNK_WARPS": "pow2", "MERGE_BLOCK": "pow2", "MERGE_WARPS": "pow2", "PROGRAM_KEYS": "pow2"},
    key=lambda size, n: Key({"itemsize": size, "N": bucket(n)}),
    rule=lambda size, n: {"CHUNK": 512, "CHUNK_WARPS": 4, "MERGE_BLOCK": 2048, "MERGE_WARPS": 4},
    interpreter=lambda size, n: {"CHUNK": 16, "CHUNK_WARPS": 4, "MERGE_BLOCK": 2048, "MERGE_WARPS": 4,
                                 "PROGRAM_KEYS": 4096},
    optional=("PROGRAM_KEYS",), tables=Path(__file__).with_name("configs"))
"""The sort's launches. CHUNK: keys per in-register chunk sort (small on the interpreter, so that
tests reach the merge and candidate passes); a longer chunk costs more per key in its sort and
saves merge passes (configs/h200.json's source). CHUNK_WARPS: warps of a chunk sort of CHUNK keys
(shorter rows' chunks take 4). MERGE_BLOCK: outputs per merge program, capped at two runs (on the
interpreter that cap makes it 2 * CHUNK); a longer block spreads its two binary searches over more
outputs. MERGE_WARPS: warps per merge program. PROGRAM_KEYS (optional, default 1): the keys one
chunk-sort program sorts, as whole chunks (at least one); the interpreter, paying per program,
sorts 4096 keys a program, a GPU one chunk. Arguments: the itemsize and the row length."""

_SUPPORTED = (D.bool_, D.uint8, D.int8, D.int16, D.int32, D.int64, D.float16, D.bfloat16, D.float32, D.float64)


def _rows(op: str, x: NBXTensor, d: int) -> tuple[NBXTensor, int, int, int]:
    """``x`` with dim ``d`` last, as rows: (tensor, rows, row stride, element stride)."""
    if x.dtype not in _SUPPORTED:
        raise NbxTypeError(f"{op}: dtype {x.dtype} is not supported: use a real integer, bool or float dtype")
    moved = V.movedim(x, d, -1)
    n = moved.shape[-1]
    R = moved.numel() // max(n, 1)
    if moved.ndim == 1:
        return moved, 1, 0, moved.stride(0)
    flat = V.reshape(moved, (R, n))
    return flat, R, flat.stride(0), flat.stride(1)


def _sort_rows(vals: NBXTensor, idx: NBXTensor, src: NBXTensor, R: int, n: int, k: int, row: int, step: int,
               desc: bool, config: Mapping[str, int] | None = None) -> None:
    """The first ``k`` of each row in sorted order, values into ``vals`` and positions into ``idx``
    (``(R, k)`` contiguous): chunk sorts, then merge passes (all of the row) or candidate passes.
    ``config`` replaces :data:`SORT`'s lookup."""
    cfg = SORT.choose(config, src.dtype.itemsize, n)
    chunk = min(next_pow2(n), cfg["CHUNK"])
    nchunks = cdiv(n, chunk)
    if k == n or 2 * next_pow2(k) > chunk:
        width = nchunks * chunk
        keys = empty_tensor((R, width), D.int64, src.device)
        _chunk_sort(keys, src, n, R, nchunks, row, step, False, desc, chunk, chunk, cfg)
        if nchunks > 1:
            _merge(keys, R, width, chunk, vals, idx, src, k, row, step, cfg)
            return
    else:
        kp = next_pow2(k)
        keys = empty_tensor((R, nchunks * kp), D.int64, src.device)
        _chunk_sort(keys, src, n, R, nchunks, row, step, False, desc, chunk, kp, cfg)
        width = nchunks * kp
        while nchunks > 1:
            chunk2 = min(next_pow2(width), cfg["CHUNK"])
            nchunks = cdiv(width, chunk2)
            nxt = empty_tensor((R, nchunks * kp), D.int64, src.device)
            _chunk_sort(nxt, keys, width, R, nchunks, width, 1, True, desc, chunk2, kp, cfg)
            keys, width = nxt, nchunks * kp
    block = min(next_pow2(k), 1024)
    launch(_unpack_kernel, (R, cdiv(k, block)), vals, idx, keys, src, k, width, row, step, BLOCK=block)


def chunks_per_program(chunks: int, chunk: int, cfg: Mapping[str, int]) -> int:
    """The chunks of ``chunk`` keys one chunk-sort program sorts, of ``chunks`` in all: as many as
    ``cfg``'s PROGRAM_KEYS hold, at least one."""
    return min(next_pow2(chunks), max(1, cfg.get("PROGRAM_KEYS", 1) // chunk))


def _chunk_sort(out: NBXTensor, src: NBXTensor, n: int, R: int, nchunks: int, row: int, step: int, packed: bool,
                desc: bool, chunk: int, keep: int, cfg: Mapping[str, int]) -> None:
    nv = R * nchunks
    bv = chunks_per_program(nv, chunk, cfg)
    launch(_chunk_kernel, (cdiv(nv, bv),), out, src, n, nchunks, nv, row, out.shape[1], step, PACKED=packed,
           DESC=desc, CHUNK=chunk, KEEP=keep, BLOCK_V=bv, num_warps=cfg["CHUNK_WARPS"] if chunk >= cfg["CHUNK"] else 4)


def _merge(keys: NBXTensor, R: int, n_pad: int, run: int, vals: NBXTensor, idx: NBXTensor, x: NBXTensor, k: int,
           x_row: int, x_step: int, cfg: Mapping[str, int]) -> None:
    """Merge sorted runs of ``run`` keys until each row is one run; the last pass writes the first
    ``k`` positions into ``idx`` and their values from ``x`` into ``vals``."""
    block = min(cfg["MERGE_BLOCK"], 2 * run)
    other = empty_tensor(keys.shape, D.int64, keys.device) if 2 * run < n_pad else keys
    while run < n_pad:
        last = 2 * run >= n_pad
        launch(_merge_kernel, (R, cdiv(n_pad, block)), idx if last else other, keys, vals, x, n_pad, run,
               run.bit_length(), k, x_row, x_step, UNPACK=last, BLOCK=block, LOG=block.bit_length() - 1,
               num_warps=cfg["MERGE_WARPS"])
        keys, other = other, keys
        run *= 2


def _select(op: str, self: NBXTensor, k: int, dim: int, desc: bool) -> tuple[NBXTensor, NBXTensor]:
    """The first ``k`` elements along ``dim`` in sorted order (values, int64 positions)."""
    d = wrap_dim(op, dim, self.ndim)
    x = self if self.ndim else V.reshape(self, (1,))
    src, R, row, step = _rows(op, x, d)
    n = x.shape[d]
    out_moved = (*V.movedim(x, d, -1).shape[:-1], k)
    vals = empty_tensor(out_moved, self.dtype, self.device)
    idx = empty_tensor(out_moved, D.int64, self.device)
    if R * k > 0:
        block = min(next_pow2(k), 1024)
        if self.dtype.itemsize == 8:
            full = empty_tensor((R, n), D.int64, self.device)
            rb = min(next_pow2(n), 64)
            launch(_rank_kernel, (R, cdiv(n, rb)), full, src, n, row, step, DESC=desc, BLOCK=rb)
            launch(_take_kernel, (R, cdiv(k, block)), vals, full, src, k, n, row, step, BLOCK=block)
            _first_k(idx, full, R, k)
        elif op == "aten::topk" and _topk().fits(n, k, self.dtype.itemsize):
            _topk().select_rows(vals, idx, src, R, n, k, row, step, desc)
        else:
            _sort_rows(vals, idx, src, R, n, k, row, step, desc)
    if self.ndim == 0:
        return V.reshape(vals, ()), V.reshape(idx, ())
    if d != self.ndim - 1:
        vals = contiguous_copy(V.movedim(vals, -1, d))
        idx = contiguous_copy(V.movedim(idx, -1, d))
    return vals, idx


def _topk():
    # Imported on first use: nbx_index.topk imports this module's key mapping.
    from . import topk

    return topk


def _first_k(idx: NBXTensor, full: NBXTensor, R: int, k: int) -> None:
    copy_into(V.reshape(idx, (R, k)), V.narrow(full, 1, 0, k))


def sort(self: NBXTensor, dim: int = -1, descending: bool = False, *, stable: bool | None = None
         ) -> tuple[NBXTensor, NBXTensor]:
    """``aten::sort`` (and ``sort.stable``): always stable; NaN sorts as the largest value."""
    if stable is not None and not isinstance(stable, bool):
        raise NbxTypeError(f"aten::sort: stable must be a bool or None, got {type(stable).__name__}")
    n = self.shape[wrap_dim("aten::sort", dim, self.ndim)] if self.ndim else 1
    return _select("aten::sort", self, n, dim, bool(descending))


def topk(self: NBXTensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True
         ) -> tuple[NBXTensor, NBXTensor]:
    """``aten::topk``: the ``k`` largest (or smallest) along ``dim``, always in sorted order; among
    equal values the earlier position comes first."""
    op = "aten::topk"
    int_arg(op, k, "k")
    n = self.shape[wrap_dim(op, dim, self.ndim)] if self.ndim else 1
    if not 0 <= k <= n:
        raise IndexOutOfRangeError(f"{op}: k={k} is out of range for a dimension of size {n}: need 0 <= k <= {n}")
    if self.dtype is D.bool_:
        raise NbxValueError(f"{op}: bool input is not supported (as in torch): cast it to an integer dtype")
    return _select(op, self, k, dim, bool(largest))


def sort_values(x: NBXTensor) -> NBXTensor:
    """The values of a 1-D tensor sorted ascending (NaN last)."""
    return _select("aten::sort", x, x.shape[0], 0, False)[0]
