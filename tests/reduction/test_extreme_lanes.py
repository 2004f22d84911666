"""max, min, amax, amin, argmax, argmin and logsumexp on rows built to catch per-lane mistakes.

The engine keeps one value (and index) per lane and combines the lanes at the end; these rows put
ties, NaNs and identity values in the same lane (across iterations) and in different lanes, under
the GPU tiles and tiny tiles (many lanes, many iterations), with int32 and with int64 indexing.
"""

from __future__ import annotations

import pytest
import torch

from nbx_core.testing import check_op, make

NAN = float("nan")
INF = float("inf")
FLOATS = ["float32", "bfloat16", "float64"]
# int32 and int64 reach the accumulator's identity (its minimum and maximum); uint8 starts at 0.
INTS = ["int32", "int64", "uint8"]


@pytest.fixture(params=["gpu", "tiny", "tiny-int64", "split"])
def tiling(request, monkeypatch, force_tiles) -> None:
    """The engine's tiles for the test: its GPU choice, or tiny tiles (each lane sees several
    elements), the second with int64 indexing forced, the third with K split over programs that
    combine their partials (in slices of 16 elements, on every backend). Other tests run the CPU
    choice."""
    from nbx_reduction import engine as E

    E._steps._plans.clear()
    request.addfinalizer(E._steps._plans.clear)
    if request.param == "gpu":
        force_tiles(gpu=True)
    if request.param == "tiny":
        force_tiles((1, 8, 1), (4, 8, 1))
    if request.param == "tiny-int64":
        force_tiles((2, 4, 1), (2, 16, 1))
        monkeypatch.setattr(E, "needs_int64", lambda *args: True)
    if request.param == "split":
        force_tiles((4, 8, 1), (8, 8, 1), slice_k=16)

        def check_split() -> None:
            assert any(st.partials for _, st in E._steps.items()), "no reduction split K"

        request.addfinalizer(check_split)


# Rows of K elements. Under the tiny tiles (BLOCK_K 4, 8, 16) some of these share a lane and some
# do not; the GPU's BLOCK_K of 2048 behaves as tiny tiles do, and costs the interpreter far more.
K = 37
_TOP = (3, 11, 19, 35, 6)
_BOTTOM = (4, 12, 20, 36)
# The first of these sits in a lane after the others' lanes.
_LATE = (35, 19, 11, 6)


