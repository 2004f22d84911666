"""Conformance of nbx-linalg's matrix products against torch CPU."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from nbx_core.errors import NbxError
from nbx_core.testing import assert_close, check_op, check_raises, from_torch, layouts, make, numeric, run_op

FLOATS = ["float32", "float16", "bfloat16", "float64"]
INTS = ["int64", "int32", "int16", "int8", "uint8"]


def _layouts(t: torch.Tensor) -> list[tuple[str, torch.Tensor]]:
    return [*layouts(t), ("t-of-t", t.t().contiguous().t()) if t.ndim == 2 else ("neg-offset", t[..., :])]


@pytest.mark.parametrize("dtype", FLOATS + INTS)
def test_mm_dtypes_and_layouts(dtype):
    a, b = make((5, 9), dtype), make((9, 7), dtype, seed=1)
    for (_, x), (_, y) in zip(_layouts(a), reversed(_layouts(b)), strict=True):
        check_op("aten::mm", x, y)


def test_mm_transposed_operands_and_blocks():
    # Past one interpreter tile (128) in every dim, with both operands transposed.
    a, b = make((130, 40)), make((40, 140), seed=1)
    check_op("aten::mm", a.t().contiguous().t(), b.t().contiguous().t())
    check_op("aten::mm", a, b)


def test_mm_zero_sizes_and_out():
    check_op("aten::mm", make((3, 0)), make((0, 4), seed=1))  # K=0: zeros
    check_op("aten::mm", make((0, 5)), make((5, 4), seed=1))
    check_op("aten::mm", make((3, 5)), make((5, 0), seed=1))
    check_op("aten::mm.out", make((3, 5)), make((5, 4), seed=1), out=torch.empty(3, 4))
    # out with strides: written in place, transposed.
    out = torch.empty(4, 3).t()
    check_op("aten::mm.out", make((3, 5)), make((5, 4), seed=1), out=out)


def test_mm_nan_and_inf_propagate():
    a = make((4, 5))
    a[1, 2] = float("nan")
    a[2, 0] = float("inf")
    check_op("aten::mm", a, make((5, 3), seed=1))


def test_mm_out_dtype_float32_for_half_inputs():
    a, b = make((5, 9), "bfloat16"), make((9, 7), "bfloat16", seed=1)
    got = run_op("aten::mm.dtype", a, b, torch.float32)
    assert_close(got, a.float() @ b.float(), rtol=1e-5, atol=1e-5)
    with pytest.raises(NbxError, match="out_dtype"):
        run_op("aten::mm.dtype", make((2, 2)), make((2, 2)), torch.float16)


def test_float32_is_ieee_by_default_and_tf32_is_opt_in():
    import nbx_linalg

    assert nbx_linalg.get_float32_matmul_precision() == "highest"
    # Values whose products need more than TF32's 10 mantissa bits.
    a = torch.full((16, 16), 1 + 2**-20, dtype=torch.float32)
    got = check_op("aten::mm", a, a)
    if numeric():
        assert got.numpy()[0, 0] == pytest.approx(16 * (1 + 2**-20) ** 2, rel=1e-7)
    nbx_linalg.set_float32_matmul_precision("high")
    try:
        assert nbx_linalg.get_float32_matmul_precision() == "high"
        run_op("aten::mm", a, a)  # compiles and runs the TF32 variant
    finally:
        nbx_linalg.set_float32_matmul_precision("highest")
    with pytest.raises(NbxError, match="precision"):
        nbx_linalg.set_float32_matmul_precision("fast")


@pytest.mark.parametrize("dtype", FLOATS + ["int32"])
def test_bmm(dtype):
    a, b = make((3, 5, 9), dtype), make((3, 9, 7), dtype, seed=1)
    check_op("aten::bmm", a, b)
    check_op("aten::bmm", a.transpose(1, 2).contiguous().transpose(1, 2), b.permute(2, 0, 1).contiguous().permute(
        1, 2, 0))
    check_op("aten::bmm", make((1, 5, 9), dtype).expand(3, 5, 9), b)  # stride-0 batch
    check_op("aten::bmm", make((0, 5, 9), dtype), make((0, 9, 7), dtype))
    check_op("aten::bmm.out", a, b, out=torch.empty(3, 5, 7, dtype=a.dtype))


@pytest.mark.parametrize("dtype", FLOATS + ["int64"])
def test_addmm(dtype):
    a, b = make((5, 9), dtype, seed=1), make((9, 7), dtype, seed=2)
    for shape in [(5, 7), (7,), (1, 7), (5, 1), ()]:
        for _, c in layouts(make(shape, dtype)):
            check_op("aten::addmm", c, a, b)
    if dtype in FLOATS:
        check_op("aten::addmm", make((5, 7), dtype), a, b, beta=0.5, alpha=-2.0)
    else:
        check_op("aten::addmm", make((5, 7), dtype), a, b, beta=3, alpha=-2)
        check_op("aten::addmm", make((5, 7), dtype), a, b, beta=1.5, alpha=2.5)  # truncated, as torch
    check_op("aten::addmm.out", make((7,), dtype), a, b, out=torch.empty(5, 7, dtype=a.dtype))


def test_addmm_beta_zero_ignores_nan_and_alpha_zero_ignores_product():
    c = torch.full((5, 7), float("nan"))
    a, b = make((5, 9)), make((9, 7), seed=1)
    got = check_op("aten::addmm", c, a, b, beta=0)
    if numeric():
        assert not np.isnan(got.numpy()).any()
    a_nan = a.clone()
    a_nan[0, 0] = float("nan")
    check_op("aten::addmm", make((5, 7)), a_nan, b, alpha=0)
    check_op("aten::addmm", make((5, 7)), make((5, 0)), make((0, 7)), beta=2.0)  # K=0: beta * self


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int32"])
def test_baddbmm(dtype):
    a, b = make((3, 5, 9), dtype, seed=1), make((3, 9, 7), dtype, seed=2)
    for shape in [(3, 5, 7), (7,), (1, 5, 7), (3, 1, 1)]:
        check_op("aten::baddbmm", make(shape, dtype), a, b)
    beta, alpha = (0.5, 2.0) if dtype != "int32" else (2, 3)
    check_op("aten::baddbmm", make((3, 5, 7), dtype), a, b, beta=beta, alpha=alpha)
    check_op("aten::baddbmm", torch.full((3, 5, 7), float("nan")).to(a.dtype) if dtype != "int32"
             else make((3, 5, 7), dtype), a, b, beta=0)
    check_op("aten::baddbmm.out", make((3, 5, 7), dtype), a, b, out=torch.empty(3, 5, 7, dtype=a.dtype))


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int32"])
def test_addmm_row_bias_across_tiles(dtype):
    # c constant down the rows (a bias) is loaded as one row per tile: past one interpreter tile in M
    # and N, with alpha and beta, and batched.
    a, b = make((130, 24), dtype), make((24, 140), dtype, seed=1)
    beta, alpha = (0.5, -2.0) if dtype != "int32" else (3, -2)
    for bias in (make((140,), dtype, seed=2), make((1, 140), dtype, seed=2), make((), dtype, seed=2)):
        check_op("aten::addmm", bias, a, b, beta=beta, alpha=alpha)
    check_op("aten::baddbmm", make((1, 7), dtype, seed=2), make((3, 5, 9), dtype), make((3, 9, 7), dtype, seed=1),
             beta=beta, alpha=alpha)


def test_configuration_follows_the_operand_layout(monkeypatch):
    from nbx_linalg.configs import GEMM

    seen = []
    choose = GEMM.lookup
    monkeypatch.setattr(GEMM, "lookup", lambda *args, **kw: seen.append(args[-1]) or choose(*args, **kw))
    a, b, w = make((5, 9)), make((9, 7), seed=1), make((7, 9), seed=2)
    check_op("aten::mm", a, b)
    check_op("aten::linear", a, w, make((7,), seed=3))  # x @ W.T: W stored (N, K)
    check_op("aten::mm", a.t().contiguous().t(), w.t())
    check_op("aten::bmm", make((2, 5, 9)), make((2, 7, 9), seed=1).transpose(1, 2))  # q @ k^T
    assert seen == ["NN", "NT", "TT", "NT"]


def _ask_for_tma(monkeypatch) -> list[bool]:
    """Every GEMM's configuration asks for TMA loads; returns the TMA flag of each launch."""
    from nbx_linalg import matmul
    from nbx_linalg.configs import GEMM

    choose, launch, seen = GEMM.lookup, matmul.launch, []
    monkeypatch.setattr(GEMM, "lookup", lambda *args, **kw: {**choose(*args, **kw), "TMA": 1})
    monkeypatch.setattr(matmul, "launch", lambda kernel, grid, *args, **kw: seen.append(kw["TMA"])
                        or launch(kernel, grid, *args, **kw))
    return seen


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_tma_loads_in_every_layout(monkeypatch, dtype):
    seen = _ask_for_tma(monkeypatch)
    # M, N and K past one interpreter tile (128), K in two steps: the copy engine's zero fill
    # replaces every mask. Rows of 272 and 288 bytes: multiples of 16, as TMA needs.
    a, b, w = make((136, 136), dtype), make((136, 144), dtype, seed=1), make((144, 136), dtype, seed=2)
    check_op("aten::mm", a, b)
    check_op("aten::linear", a, w, make((144,), dtype, seed=3))  # NT: x @ W.T, W stored (N, K)
    check_op("aten::linear", a, w)
    check_op("aten::mm", a.t().contiguous().t(), b)  # TN
    check_op("aten::mm", a.t().contiguous().t(), w.t())  # TT
    q, k = make((3, 24, 16), dtype), make((3, 40, 16), dtype, seed=1)
    check_op("aten::bmm", q, k.transpose(1, 2))  # q @ k^T: one descriptor base per batch
    check_op("aten::baddbmm", make((40,), dtype, seed=2), q, k.transpose(1, 2), beta=0.5, alpha=2.0)
    check_op("aten::bmm", q, make((1, 16, 40), dtype, seed=1).expand(3, 16, 40))  # one B for every batch
    assert seen == [True] * 8


