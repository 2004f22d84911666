"""randperm and multinomial: seeded reproducibility and statistics (NBX's own Philox streams)."""

import numpy as np
import pytest
import torch
from nbx_index.random import manual_seed

from nbx_core.errors import NbxError
from nbx_core.testing import make, numeric, run_op, to_torch

values = pytest.mark.skipif(not numeric(), reason="random values exist only where kernels run")


def test_randperm_shapes():
    out = run_op("aten::randperm", 20)
    assert out.shape == (20,) and out.dtype.name == "int64"
    assert run_op("aten::randperm", 0).shape == (0,)
    assert run_op("aten::randperm", 5, dtype=torch.int32).dtype.name == "int32"
    with pytest.raises(NbxError, match="n must be"):
        run_op("aten::randperm", -1)


@values
def test_randperm_is_seeded_permutation():
    manual_seed(3)
    a = to_torch(run_op("aten::randperm", 50))
    manual_seed(3)
    b = to_torch(run_op("aten::randperm", 50))
    c = to_torch(run_op("aten::randperm", 50))
    assert sorted(a.tolist()) == list(range(50))
    assert torch.equal(a, b) and not torch.equal(a, c)
    # Each position is roughly uniform over values: the mean of many permutations' first element.
    firsts = [to_torch(run_op("aten::randperm", 10))[0].item() for _ in range(60)]
    assert 2.0 < np.mean(firsts) < 7.0


def test_multinomial_shapes_and_errors():
    p = torch.tensor([[0.1, 0.0, 0.6, 0.3], [1.0, 1.0, 1.0, 1.0]])
    assert run_op("aten::multinomial", p, 3).shape == (2, 3)
    assert run_op("aten::multinomial", p[0], 5, True).shape == (5,)
    assert run_op("aten::multinomial", p.t().contiguous().t(), 2, True).dtype.name == "int64"
    with pytest.raises(NbxError, match="without replacement"):
        run_op("aten::multinomial", p, 5)
    with pytest.raises(NbxError, match="floating"):
        run_op("aten::multinomial", torch.ones(3, dtype=torch.int64), 1)


@values
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_multinomial_statistics(dtype):
    manual_seed(0)
    p = torch.tensor([[0.1, 0.0, 0.6, 0.3], [1.0, 1.0, 1.0, 1.0]]).to(getattr(torch, dtype))
    n = 4000
    s = to_torch(run_op("aten::multinomial", p, n, True))
    freq = torch.stack([torch.bincount(r, minlength=4) for r in s]).double() / n
    want = p.double() / p.double().sum(1, keepdim=True)
    # Three standard deviations of a binomial frequency.
    assert (freq - want).abs().max() < 3 * (0.25 / n) ** 0.5 + 1e-3
    assert freq[0, 1] == 0
    w = to_torch(run_op("aten::multinomial", p, 3, False))
    for row in w.tolist():
        assert len(set(row)) == 3
    assert 1 not in w[0].tolist()  # a zero-weight category is never drawn while others remain
    manual_seed(0)
    again = to_torch(run_op("aten::multinomial", p, n, True))
    assert torch.equal(s, again)


@values
def test_multinomial_without_replacement_order():
    # The first draw of the exponential race follows the weights.
    manual_seed(1)
    p = make((4,), low=0.5, high=1.0)
    firsts = torch.tensor([to_torch(run_op("aten::multinomial", p, 1))[0].item() for _ in range(30)])
    assert firsts.unique().numel() > 1
