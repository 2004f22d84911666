"""Random ops: shapes, dtypes, keywords, reproducibility from the seed, statistics and edges."""

from __future__ import annotations

import pytest
import torch
from nbx_elementwise import random as R

from nbx_core.errors import NbxError
from nbx_core.testing import check_raises, make, numeric, run_op, to_torch

N = 4096


def _t(x):
    return to_torch(x)


@pytest.fixture(autouse=True)
def _seed():
    R.manual_seed(1234)


def _stats_uniform(u, lo=0.0, hi=1.0):
    if not numeric():
        return
    # Half types may round the largest draws up to the bound itself, as in torch.
    half = u.dtype in (torch.float16, torch.bfloat16)
    u = u.double()
    assert lo <= u.min() and (u.max() <= hi if half else u.max() < hi)
    assert abs(u.mean() - (lo + hi) / 2) < 0.05 * (hi - lo)
    assert abs(u.var() - (hi - lo) ** 2 / 12) < 0.1 * (hi - lo) ** 2 / 12


def _stats_normal(z, mean=0.0, std=1.0):
    if not numeric():
        return
    z = z.double()
    assert abs(z.mean() - mean) < 0.1 * std
    assert abs(z.std() - std) < 0.1 * std


@pytest.mark.parametrize("dtype", (None, torch.float16, torch.bfloat16, torch.float64))
def test_rand_randn(dtype):
    u = _t(run_op("aten::rand", [64, 64], dtype=dtype))
    z = _t(run_op("aten::randn", [N], dtype=dtype))
    want = dtype or torch.float32
    assert u.shape == (64, 64) and u.dtype == want and z.shape == (N,) and z.dtype == want
    _stats_uniform(u)
    _stats_normal(z)
    assert _t(run_op("aten::rand", [0, 3])).shape == (0, 3)
    assert _t(run_op("aten::randn", [])).shape == ()


def test_reproducible_and_advancing():
    R.manual_seed(7)
    a = _t(run_op("aten::rand", [100]))
    b = _t(run_op("aten::rand", [100]))
    R.manual_seed(7)
    a2 = _t(run_op("aten::rand", [100]))
    assert R.initial_seed() == 7
    if numeric():
        assert torch.equal(a, a2)
        assert not torch.equal(a, b)
        R.manual_seed(8)
        assert not torch.equal(a, _t(run_op("aten::rand", [100])))


def test_like_ops():
    x = make((32, 64), "bfloat16")
    u = _t(run_op("aten::rand_like", x))
    z = _t(run_op("aten::randn_like", x, dtype=torch.float32))
    assert u.shape == x.shape and u.dtype == torch.bfloat16
    assert z.shape == x.shape and z.dtype == torch.float32
    _stats_uniform(u)
    _stats_normal(z)
    check_raises("aten::rand_like", make((3,), "int32"), match="floating")


def test_uniform():
    x = make((N,))
    u = _t(run_op("aten::uniform", x, -2.0, 3.0))
    assert u.shape == x.shape and u.dtype == torch.float32
    _stats_uniform(u, -2.0, 3.0)
    u = _t(run_op("aten::uniform", x.double(), **{"from": 1.0, "to": 2.0}))
    assert u.dtype == torch.float64
    _stats_uniform(u, 1.0, 2.0)
    check_raises("aten::uniform", x, 2.0, 1.0, match="from=2.0 > to=1.0")


def test_normal_overloads():
    mean = make((64, 64)) * 0 + 3.0
    z = _t(run_op("aten::normal", mean, 2.0))
    assert z.shape == (64, 64) and z.dtype == torch.float32
    _stats_normal(z, 3.0, 2.0)
    z = _t(run_op("aten::normal", -1.0, torch.full((N,), 0.5, dtype=torch.float16)))
    assert z.dtype == torch.float16
    _stats_normal(z, -1.0, 0.5)
    z = _t(run_op("aten::normal", torch.zeros(N, 1), torch.full((1, 2), 3.0)))
    assert z.shape == (N, 2)
    _stats_normal(z, 0.0, 3.0)
    z = _t(run_op("aten::normal", 5.0, 0.1, [N], dtype=torch.float64))
    assert z.dtype == torch.float64
    _stats_normal(z, 5.0, 0.1)
    check_raises("aten::normal", mean, -1.0, match="std >= 0")