def test_tma_allocator_is_scoped_to_its_launches(monkeypatch):
    # The descriptors' memory comes from NBX's allocator, set in Triton's context only around the
    # GEMM's launches: a caller's own allocator (torch code sets one) is back in place afterwards,
    # also when the launch raises.
    import triton
    from nbx_linalg import matmul
    from nbx_linalg.configs import GEMM
    from triton.runtime import _allocation

    from nbx_core.runtime.kernels import descriptors

    def users(size, alignment, stream):
        raise AssertionError("the caller's allocator must not serve NBX's launches")

    seen = []

    def fake_launch(kernel, grid, *args, **kw):
        seen.append(_allocation._allocator.get())
        if len(seen) == 2:
            raise RuntimeError("launch failed")

    triton.set_allocator(users)
    try:
        monkeypatch.setattr(descriptors, "BACKEND", "cuda")
        monkeypatch.setattr(matmul, "launch", fake_launch)
        monkeypatch.setattr(GEMM, "lookup", lambda *args, **kw: {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16,
                                                                 "GROUP_M": 1, "num_warps": 4, "num_stages": 2,
                                                                 "TMA": 1})
        a, b = from_torch(make((16, 16), "bfloat16")), from_torch(make((16, 16), "bfloat16", seed=1))
        matmul.mm(a, b)
        with pytest.raises(RuntimeError, match="launch failed"):
            matmul.mm(a, b)
        assert len(seen) == 2 and all(fn is not users for fn in seen)
        assert _allocation._allocator.get() is users
    finally:
        _allocation._allocator.set(_allocation._NULL_ALLOCATOR)


