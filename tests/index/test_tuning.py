"""sort, topk, embedding_bag, multinomial and row copy launches as data (nbx_index.sort.SORT,
nbx_index.topk.TOPK, nbx_index.embedding.EMBEDDING_BAG, nbx_index.random.MULTINOMIAL,
nbx_index.gather.TAKE_ROWS): today's choices on each backend, and config=."""

from __future__ import annotations

import pytest
import torch
from nbx_index import embedding as E
from nbx_index import gather as G
from nbx_index import random as R
from nbx_index import sort as S
from nbx_index import topk as T

from nbx_core.errors import NbxError
from nbx_core.runtime import tuning
from nbx_core.testing import make, numeric, to_torch

pytestmark = pytest.mark.usefixtures("tuning_cache")


@pytest.mark.parametrize("itemsize", [2, 4])
def test_same_launch_as_before(itemsize):
    # Before the choice moved onto nbx_core.runtime.tuning: chunks of 512 keys on a GPU and 16 on
    # the interpreter, 4 warps, merge blocks of 2048 on 4 warps; the select on 32 warps at most, one
    # per 256 keys of the row, and one on the interpreter.
    sort = {"CHUNK_WARPS": 4, "MERGE_BLOCK": 2048, "MERGE_WARPS": 4}
    for n, warps in ((100, 1), (1000, 4), (5000, 32), (32000, 32)):
        assert S.SORT.resolve(itemsize, n, target="sm_90")[0] == {"CHUNK": 512, **sort}
        assert S.SORT.resolve(itemsize, n, target=None)[0] == {"CHUNK": 16, **sort, "PROGRAM_KEYS": 4096}
        assert T.TOPK.resolve(itemsize, n, target="sm_90")[0] == {"num_warps": warps}
        assert T.TOPK.resolve(itemsize, n, target=None)[0] == {"num_warps": 1}
        if tuning.arch() is None:
            assert S.SORT.lookup(itemsize, n)["CHUNK"] == 16 and T.TOPK.lookup(itemsize, n)["num_warps"] == 1


