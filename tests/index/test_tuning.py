"""sort, topk, embedding_bag and multinomial launches as data (nbx_index.sort.SORT, nbx_index.topk.TOPK,
nbx_index.embedding.EMBEDDING_BAG, nbx_index.random.MULTINOMIAL): today's choices on each backend, and
config=."""

from __future__ import annotations

import pytest
import torch
from nbx_index import embedding as E
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
        assert S.SORT.resolve(itemsize, n, target=None)[0] == {"CHUNK": 16, **sort}
        assert T.TOPK.resolve(itemsize, n, target="sm_90")[0] == {"num_warps": warps}
        assert T.TOPK.resolve(itemsize, n, target=None)[0] == {"num_warps": 1}
        if tuning.arch() is None:
            assert S.SORT.lookup(itemsize, n)["CHUNK"] == 16 and T.TOPK.lookup(itemsize, n)["num_warps"] == 1


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