def test_tma_falls_back_to_pointer_loads(monkeypatch):
    seen = _ask_for_tma(monkeypatch)
    bf = "bfloat16"
    check_op("aten::mm", make((5, 9), bf), make((9, 8), bf, seed=1))  # A's rows of 18 bytes
    check_op("aten::mm", make((8, 24), bf)[:, 1:17], make((16, 8), bf, seed=1))  # A's base 2 bytes off
    odd = make((400,), bf).as_strided((3, 8, 16), (129, 16, 1))  # matrices 258 bytes apart
    check_op("aten::bmm", odd, make((3, 16, 8), bf, seed=1))
    check_op("aten::mm", make((8, 16)), make((16, 8), seed=1))  # float32
    check_op("aten::addmm", make((8,), bf), make((8, 16), bf), make((16, 8), bf, seed=1), alpha=0)  # no product
    check_op("aten::mm", make((8, 16), bf), make((16, 8), bf, seed=1))  # and TMA where it can
    assert seen == [False] * 5 + [True]


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float64", "int32"])
def test_split_k(monkeypatch, dtype):
    # K sliced between programs (as for decoding shapes on the GPU): the last slice of a tile adds
    # the partials in slice order, then the epilogue (alpha, beta, c) runs once. K = 200 in slices
    # of two 32-element steps (the last one short), a bias, a full c, batches, many launches in a
    # row (each leaves its ticket counters at zero).
    from nbx_linalg import matmul
    from nbx_linalg.configs import GEMM

    choose, launch, grids = GEMM.lookup, matmul.launch, []
    monkeypatch.setattr(GEMM, "lookup", lambda *args, **kw: {**choose(*args, **kw), "BLOCK_M": 16, "BLOCK_N": 16,
                                                             "BLOCK_K": 32, "SPLIT_K": 3})
    monkeypatch.setattr(matmul, "launch", lambda kernel, grid, *args, **kw: grids.append((grid, kw["BLOCK_K"]))
                        or launch(kernel, grid, *args, **kw))
    a, b = make((20, 200), dtype), make((200, 24), dtype, seed=1)
    check_op("aten::mm", a, b)
    check_op("aten::addmm", make((24,), dtype, seed=2), a, b, beta=2, alpha=-1)
    check_op("aten::addmm", make((20, 24), dtype, seed=3), a, b)
    check_op("aten::linear", a, make((24, 200), dtype, seed=4), None if dtype == "int32" else make((24,), dtype))
    check_op("aten::bmm", make((3, 5, 200), dtype), make((3, 200, 7), dtype, seed=1))
    check_op("aten::mm", make((20, 64), dtype), make((64, 24), dtype, seed=1))  # slices of whole steps
    # Three slices of K = 200; K = 64 in slices of whole BLOCK_K steps: two of 32 (the GPU's float64
    # and integer kernels run BLOCK_K 8: three of 24, 24 and 16).
    assert [g[2] for g, _ in grids[:5]] == [3] * 5
    assert grids[5][0][2] == (2 if grids[5][1] == 32 else 3)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int32"])
