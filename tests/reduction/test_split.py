"""Reductions whose K is split over programs in one launch: the partials, the tickets, the counters.

Each program of a split launch stores a partial and takes a ticket from its output tile's counter;
the one taking the last ticket combines the tile's partials and resets the counter. Tiny tiles
make several splits (and several blocks of partials for the last program to combine) on every
backend: K is split into slices of a few elements (the configuration's SLICE), or, on the GPU's
rules, when a launch has few programs.
"""

from __future__ import annotations

import pytest
import torch

from nbx_core.testing import check_op, make, numeric, run_op, to_torch

NAN = float("nan")


@pytest.fixture(params=["int32", "int64", "unroll"])
def split(request, monkeypatch, force_tiles) -> None:
    """Tiny tiles and short slices of K; int32 or forced int64 indexing, or three blocks loaded a
    step in slices of 16 rounded up to whole steps (K of 32: slices of two steps, the last step
    ragged although the blocks divide K; 37: a last slice of one block and a step of one element;
    48: whole steps, slices of two). Asserts that the test reached the split path (with 3-block
    steps)."""
    from nbx_reduction import engine as E

    E._steps._plans.clear()
    unroll = 3 if request.param == "unroll" else 1
    force_tiles((2, 4, 1, unroll), (4, 4, 1, unroll), slice_k=16 if unroll > 1 else 8)
    if request.param == "int64":
        monkeypatch.setattr(E, "needs_int64", lambda *args: True)
    yield
    steps = [st for _, st in E._steps.items() if st.partials]
    assert steps, "no reduction split K"
    assert any(st.run.kwargs["UNROLL"] == unroll for st in steps), f"no split with {unroll}-block steps"
    E._steps._plans.clear()


def _inputs(dtype: str) -> list[tuple[torch.Tensor, int]]:
    """(input, dim) pairs: the column kernel (even tiles; several outer positions and ragged tiles)
    and the row kernel (even tiles; rows of strided columns, I > 1, and ragged tiles; even tiles
    whose K splits into slices of whole 3-block steps only when they are rounded up)."""
    low, high = (0.5, 1.5) if dtype == "float32" else (-2, 3)
    strided = make((6, 37), dtype, low=low, high=high, seed=1).t()
    return [
        (make((32, 8), dtype, low=low, high=high), 0),
        (make((3, 37, 5), dtype, low=low, high=high), 1),
        (make((4, 32), dtype, low=low, high=high), 1),
        (strided, 0),
        (make((4, 48), dtype, low=low, high=high, seed=2), 1),
    ]


@pytest.mark.parametrize("split", ["int32", "unroll"], indirect=True)
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_split_matches_torch(split: None, dtype: str) -> None:
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == "float32" else {}
    for x, dim in _inputs(dtype):
        check_op("aten::sum.dim_IntList", x, [dim], **tol)
        check_op("aten::prod.dim_int", x, dim, True, **tol)
        check_op("aten::amin", x, [dim])
        check_op("aten::argmin", x, dim, True)
        check_op("aten::max.dim", x, dim)
        if dtype == "float32":
            check_op("aten::mean.dim", x, [dim], **tol)
            check_op("aten::linalg_vector_norm", x, 3.0, [dim], **tol)


def test_split_arg_ties_and_nans(split: None) -> None:
    # Ties and NaNs in different splits (slices of 8) and in one: the first index wins, NaN first.
    x = torch.zeros((6, 37))
    x[0, [5, 13, 30]] = 2.0
    x[1, [30, 13]] = 2.0
    x[2, [20, 9, 33]] = NAN
    x[3] = -float("inf")
    x[4, [3, 19, 35]] = NAN
    x[4, 1] = float("inf")
    x[5, ::2] = -0.0
    for t, dim in ((x, 1), (x.t().contiguous(), 0)):
        check_op("aten::argmax", t, dim)
        check_op("aten::argmin", t, dim)
        check_op("aten::max.dim", t, dim)
        check_op("aten::min.dim", t, dim)


@pytest.mark.parametrize("split", ["int32"], indirect=True)
def test_split_counters_reset(split: None) -> None:
    """Each launch leaves its tile counters at zero: a second launch of the same plan on other
    values is right (with a counter left behind, its last program would never combine)."""
    from nbx_core.runtime.kernels import tickets

    for x, dim in _inputs("float32")[:3]:
        for seed in (5, 6):
            y = make(tuple(x.shape), "float32", seed=seed)
            first = check_op("aten::sum.dim_IntList", y, [dim], rtol=1e-5, atol=1e-5)
            check_op("aten::argmax", y, dim)
            again = run_op("aten::sum.dim_IntList", y, [dim])
            if numeric():
                # The partials are combined in a fixed order, whichever program finishes last.
                assert torch.equal(to_torch(first), to_torch(again))
    if numeric():
        assert tickets._counters and all(not to_torch(c).any() for c in tickets._counters.values())


def test_gpu_tiles_on_long_rows(force_tiles) -> None:
    """The GPU's tiles (which the aot pass compiles) on 3 rows and 3 columns of 4100 small integers,
    ties everywhere: the rows in slices of whole 1024-element steps (the last a block and 4
    elements); the arg ops' columns load 2 blocks a step under a register cap, the sums' columns
    pipeline their loads in 3 stages."""
    from nbx_reduction import engine as E

    E._steps._plans.clear()
    force_tiles(gpu=True)
    x = make((3, 4100), "int64", low=-3, high=4, seed=7).to(torch.bfloat16)
    x[1, [3000, 1500, 4099]] = NAN
    x[2] = -float("inf")
    x[2, 4096] = 5.0
    try:
        for t, dim in ((x, 1), (x.t().contiguous(), 0)):
            check_op("aten::argmax", t, dim)
            check_op("aten::argmin", t, dim)
            check_op("aten::max.dim", t, dim)
            check_op("aten::sum.dim_IntList", t, [dim])
        launches = [st.run.kwargs for _, st in E._steps.items() if st.partials]
        assert any(
            k["OP"] == E.ARGMAX and k["UNROLL"] == 2 and k.get("maxnreg") == 64 and "BLOCK_I" in k for k in launches
        )
        assert any(k["OP"] == E.SUM and k["STAGES"] == 3 and "BLOCK_I" in k for k in launches)
    finally:
        E._steps._plans.clear()