def _float_rows() -> torch.Tensor:
    rows = [torch.full((K,), v, dtype=torch.float64) for v in (-INF, INF, NAN)]
    for top in (4.0, INF):
        r = make((K,), "float64", low=-1, high=1, seed=K)
        r[list(_TOP)] = top
        r[list(_BOTTOM)] = -top
        rows.append(r)
        r = make((K,), "float64", low=-1, high=1, seed=K + 1)
        r[list(_LATE)] = top
        rows.append(r)
        rows.append(-r)
    r = make((K,), "float64", seed=1)
    r[K // 2] = 9.0
    r[[K // 2 + 8, K - 1]] = NAN
    rows.append(r)
    r = make((K,), "float64", seed=2)
    r[[0, 8, K - 1]] = NAN
    rows.append(r)
    r = torch.full((K,), -INF, dtype=torch.float64)
    r[K - 1] = 0.0
    rows.append(r)
    r = torch.full((K,), INF, dtype=torch.float64)
    r[K - 1] = -INF
    rows.append(r)
    rows.append(make((K,), "float64", seed=3))
    return torch.stack(rows)


def _int_rows(dtype: str) -> torch.Tensor:
    info = torch.iinfo(getattr(torch, dtype))
    rows = [torch.full((K,), v, dtype=torch.int64) for v in (info.min, info.max)]
    r = make((K,), "int64", low=-3, high=3, seed=K)
    r[list(_TOP)] = info.max
    r[list(_BOTTOM)] = info.min
    rows.append(r)
    r = make((K,), "int64", low=-3, high=3, seed=K + 1)
    r[list(_LATE)] = info.max
    rows.append(r)
    r = r.clone()
    r[list(_LATE)] = info.min
    rows.append(r)
    r = torch.full((K,), info.min, dtype=torch.int64)
    r[[K // 2, K - 1]] = info.min + 1
    rows.append(r)
    rows.append(make((K,), "int64", seed=4))
    return torch.stack(rows).clamp(info.min, info.max).to(getattr(torch, dtype))


def _check(x: torch.Tensor, lse: bool) -> None:
    # Reducing dim 1 of x runs the row kernel; dim 0 of its transpose made contiguous, the column kernel.
    for t, dim in ((x, 1), (x.t().contiguous(), 0)):
        if t.dtype != torch.bool:
            check_op("aten::argmax", t, dim)
            check_op("aten::argmin", t, dim, True)
        check_op("aten::max.dim", t, dim)
        check_op("aten::min.dim", t, dim)
        check_op("aten::amax", t, [dim])
        check_op("aten::amin", t, [dim], True)
        if lse:
            check_op("aten::logsumexp", t, [dim])
    if x.dtype != torch.bool:
        check_op("aten::argmax", x)
        check_op("aten::argmin", x)
    check_op("aten::max", x)
    check_op("aten::min", x)


@pytest.mark.parametrize("dtype", FLOATS)
def test_float_lanes(tiling: None, dtype: str) -> None:
    _check(_float_rows().to(getattr(torch, dtype)), lse=True)


@pytest.mark.parametrize("dtype", INTS)
def test_int_lanes(tiling: None, dtype: str) -> None:
    _check(_int_rows(dtype), lse=False)


@pytest.mark.parametrize("tiling", ["tiny"], indirect=True)
def test_bool_lanes(tiling: None) -> None:
    x = torch.zeros((4, K), dtype=torch.bool)
    x[1] = True
    x[2, list(_LATE)] = True
    x[3, K - 1] = True
    _check(x, lse=False)


@pytest.mark.parametrize(
    ("dtype", "k"),
    [
        ("bfloat16", 4096),
        ("bfloat16", 1500),
        ("float32", 1500),
        ("float64", 1500),
        ("int32", 1500),
        ("uint8", 1500),
        ("bool", 1500),
    ],
)
def test_gpu_arg_rows(force_tiles, dtype: str, k: int) -> None:
    """The GPU's tiles for the arg ops on rows of 1024 to 4096 elements: blocks of 1024, four a step
    (the row of 4096 in one step, unmasked; of 1500, two blocks a step, the last 548 lanes masked).
    Ties of small integers everywhere, and of the top value at 700, 1400 and the last element, at
    the last two elements;
    NaNs (the first at 60, after infs; at the first and the last element); all -inf, one finite
    after -infs, one -inf among infs. Integers place their type's extremes likewise (and fill a
    row with the minimum, the identity of argmax); bool (max and min only) all False, all True,
    one True last."""
    from nbx_reduction import engine as E

    E._steps._plans.clear()
    force_tiles(gpu=True)
    if dtype in ("bfloat16", "float32", "float64"):
        rows = [make((k,), "float64", low=-3, high=4, seed=11).round()]
        for top, at in ((9.0, [k - 1, 700, 1400]), (INF, [k - 2, k - 1])):
            r = rows[0].clone()
            r[at] = top
            r[[5, 900]] = -top
            rows.append(r)
        r = rows[0].clone()
        r[[3, 40]] = INF
        r[[1200, 60, k - 1]] = NAN
        rows.append(r)
        r = rows[0].clone()
        r[[0, k - 1]] = NAN
        rows.append(r)
        rows.append(torch.full((k,), -INF, dtype=torch.float64))
        r = torch.full((k,), -INF, dtype=torch.float64)
        r[k - 1] = 0.0
        rows.append(r)
        r = torch.full((k,), INF, dtype=torch.float64)
        r[1000] = -INF
        rows.append(r)
    elif dtype == "bool":
        rows = [
            make((k,), "int64", low=0, high=2, seed=11),
            torch.zeros(k, dtype=torch.int64),
            torch.ones(k, dtype=torch.int64),
        ]
        r = torch.zeros(k, dtype=torch.int64)
        r[k - 1] = 1
        rows.append(r)
    else:
        info = torch.iinfo(getattr(torch, dtype))
        rows = [make((k,), "int64", low=0, high=5, seed=11)]
        for at in ([k - 1, 700, 1400], [k - 2, k - 1]):
            r = rows[0].clone()
            r[at] = info.max
            r[[5, 900]] = info.min
            rows.append(r)
        rows.append(torch.full((k,), info.min, dtype=torch.int64))
        r = torch.full((k,), info.min, dtype=torch.int64)
        r[k - 1] = info.min + 1
        rows.append(r)
    x = torch.stack(rows).to(getattr(torch, dtype))
    try:
        if dtype != "bool":
            check_op("aten::argmax", x, 1)
            check_op("aten::argmin", x, 1, True)
        check_op("aten::max.dim", x, 1)
        check_op("aten::min.dim", x, 1)
        plans = [st.run.kwargs for _, st in E._steps.items()]
        assert len(plans) == (2 if dtype == "bool" else 4)
        assert all(
            w["BLOCK_K"] == 1024 and w["UNROLL"] == (4 if k == 4096 else 2) and w["EVEN"] == (k == 4096) for w in plans
        )
    finally:
        E._steps._plans.clear()