def test_persistent(monkeypatch, dtype):
    # Persistent programs (as for attention scores on the GPU): a one-dimensional grid of fewer
    # programs than tiles, each walking (batch, tile) pairs across batch boundaries, with edge tiles,
    # alpha/beta with a broadcast c, a broadcast batch operand and a transposed one.
    from nbx_linalg import matmul
    from nbx_linalg.configs import GEMM

    choose, launch, grids = GEMM.lookup, matmul.launch, []
    monkeypatch.setattr(GEMM, "lookup", lambda *args, **kw: {**choose(*args, **kw), "BLOCK_M": 16, "BLOCK_N": 16,
                                                             "BLOCK_K": 16, "PERSISTENT": 1})
    monkeypatch.setattr(matmul, "multiprocessors", lambda index: 5)
    monkeypatch.setattr(matmul, "launch", lambda kernel, grid, *args, **kw: grids.append(grid)
                        or launch(kernel, grid, *args, **kw))
    check_op("aten::bmm", make((3, 40, 24), dtype), make((3, 24, 36), dtype, seed=1))
    check_op("aten::baddbmm", make((1, 36), dtype, seed=2), make((3, 40, 24), dtype),
             make((3, 24, 36), dtype, seed=1), beta=2, alpha=-1)
    check_op("aten::matmul", make((2, 1, 40, 24), dtype), make((3, 36, 24), dtype, seed=3).transpose(1, 2))
    # 9 tiles of 16 x 16 per batch (3 batches, then 2 x 3 broadcast) on 5 programs, not one per tile.
    assert grids == [(5,)] * 3


def _ask_for_ws(monkeypatch, sms: int = 3) -> list[str]:
    """Every GEMM's configuration asks for the warp-specialized kernel (128 x 64 x 32 tiles) on a
    GPU of ``sms`` SMs; returns which kernel each launch ran."""
    from nbx_linalg import matmul, warp_specialized
    from nbx_linalg.configs import GEMM

    tile = {"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 2, "num_warps": 4, "num_stages": 2,
            "PERSISTENT": 1, "WS": 1}
    plain = {**tile, "BLOCK_M": 32, "num_warps": 1}
    seen = []
    monkeypatch.setattr(GEMM, "lookup", lambda *args, skip=(): dict(plain) if skip else dict(tile))
    monkeypatch.setattr(matmul, "multiprocessors", lambda index: sms)
    for module in (matmul, warp_specialized):
        launch = module.launch
        monkeypatch.setattr(module, "launch", lambda kernel, grid, *args, launch=launch, **kw:
                            seen.append((kernel.__name__, grid, kw["BLOCK_M"])) or launch(kernel, grid, *args, **kw))
    return seen


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_warp_specialized_gemm(monkeypatch, dtype):
    # Persistent programs (3 here) over (batch, tile) pairs of stacks folded into 2-D descriptors:
    # edge tiles in N (row-major and stored-transposed B, whose rows past N belong to the next
    # matrix and are clipped at the store), one matrix with edges in M and K, alpha without c.
    seen = _ask_for_ws(monkeypatch)
    q, kn, kt = make((3, 128, 64), dtype), make((3, 64, 96), dtype, seed=1), make((3, 104, 64), dtype, seed=2)
    check_op("aten::bmm", q, kn)
    check_op("aten::bmm", q, kt.transpose(1, 2))
    check_op("aten::mm", make((136, 72), dtype), make((72, 40), dtype, seed=1))
    check_op("aten::baddbmm", make((3, 128, 96), dtype, seed=3), q, kn, beta=0, alpha=-0.5)
    check_op("aten::matmul", make((2, 3, 128, 64), dtype), make((2, 3, 64, 40), dtype, seed=1))
    assert [s[0] for s in seen] == ["_ws_gemm_kernel"] * 5, seen
    # 2 x 2 tiles per matrix (N = 104 in the second), 2 x 1 for the mm, 1 x 1 for the matmul: 12,
    # 12, 2, 12 and 6 pairs on at most 3 programs.
    assert [s[1] for s in seen] == [(3,), (3,), (2,), (3,), (3,)]