def test_chunk_sort_programs_as_before():
    # Before the choice moved onto SORT: the interpreter sorted min(next_pow2(chunks), max(1, 4096 // chunk))
    # chunks a program, a GPU one.
    from nbx_core.runtime.launch import next_pow2

    gpu, cpu = (S.SORT.resolve(4, 1000, target=t)[0] for t in ("sm_90", None))
    for chunks in (1, 3, 7, 64, 100, 5000):
        for chunk in (1, 2, 16, 512, 1024, 4096, 8192):
            assert S.chunks_per_program(chunks, chunk, gpu) == 1
            assert S.chunks_per_program(chunks, chunk, cpu) == min(next_pow2(chunks), max(1, 4096 // chunk))


def test_row_copy_tiles_as_before():
    # Before the choice moved onto TAKE_ROWS: BLOCK_Q the columns up to 1024 (2-byte elements) or 512
    # on a GPU, 4096 on the interpreter; BLOCK_R the rows filling 4096 (GPU) or 8192 elements; 4 warps.
    from nbx_core.runtime.launch import next_pow2

    for size in (1, 2, 4, 8):
        for rows in (1, 3, 100, 5000):
            for cols in (1, 5, 300, 1024, 3000, 70000):
                bq = min(next_pow2(cols), 1024 if size <= 2 else 512)
                gpu = {"BLOCK_R": max(1, min(next_pow2(rows), 4096 // bq)), "BLOCK_Q": bq, "num_warps": 4}
                assert G.TAKE_ROWS.resolve(size, rows, cols, target="sm_90")[0] == gpu
                bq = min(next_pow2(cols), 4096)
                cpu = {"BLOCK_R": max(1, min(next_pow2(rows), 8192 // bq)), "BLOCK_Q": bq, "num_warps": 4}
                assert G.TAKE_ROWS.resolve(size, rows, cols, target=None)[0] == cpu


def test_row_copy_config_argument(monkeypatch):
    # index_select's rows copied 2 x 8 a program, as config= asks.
    from nbx_core import dtypes as D
    from nbx_core.testing import from_torch

    seen = []
    launch = G.launch
    monkeypatch.setattr(G, "launch", lambda kernel, grid, *a, **kw: seen.append((grid, kw["BLOCK_R"], kw["BLOCK_Q"]))
                        or launch(kernel, grid, *a, **kw))
    x = make((6, 20))
    X, idx = from_torch(x), from_torch(torch.tensor([5, 0, 3]))
    got = G.take_rows("aten::index_select", "index", X, idx, 6, 20, ((), ()), ((20,), (1,)), (3, 20),
                      config={"BLOCK_R": 2, "BLOCK_Q": 8, "num_warps": 2})
    assert seen == [((2, 3), 2, 8)] and idx.dtype is D.int64
    if numeric():
        torch.testing.assert_close(to_torch(got), x[[5, 0, 3]])


def test_same_tiles_as_before():
    # Before the choice moved onto nbx_core.runtime.tuning: embedding_bag's columns a program were
    # the row up to 1024 on a GPU and 4096 on the interpreter; multinomial's samples a program up
    # to 64 on both, walking 128 categories a step on a GPU and up to 4096 on the interpreter.
    for d, gpu, cpu in ((0, 1, 1), (40, 64, 64), (3000, 1024, 4096), (9000, 1024, 4096)):
        assert E.EMBEDDING_BAG.resolve("float32", d, target="sm_90")[0] == {"BLOCK_D": gpu}
        assert E.EMBEDDING_BAG.resolve("bfloat16", d, target=None)[0] == {"BLOCK_D": cpu}
    for n, s, bs, gpu, cpu in ((5, 3, 4, 8, 8), (300, 100, 64, 128, 512), (10000, 64, 64, 128, 4096)):
        assert R.MULTINOMIAL.resolve("float32", n, s, target="sm_90")[0] == {"BLOCK_S": bs, "BLOCK_N": gpu}
        assert R.MULTINOMIAL.resolve("float32", n, s, target=None)[0] == {"BLOCK_S": bs, "BLOCK_N": cpu}


def test_config_argument_replaces_the_lookup(monkeypatch):
    # The select at 2 warps and a sort in chunks of 32 merged by blocks of 16: both launched so, both exact.
    from nbx_core import dtypes as D
    from nbx_core.tensor import empty_tensor
    from nbx_core.testing import from_torch

    seen = []
    for module in (S, T):
        launch = module.launch
        monkeypatch.setattr(module, "launch", lambda kernel, grid, *a, launch=launch, **kw:
                            seen.append((kernel.fn.__name__, kw.get("num_warps"), kw.get("CHUNK"), kw.get("BLOCK")))
                            or launch(kernel, grid, *a, **kw))
    x = make((2, 40))
    X = from_torch(x)
    vals, idx = empty_tensor((2, 5), X.dtype, X.device), empty_tensor((2, 5), D.int64, X.device)
    T.select_rows(vals, idx, X, 2, 40, 5, 40, 1, True, config={"num_warps": 2})
    assert seen[-1][:2] == ("_select_kernel", 2)
    sv, si = empty_tensor((2, 40), X.dtype, X.device), empty_tensor((2, 40), D.int64, X.device)
    config = {"CHUNK": 32, "CHUNK_WARPS": 2, "MERGE_BLOCK": 16, "MERGE_WARPS": 8}
    S._sort_rows(sv, si, X, 2, 40, 40, 40, 1, False, config=config)
    assert ("_chunk_kernel", 2, 32, None) in seen and ("_merge_kernel", 8, None, 16) in seen
    if numeric():
        torch.testing.assert_close(to_torch(vals), torch.topk(x, 5).values)
        torch.testing.assert_close(to_torch(sv), torch.sort(x).values)
    with pytest.raises(NbxError, match="passed as config= to sort: missing"):
        S._sort_rows(sv, si, X, 2, 40, 40, 40, 1, False, config={"CHUNK": 32})
