"""A CUDA graph's outputs borrow the graph's memory until the next run (cuda backend only)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from nbx_core import backend
from nbx_core.graph import load
from nbx_core.graph.export import export_module
from nbx_core.memory import cuda as nbx_cuda
from nbx_core.tensor import tensor

pytestmark = pytest.mark.skipif(backend.current() != "cuda", reason="CUDA graphs need the cuda backend")


class _Square(torch.nn.Module):
    """Input and output of one shape, so an output can be fed back in."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = torch.nn.Linear(64, 64), torch.nn.Linear(64, 64)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(torch.nn.functional.gelu(self.a(x)))


@pytest.fixture
def square(tmp_path):
    torch.manual_seed(0)
    module = _Square().eval()
    x = torch.randn(8, 64)
    prog = load(export_module(module, (x,), tmp_path / "square.nbx"), device="cuda")
    prog(x)  # recorded, then captured
    assert prog.plan_for(x).cuda_graph is not None
    return module, prog


def _inputs(n: int) -> list[tuple[torch.Tensor, object]]:
    """Host tensors and their device copies, so a run allocates nothing for its input."""
    xs = [torch.randn(8, 64) for _ in range(n)]
    return [(x, tensor(x.numpy(), device="cuda")) for x in xs]


def _check(module: torch.nn.Module, x: torch.Tensor, got: object) -> None:
    with torch.no_grad():
        want = module(x).numpy()
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-4)


def test_outputs_kept_across_runs_keep_their_values(square):
    module, prog = square
    runs = _inputs(4)
    outs = [prog(xd) for _, xd in runs]
    for (x, _), got in zip(runs, outs, strict=True):
        _check(module, x, got)


def test_an_output_dropped_before_the_next_run_costs_no_copy(square):
    _, prog = square
    ((_, xd),) = _inputs(1)
    first = prog(xd)
    address = first._storage.ptr
    del first
    nbx_cuda.reset_peak()
    before = nbx_cuda.memory_in_use()[0]
    second = prog(xd)
    assert second._storage.ptr == address  # the graph's own bytes
    assert nbx_cuda.memory_in_use()[1] == before  # nothing allocated


def test_a_kept_output_moves_to_memory_of_its_own_at_the_next_run(square):
    module, prog = square
    (x1, d1), (x2, d2) = _inputs(2)
    first = prog(d1)
    address = first._storage.ptr
    second = prog(d2)
    assert first._storage.ptr != address and second._storage.ptr == address
    _check(module, x1, first)
    _check(module, x2, second)


def test_an_address_handed_out_stays_valid(square):
    module, prog = square
    (x1, d1), (x2, d2), (x3, d3) = _inputs(3)
    out = prog(d1)
    address = out.data_ptr()  # moves the output out of the graph's bytes first
    held = torch.from_dlpack(prog(d2))
    prog(d3)
    assert out.data_ptr() == address
    _check(module, x1, out)
    with torch.no_grad():
        np.testing.assert_allclose(held.cpu().numpy(), module(x2).numpy(), rtol=1e-4, atol=1e-4)


def test_an_output_fed_back_as_the_next_input(square):
    module, prog = square
    ((x, d),) = _inputs(1)
    y = prog(d)
    z = prog(y)  # y lives in the graph's bytes the run overwrites
    w = prog(z)
    with torch.no_grad():
        want = module(module(module(x)))
    np.testing.assert_allclose(w.numpy(), want.numpy(), rtol=1e-3, atol=1e-3)
    _check(module, x, y)