def test_warp_specialized_gemm_falls_back(monkeypatch):
    # Where the folded descriptors cannot describe the product, the general kernel runs the
    # table's next configuration (BLOCK_M 32 here), with the right result.
    seen = _ask_for_ws(monkeypatch)
    bf = "bfloat16"
    q, kn = make((3, 128, 64), bf), make((3, 64, 96), bf, seed=1)
    heads = make((128, 3, 64), bf).transpose(0, 1)  # (S, H, D) storage: matrices not one after another
    check_op("aten::bmm", heads, kn)
    check_op("aten::bmm", make((3, 120, 64), bf), kn)  # M not a multiple of BLOCK_M: tiles would straddle
    check_op("aten::bmm", make((3, 128, 40), bf), make((3, 40, 96), bf, seed=1))  # B's rows past K: the next matrix's
    check_op("aten::bmm", make((3, 128, 32), bf), make((3, 32, 96), bf, seed=1))  # one K step
    check_op("aten::bmm", q, make((1, 64, 96), bf, seed=1).expand(3, 64, 96))  # one B for every batch
    check_op("aten::bmm", q.transpose(1, 2).contiguous().transpose(1, 2), kn)  # A stored transposed
    check_op("aten::baddbmm", make((96,), bf, seed=2), q, kn)  # c
    check_op("aten::bmm", make((3, 128, 64)), make((3, 64, 96), seed=1))  # float32
    a, b = make((128, 64), bf), make((64, 96), bf, seed=1)
    assert_close(run_op("aten::mm.dtype", a, b, torch.float32), a.float() @ b.float(), rtol=1e-5, atol=1e-5)
    check_op("aten::mm", make((128, 24), bf)[:, 1:17], make((16, 8), bf, seed=1))  # base 2 bytes off
    check_op("aten::addmm", make((8,), bf), make((128, 16), bf), make((16, 8), bf, seed=1), alpha=0)  # no product
    assert seen == [("_gemm_kernel", s[1], 32) for s in seen] and len(seen) == 11


MATMUL_SHAPES = [
    ((9,), (9,)), ((5, 9), (9,)), ((9,), (9, 7)), ((5, 9), (9, 7)), ((2, 5, 9), (9,)), ((9,), (2, 9, 7)),
    ((2, 5, 9), (9, 7)), ((5, 9), (2, 9, 7)), ((2, 1, 5, 9), (3, 9, 7)), ((2, 3, 5, 9), (2, 3, 9, 7)),
    ((1, 5, 9), (4, 9, 7)), ((0, 5, 9), (9, 7)), ((5, 0), (0, 7)), ((2, 5, 0), (0,)),
]


@pytest.mark.parametrize(("sa", "sb"), MATMUL_SHAPES)
def test_matmul_rules(sa, sb):
    check_op("aten::matmul", make(sa), make(sb, seed=1))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64", "int32"])
def test_matmul_dtypes_and_strides(dtype):
    a = make((2, 9, 5), dtype).transpose(-1, -2)  # non-foldable batch of transposed matrices
    check_op("aten::matmul", a, make((9, 7), dtype, seed=1))
    check_op("aten::matmul", make((4, 2, 5, 9), dtype).transpose(0, 1), make((9, 7), dtype, seed=1))
    check_op("aten::matmul.out", make((2, 5, 9), dtype), make((9,), dtype, seed=1),
             out=torch.empty(2, 5, dtype=a.dtype))


@pytest.mark.parametrize("dtype", FLOATS)
def test_linear(dtype):
    w = make((7, 9), dtype, seed=1)
    bias = make((7,), dtype, seed=2)
    for shape in [(9,), (5, 9), (2, 5, 9), (2, 3, 1, 9), (0, 9)]:
        x = make(shape, dtype)
        check_op("aten::linear", x, w)
        check_op("aten::linear", x, w, bias)
    check_op("aten::linear", make((5, 9), dtype), w.t().contiguous().t(), make((5, 7), dtype))  # 2-D bias
    check_op("aten::linear", make((2, 5, 9), dtype).transpose(0, 1), w, make((), dtype))
    check_op("aten::linear", make((5, 9), dtype), make((9,), dtype, seed=1))  # 1-D weight
    check_op("aten::linear", make((2, 5, 9), dtype), make((9,), dtype, seed=1), make((), dtype))
    check_raises("aten::linear", make((5, 9), dtype), make((9,), dtype), make((), dtype), match="1-D weight")
    check_op("aten::linear.out", make((5, 9), dtype), w, bias, out=torch.empty(5, 7, dtype=w.dtype))