def test_bernoulli():
    p = torch.full((N,), 0.3)
    b = _t(run_op("aten::bernoulli", p))
    assert b.dtype == torch.float32 and b.shape == p.shape
    if numeric():
        assert set(b.unique().tolist()) <= {0.0, 1.0} and abs(b.mean() - 0.3) < 0.05
    b = _t(run_op("aten::bernoulli", make((N,), "int32"), 0.8))
    assert b.dtype == torch.int32
    if numeric():
        assert abs(b.double().mean() - 0.8) < 0.05
    probs = torch.tensor([0.0, 1.0]).repeat(N // 2).double()
    b = _t(run_op("aten::bernoulli", make((N,), "bfloat16"), probs))
    assert b.dtype == torch.bfloat16
    if numeric():
        assert torch.equal(b.double(), probs)
        assert _t(run_op("aten::bernoulli", make((N,)), 0.0)).sum() == 0
        assert _t(run_op("aten::bernoulli", make((N,)), 1.0)).sum() == N
    check_raises("aten::bernoulli", make((4,)), 1.5, match=r"\[0, 1\]")
    check_raises("aten::bernoulli", make((4,)), torch.full((2, 4), 0.5), match="broadcast")
    check_raises("aten::bernoulli", make((4,), "int32"), match="floating")


@pytest.mark.parametrize("dtype", ("float32", "bfloat16"))
def test_dropout(dtype):
    x = make((64, 64), dtype, low=1.0, high=2.0)
    y = _t(run_op("aten::dropout", x, 0.25, True))
    assert y.shape == x.shape and y.dtype == x.dtype
    if numeric():
        kept = y != 0
        assert abs(kept.double().mean() - 0.75) < 0.05
        torch.testing.assert_close(y[kept].float(), (x[kept] / 0.75).float(), rtol=1.6e-2, atol=1e-2)
    nx = run_op("aten::dropout", x, 0.5, False)
    assert torch.equal(_t(nx), x)
    assert torch.equal(_t(run_op("aten::dropout", x, 0.0, True)), x)
    y = _t(run_op("aten::dropout", x, 1.0, True))
    if numeric():
        assert (y == 0).all()
    check_raises("aten::dropout", x, 1.5, True, match=r"\[0, 1\]")


def test_native_dropout():
    x = make((64, 64), low=1.0, high=2.0)
    out, mask = (_t(v) for v in run_op("aten::native_dropout", x, 0.4, True))
    assert out.shape == x.shape and mask.dtype == torch.bool
    if numeric():
        assert abs(mask.double().mean() - 0.6) < 0.05
        torch.testing.assert_close(out, torch.where(mask, x / 0.6, 0.0))
    out, mask = (_t(v) for v in run_op("aten::native_dropout", x, 0.4, False))
    if numeric():
        assert torch.equal(out, x) and mask.all()
    out, mask = (_t(v) for v in run_op("aten::native_dropout", x, 1.0, True))
    if numeric():
        assert (out == 0).all() and not mask.any()
    out, mask = (_t(v) for v in run_op("aten::native_dropout", x, 0.0, None))
    if numeric():
        assert torch.equal(out, x) and mask.all()
    out, mask = run_op("aten::native_dropout", make((0, 3)), 0.5, True)
    assert out.shape == (0, 3) and mask.dtype.name == "bool"


def test_errors():
    check_raises("aten::rand", [2], dtype=torch.int32, match="expected floating")
    check_raises("aten::randn", [-1], match="aten::randn")
    with pytest.raises(NbxError, match="manual_seed"):
        run_op("aten::rand", [2], generator=object())
    with pytest.raises(NbxError, match="seed"):
        R.manual_seed(-1)
