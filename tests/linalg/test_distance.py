"""Conformance of aten::_cdist_forward and aten::_pdist_forward against torch CPU."""

from __future__ import annotations

import pytest
import torch

from nbx_core.testing import check_op, check_raises, layouts, make

C, PD = "aten::_cdist_forward", "aten::_pdist_forward"
PS = [0.0, 1.0, 2.0, float("inf"), 0.5, 3.5]


def _pair(dtype, p, s1=(2, 5, 7), s2=(1, 6, 7)):
    x, y = make(s1, dtype), make(s2, dtype, seed=1)
    if p == 0:  # p=0 counts differing features: make some equal
        x, y = x.round(), y.round()
    return x, y


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("p", PS)
def test_cdist_norms(p, dtype):
    x, y = _pair(dtype, p)
    check_op(C, x, y, p, None)  # batch dims broadcast
    check_op(C, x[0], y[0], p, 2)


@pytest.mark.parametrize("mode", [None, 0, 1, 2])
def test_cdist_compute_modes(mode):
    # Over 25 rows the default mode uses the matrix-product Euclidean form.
    for rows in (5, 30):
        x, y = make((rows, 7)), make((6, 7), seed=1)
        check_op(C, x, y, 2.0, mode)
        check_op(C, x.double(), y.double(), 2.0, mode)
        check_op(C, x, y, 1.0, mode)


def test_cdist_layouts_and_sizes():
    y = make((6, 7), seed=1)
    for _, x in layouts(make((5, 7))):
        check_op(C, x, y, 2.0, None)
        check_op(C, x, y, 2.0, 1)
    check_op(C, make((3, 0)), make((4, 0)), 2.0, None)  # no features: zeros
    check_op(C, make((0, 3)), make((4, 3)), 2.0, None)
    check_op(C, make((2, 0, 3)), make((4, 3)), 1.0, None)
    check_op("aten::_cdist_forward.out", make((5, 7)), y, 2.0, None, out=torch.empty(5, 6))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("p", [*PS, -1.5])
def test_pdist(p, dtype):
    x, _ = _pair(dtype, p, (6, 7))
    check_op(PD, x, p)


def test_pdist_sizes_and_default_p():
    check_op(PD, make((40, 3)))
    check_op(PD, make((1, 3)), 2.0)
    check_op(PD, make((0, 3)), 2.0)
    check_op(PD, make((4, 0)), 2.0)
    check_op("aten::_pdist_forward.out", make((5, 3)), 2.0, out=torch.empty(10))


def test_bad_inputs():
    x = make((3, 4))
    check_raises(C, x, x, -1.0, None, match="non-negative")
    check_raises(C, x, make((3, 5)), 2.0, None, match="same number of columns")
    check_raises(C, make((4,)), x, 2.0, None, match="x1 must have at least 2 dims")
    check_raises(C, x, x, 2.0, 3, match="compute_mode")
    check_raises(C, x, x.double(), 2.0, None, match="same dtype")
    check_raises(C, x.half(), x.half(), 2.0, None, match="expected float32 or float64")
    check_raises(C, x.bfloat16(), x.bfloat16(), 2.0, None, match="expected float32 or float64")
    check_raises(C, make((2, 3, 4)), make((3, 3, 4)), 2.0, None, match="broadcast")
    check_raises(PD, make((3,)), 2.0, match=r"self must be 2-D \(a matrix\)")
    check_raises(PD, x.t(), 2.0, match="contiguous")
    check_raises(PD, x.half(), 2.0, match="expected float32 or float64")


def test_tiles_as_before():
    # Before the choice moved onto DISTANCE: on a GPU 64 x 64 x 32 tiles on 4 warps for the
    # matrix-product form, 32 x 32 x 8 for the direct norms; on the interpreter each side the size
    # (at least 16) up to 64 or 32, on one warp.
    from nbx_linalg import distance as dist

    from nbx_core.runtime.launch import next_pow2

    for norm in range(6):
        mm = norm == dist.P_TWO_MM.value
        side = 64 if mm else 32
        for p, r, m in [(1, 1, 1), (5, 30, 7), (26, 100, 3), (1000, 17, 300), (64, 64, 64)]:
            for size in (4, 8):
                gpu = dist.DISTANCE.resolve(norm, size, p, r, m, target="sm_90")[0]
                assert gpu == (
                    {"BLOCK_P": 64, "BLOCK_R": 64, "BLOCK_M": 32, "num_warps": 4}
                    if mm
                    else {"BLOCK_P": 32, "BLOCK_R": 32, "BLOCK_M": 8, "num_warps": 4}
                )
                cpu = dist.DISTANCE.resolve(norm, size, p, r, m, target=None)[0]
                assert cpu == {
                    "BLOCK_P": min(max(16, next_pow2(p)), side),
                    "BLOCK_R": min(max(16, next_pow2(r)), side),
                    "BLOCK_M": min(max(16, next_pow2(m)), side),
                    "num_warps": 1,
                }


@pytest.mark.usefixtures("tuning_cache")
def test_config_argument_replaces_the_lookup(monkeypatch):
    # cdist's tiles as config= asks (16 x 32 x 16 on 2 warps), with torch's numbers.
    from nbx_linalg import distance as dist

    from nbx_core.tensor import empty_tensor
    from nbx_core.testing import from_torch, numeric, to_torch

    launch, seen = dist.launch, []
    monkeypatch.setattr(
        dist,
        "launch",
        lambda kernel, grid, *a, **kw: (
            seen.append((grid, kw["BLOCK_P"], kw["BLOCK_R"], kw["BLOCK_M"], kw["num_warps"]))
            or launch(kernel, grid, *a, **kw)
        ),
    )
    x, y = make((40, 9), "float32"), make((20, 9), "float32", seed=1)
    X, Y = from_torch(x), from_torch(y)
    res = empty_tensor((40, 20), X.dtype, X.device)
    config = {"BLOCK_P": 16, "BLOCK_R": 32, "BLOCK_M": 16, "num_warps": 2}
    dist.cdist_into(res, X, Y, 1.0, dist.P_ONE.value, config=config)
    assert seen == [((3, 1, 1), 16, 32, 16, 2)]
    if numeric():
        torch.testing.assert_close(to_torch(res), torch.cdist(x, y, 1.0))