@pytest.mark.parametrize("dtype", FLOATS + ["int32"])
def test_mv_and_addmv(dtype):
    m, v = make((5, 9), dtype), make((9,), dtype, seed=1)
    for (_, x), (_, y) in zip(layouts(m), [*layouts(v), ("again", v)], strict=True):
        check_op("aten::mv", x, y)
        check_op("aten::addmv", make((5,), dtype, seed=2), x, y)
    check_op("aten::addmv", make((1,), dtype), m, v)
    if dtype != "int32":
        check_op("aten::addmv", make((5,), dtype), m, v, beta=0.25, alpha=3.0)
        check_op("aten::addmv", torch.full((5,), float("inf")).to(m.dtype), m, v, beta=0)
    check_op("aten::mv", make((0, 9), dtype), v)
    check_op("aten::addmv", make((5,), dtype), make((5, 0), dtype), make((0,), dtype), beta=2)
    check_op("aten::mv.out", m, v, out=torch.empty(5, dtype=m.dtype))
    check_op("aten::addmv.out", make((5,), dtype), m, v, out=torch.empty(5, dtype=m.dtype))


@pytest.mark.parametrize("dtype", FLOATS + ["int64", "int8"])
def test_dot(dtype):
    a, b = make((9,), dtype), make((9,), dtype, seed=1)
    for (_, x), (_, y) in zip(layouts(a), layouts(b), strict=True):
        check_op("aten::dot", x, y)
    check_op("aten::dot", make((0,), dtype), make((0,), dtype))
    check_op("aten::dot", make((300,), dtype), make((300,), dtype, seed=1))  # several K blocks
    check_op("aten::dot.out", a, b, out=torch.empty((), dtype=a.dtype))


@pytest.mark.parametrize("dtype", FLOATS + ["int32", "bool"])
def test_addr(dtype):
    c, v1, v2 = make((5, 7), dtype), make((5,), dtype, seed=1), make((7,), dtype, seed=2)
    check_op("aten::addr", c, v1, v2)
    check_op("aten::addr", make((7,), dtype), v1[::1], make((14,), dtype)[::2])
    if dtype in FLOATS:
        check_op("aten::addr", c, v1, v2, beta=0.5, alpha=-1.5)
        check_op("aten::addr", torch.full((5, 7), float("nan")).to(c.dtype), v1, v2, beta=0)
    elif dtype == "bool":
        check_op("aten::addr", c, v1, v2, beta=False)
        check_op("aten::addr", c, v1, v2, alpha=False)
    else:
        check_op("aten::addr", c, v1, v2, beta=2, alpha=-3)
    check_op("aten::addr.out", c, v1, v2, out=torch.empty(5, 7, dtype=c.dtype))


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_addr_non_finite_values_like_torch(dtype):
    """beta=0 ignores NaN/inf in self; alpha=0 still multiplies the vectors (NaN/inf give NaN), as
    torch's elementwise addr does."""
    v1, v2 = make((5,), dtype, seed=1), make((7,), dtype, seed=2)
    bad = torch.tensor([float("nan"), float("inf"), -float("inf"), 1.0, 2.0, 3.0, 4.0]).to(v1.dtype)
    check_op("aten::addr", bad.expand(5, 7), v1, v2, beta=0)
    check_op("aten::addr", bad, v1, v2, beta=0.0, alpha=2.0)
    check_op("aten::addr", make((5, 7), dtype), v1, bad, alpha=0)
    check_op("aten::addr", bad.expand(5, 7), v1, bad, alpha=0, beta=0)
    check_raises("aten::addr", make((5, 7), dtype), v1, v2, beta=False, match="bool beta")
    check_raises("aten::addr", make((5, 7), "int32"), v1.int(), v2.int(), alpha=True, match="bool alpha")


def test_addr_promotes_like_torch():
    check_op("aten::addr", make((5, 7), "int32"), make((5,), "int64"), make((7,), "int64"))
    check_op("aten::addr", make((5, 7)), make((5,), "int64"), make((7,), "int64"))


