"""topk's in-register threshold select (nbx_index.topk), the chunk path it falls back to, and
sort's merge passes: exact positions under the tie rule (equal values: earlier position first)."""

import nbx_index.sort as S
import nbx_index.topk as T
import pytest
import torch

from nbx_core.testing import assert_close, make, numeric, run_op, to_torch

_BITS = {torch.float32: torch.int32, torch.float16: torch.int16, torch.bfloat16: torch.int16}


@pytest.fixture(params=["select", "chunks"])
def path(request, monkeypatch):
    """Which topk path runs: the in-register select (checked to be reached) or the chunk path."""
    calls = []
    if request.param == "select":
        real = T.select_rows
        monkeypatch.setattr(T, "select_rows", lambda *a, **k: (calls.append(1), real(*a, **k)))
    else:
        monkeypatch.setattr(T, "ROW_MAX", 0)
    yield request.param
    assert bool(calls) == (request.param == "select")


def _same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal bit for bit (so -0.0 is not 0.0), NaN payloads aside (the interpreter may change them)."""
    bits = _BITS.get(a.dtype)
    if not bits:
        return torch.equal(a, b)
    nan = a.isnan()
    return torch.equal(nan, b.isnan()) and torch.equal(a[~nan].view(bits), b[~nan].view(bits))


def _check(x: torch.Tensor, k: int, dim: int = -1, largest: bool = True) -> None:
    vals, idx = run_op("aten::topk", x, k, dim, largest)
    if not numeric():
        return
    ref = torch.sort(x, dim=dim, descending=largest, stable=True)[1].narrow(dim, 0, k)
    got = to_torch(idx)
    assert torch.equal(got, ref), f"k={k} dim={dim} largest={largest}\n{got}\n{ref}"
    assert _same_bits(to_torch(vals), torch.gather(x, dim, ref))
    assert_close(vals, torch.topk(x, k, dim, largest).values)


def _ties(shape, dtype) -> torch.Tensor:
    """Values from a handful of levels, so that the k-th value is usually tied."""
    return (make(shape, "int32", low=-3, high=4) * 2).to(getattr(torch, dtype))


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int32"])
def test_topk_ties(path, dtype):
    for n in (7, 100):
        x = _ties((2, n), dtype)
        for k in (1, 5, n):
            _check(x, k)
    _check(x, 30, largest=False)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_topk_nan_inf_signed_zero(path, dtype):
    x = make((4, 37), dtype)
    x[0, 3], x[0, 20], x[1, 0], x[2, 36] = float("nan"), float("nan"), float("nan"), float("nan")
    x[1, 5], x[1, 9], x[3, 2], x[3, 30] = float("inf"), -float("inf"), -float("inf"), float("inf")
    x[2, ::4] = 0.0
    x[2, 1::4] = -0.0
    x[3, 0::3] = x[3, 7]
    for largest in (True, False):
        for k in (1, 24, 37):
            _check(x, k, largest=largest)


def test_topk_layouts_and_lengths(path):
    x = make((6, 2, 3), "float32")
    _check(x, 3, 0)
    _check(x, 2, 1, largest=False)
    _check(x.transpose(0, 2), 2, -1)
    _check(make((1,), "float32"), 1, 0)
    for n in (2, 17, 64, 65):
        _check(make((1, n), "float32", seed=n), min(n, 9))
    if path == "select":
        # A row long enough for the GPU's full warp count (what the aot pass compiles); the chunk
        # path of so long a row is slow on the interpreter.
        _check(make((1, 5000), "bfloat16"), 50)


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16"])
def test_topk_small_ints(path, dtype):
    x = make((3, 50), dtype, low=0, high=6)
    _check(x, 10)
    _check(x, 40, largest=False)


def test_topk_k_beyond_register_sort(monkeypatch):
    # k too large for the final in-register sort: the chunk path, whatever the row length.
    monkeypatch.setattr(T, "K_MAX", 8)
    _check(_ties((2, 40), "float32"), 9)
    _check(_ties((2, 40), "float32"), 8)


@pytest.mark.parametrize("block", [8, 1024])
def test_sort_merge_passes(monkeypatch, block):
    # Chunks of 16 and merge blocks of 8 (several programs per pair of runs) or two runs (one per
    # pair at first), on every backend: the merge kernel and its unpacking last pass are reached.
    monkeypatch.setattr(
        S.SORT, "lookup", lambda *a, **kw: {"CHUNK": 16, "CHUNK_WARPS": 4, "MERGE_BLOCK": block, "MERGE_WARPS": 4}
    )
    x = _ties((2, 100), "float32")
    x[0, 7], x[1, 50], x[1, 99] = float("nan"), -0.0, float("nan")
    for desc in (False, True):
        got = run_op("aten::sort.stable", x, stable=True, descending=desc)
        if numeric():
            ref = torch.sort(x, descending=desc, stable=True)
            assert torch.equal(to_torch(got[1]), ref[1])
            assert _same_bits(to_torch(got[0]), torch.gather(x, 1, ref[1]))
    y = make((3, 37), "bfloat16")
    got = run_op("aten::sort.stable", y.t(), stable=True, dim=0)
    if numeric():
        assert torch.equal(to_torch(got[1]), torch.sort(y.t(), dim=0, stable=True)[1])
    # topk through a full sort whose last merge pass keeps the first k.
    monkeypatch.setattr(T, "ROW_MAX", 0)
    _check(x, 20)