def test_bad_inputs_raise_before_launch():
    f, d = make((3, 4)), make((4, 5), "float64")
    check_raises("aten::mm", f, d, match="same dtype")
    check_raises("aten::mm", f, make((5, 6)), match="cannot be multiplied")
    check_raises("aten::mm", make((3,)), make((3, 4)), match="matrix")
    check_raises("aten::mm", make((2, 2), "bool"), make((2, 2), "bool"), match="bool")
    check_raises("aten::bmm", make((2, 3, 4)), make((3, 4, 5)), match="same number of batches")
    check_raises("aten::bmm", make((3, 4)), make((4, 5)), match="3-D")
    check_raises("aten::addmm", make((3, 5), "float64"), f, make((4, 5)), match="same dtype")
    check_raises("aten::addmm", make((2, 5)), f, make((4, 5)), match="broadcast")
    check_raises("aten::baddbmm", make((3, 3, 5)), make((2, 3, 4)), make((2, 4, 5)), match="broadcast")
    check_raises("aten::matmul", make(()), make((3,)), match="at least 1 dim")
    check_raises("aten::matmul", make((2, 3, 4)), make((3, 4, 5)), match="cannot be multiplied|broadcast")
    check_raises("aten::matmul", make((2, 2, 3)), make((3, 3, 4)), match="do not broadcast")
    check_raises("aten::linear", make((5, 9)), make((7, 8)), match="do not fit")
    check_raises("aten::linear", make((5, 9)), make((7, 9)), make((6,)), match="broadcast")
    check_raises("aten::linear", make((5, 9)), make((7, 9), "float16"), match="same dtype")
    check_raises("aten::mv", make((5, 9)), make((8,)), match="cannot be multiplied")
    check_raises("aten::addmv", make((4,)), make((5, 9)), make((9,)), match="broadcast")
    check_raises("aten::dot", make((3,)), make((4,)), match="inconsistent")
    check_raises("aten::dot", make((3,)), make((3,), "float64"), match="same dtype")
    check_raises("aten::dot", make(()), make(()), match="vector")
    check_raises("aten::addr", make((5, 7), "int32"), make((5,), "int32"), make((7,), "int32"), alpha=1.5,
                 match="floating point")
    check_raises("aten::addr", make((4, 7)), make((5,)), make((7,)), match="broadcast")


def test_out_of_wrong_shape_and_mixed_devices():
    with pytest.raises(NbxError, match=r"out is a float32 tensor of shape \[4, 3\], but the result is float32 "
                                       r"of shape \[3, 4\]"):
        run_op("aten::mm.out", make((3, 5)), make((5, 4)), out=torch.empty(4, 3))
    with pytest.raises(NbxError, match=r"out is a float64 tensor of shape \[3, 4\], but the result is float32"):
        run_op("aten::mm.out", make((3, 5)), make((5, 4)), out=torch.empty(3, 4, dtype=torch.float64))
    from nbx_core.memory import cuda
    from nbx_core.registry import get_registry
    from nbx_core.testing import from_torch

    if cuda.device_count() == 0:
        from nbx_core.device import Device
        from nbx_core.tensor import NBXTensor

        class _FakeCuda:  # a storage that claims a GPU: the device check must refuse it first
            device, ptr, nbytes = Device("cuda", 0), 0, 1 << 20

        a = from_torch(make((3, 5)))
        fake = NBXTensor(_FakeCuda(), (5, 4), (4, 1), 0, a.dtype)
        with pytest.raises(NbxError, match="device"):
            get_registry().call("aten::mm", a, fake)


@pytest.mark.skipif(numeric(), reason="aot only: compiles the GPU tile configurations of the issue's shapes")
@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32", "float64", "int32"])
def test_gpu_configurations_compile(dtype):
    for m, n, k in [(4096, 4096, 4096), (16, 4096, 4096), (4096, 3072, 768), (300, 200, 100)]:
        run_op("aten::mm", make((m, k), dtype), make((k, n), dtype))
    run_op("aten::linear", make((8, 512, 768), dtype), make((3072, 768), dtype), make((3072,), dtype))
    run_op("aten::linear", make((16, 4096), dtype), make((4096, 4096), dtype))  # decode NT (split K)
    run_op("aten::bmm", make((48, 512, 64), dtype), make((48, 64, 512), dtype))
    run_op("aten::bmm", make((48, 512, 64), dtype), make((48, 512, 64), dtype).transpose(1, 2))  # q @ k^T


@pytest.mark.skipif(numeric(), reason="aot only: reads the SASS of the kernel compiled for sm_90")
@pytest.mark.parametrize("tma", [0, 1])
@pytest.mark.parametrize("bias", [False, True])
def test_nt_gemm_keeps_its_wgmmas_in_flight(monkeypatch, tma, bias):
    # linear as the 4096^3 table tile compiles it: the loop's four wgmmas must stay asynchronous,
    # one group in flight (a single wait for zero groups, after the loop). With a zero-trip branch
    # before the loop, Triton 3.6 made ptxas serialise them, a wait after each (C7515).
    import os
    import subprocess
    import tempfile

    import triton
    from nbx_linalg import matmul
    from nbx_linalg.configs import GEMM

    import nbx_core.runtime.launch

    tile = {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 8, "num_stages": 3}
    compiled, warmup = [], matmul._gemm_kernel.warmup
    monkeypatch.setattr(nbx_core.runtime.launch, "compiled_variants", set())
    monkeypatch.setattr(GEMM, "lookup", lambda *args, **kw: {**tile, "TMA": tma})

    def keep(*args, **kwargs):
        compiled.append(warmup(*args, **kwargs))
        return compiled[-1]

    monkeypatch.setattr(matmul._gemm_kernel, "warmup", keep)
    x, w = make((256, 512), "bfloat16"), make((512, 512), "bfloat16", seed=1)
    run_op("aten::linear", x, w, *([make((512,), "bfloat16", seed=2)] if bias else []))
    with tempfile.NamedTemporaryFile("wb", suffix=".cubin") as f:
        f.write(compiled[-1].asm["cubin"])
        f.flush()
        tool = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")
        sass = subprocess.run([tool, "-sass", f.name], capture_output=True, text=True, check=True).stdout
    assert ("UTMALDG" in sass) == bool(tma) and ("LDGSTS" in sass) != bool(tma)
    assert sass.count("HGMMA.64x256x16.F32.BF16") == 4
    assert sass.count("WARPGROUP.DEPBAR.LE gsb0, 0x0") == 1


@pytest.mark.skipif(numeric(), reason="aot only: reads the PTX of the kernel compiled for sm_90")
@pytest.mark.parametrize("layout", ["NN", "NT"])
def test_prefill_scores_compile_warp_specialized(monkeypatch, layout):
    # The table sends prefill attention scores to the warp-specialized kernel; it must compile so:
    # a producer warp group beside the two consumers (384 threads), registers moved between them.
    # Triton keeps a loop it cannot specialize as it is, silently, so this is the only witness.
    from nbx_linalg import warp_specialized

    import nbx_core.runtime.launch

    compiled, warmup = [], warp_specialized._ws_gemm_kernel.warmup
    monkeypatch.setattr(nbx_core.runtime.launch, "compiled_variants", set())

    def keep(*args, **kwargs):
        compiled.append(warmup(*args, **kwargs))
        return compiled[-1]

    monkeypatch.setattr(warp_specialized._ws_gemm_kernel, "warmup", keep)
    q = make((4, 2048, 128), "bfloat16")
    k = make((4, 2048, 128), "bfloat16", seed=1)
    run_op("aten::bmm", q, k.transpose(1, 2) if layout == "NT" else k.reshape(4, 128, 2048))
    ptx = compiled[-1].asm["ptx"]
    assert ".reqntid 384" in ptx and "setmaxnreg" in ptx


@pytest.mark.parametrize(("backend", "capped"), [("cpu", False), ("cuda", True), ("aot", True)])
def test_products_without_tensor_cores_cap_their_tiles_on_a_gpu(monkeypatch, backend, capped):
    # int64 and float64 products hold a BLOCK_M x BLOCK_N x BLOCK_K broadcast: on a GPU (the traits of
    # cuda and aot) at most 32 x 32 x 8 whatever the configuration asks, as before the choice moved
    # onto TRAITS; the interpreter launches the configuration's tiles. float32 products keep them.
    from nbx_linalg import matmul

    from nbx_core.runtime import traits

    assert traits.traits(backend).tiles_on_chip is capped
    monkeypatch.setattr(matmul, "TRAITS", traits.traits(backend))
    launch, seen = matmul.launch, []
    monkeypatch.setattr(matmul, "launch", lambda kernel, grid, *args, **kw: seen.append(
        (kw["BLOCK_M"], kw["BLOCK_N"], kw["BLOCK_K"])) or launch(kernel, grid, *args, **kw))
    config = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 1, "num_stages": 1}
    for dtype in ("int64", "float64", "float32"):
        a, b = make((40, 70), dtype), make((70, 33), dtype, seed=1)
        got = matmul.gemm("aten::mm", from_torch(a), from_torch(b), config=config)
        if numeric():
            assert_close(got, a @ b)
    assert seen == [(32, 32, 8) if capped else (64, 64, 64)] * 2 + [(64, 64, 64)]
