"""nbx_core.runtime.checks: device-side checks read at the next host wait, in launch order, then reset."""

import pytest
import torch

from nbx_core.backend import current
from nbx_core.errors import IndexOutOfRangeError, NbxError
from nbx_core.runtime import checks
from nbx_core.testing import from_torch, numeric

index_select = pytest.importorskip("nbx_index.gather").index_select
# On the aot backend kernels compile but do not run: no flag is ever raised.
pytestmark = pytest.mark.skipif(not numeric(), reason="device checks need kernels that run")


@pytest.fixture
def deferred(monkeypatch):
    """Checks deferred as on the GPU, with a fresh table."""
    monkeypatch.setattr(checks, "_deferred", lambda: True)
    monkeypatch.setattr(checks, "_tables", {})
    yield
    checks._tables.clear()


def _idx(values):
    return from_torch(torch.tensor(values))


def test_deferred_error_surfaces_at_verify_once(deferred):
    x = from_torch(torch.arange(12.0).reshape(4, 3))
    out = index_select(x, 0, _idx([1, 7]))  # returns: no host wait inside the op
    assert out.shape == (2, 3)
    with pytest.raises(IndexOutOfRangeError, match=r"aten::index_select: index holds 7.*size 4"):
        checks.verify()
    checks.verify()  # read and reset: nothing left to raise
    good = index_select(x, 0, _idx([3, 0]))
    checks.verify()
    assert good.tolist() == [[9.0, 10.0, 11.0], [0.0, 1.0, 2.0]]


def test_earliest_failing_launch_is_reported(deferred):
    x = from_torch(torch.arange(12.0).reshape(4, 3))
    index_select(x, 0, _idx([0]))
    index_select(x, 1, _idx([5]))
    index_select(x, 0, _idx([9]))
    with pytest.raises(IndexOutOfRangeError, match="holds 5"):
        checks.verify()


def test_full_table_is_read_and_reused(deferred, monkeypatch):
    monkeypatch.setattr(checks, "SLOTS", 3)
    x = from_torch(torch.arange(12.0).reshape(4, 3))
    index_select(x, 0, _idx([4]))
    index_select(x, 0, _idx([1]))
    index_select(x, 0, _idx([2]))
    with pytest.raises(IndexOutOfRangeError, match="holds 4"):
        index_select(x, 0, _idx([3]))  # the fourth launch needs a slot: the table is read first
    out = index_select(x, 0, _idx([3]))
    checks.verify()
    assert out.tolist() == [[9.0, 10.0, 11.0]]


def test_in_place_writes_check_before_writing(deferred):
    x = from_torch(torch.zeros(4))
    from nbx_index.advanced import index_put_

    with pytest.raises(IndexOutOfRangeError, match="holds 6"):
        index_put_(x, [_idx([1, 6])], from_torch(torch.ones(2)))
    assert x.tolist() == [0.0, 0.0, 0.0, 0.0]


@pytest.mark.skipif(current() != "cuda", reason="host waits hook the cuda backend's copies")
def test_reading_a_result_raises_on_the_gpu():
    x = from_torch(torch.arange(12.0).reshape(4, 3))
    out = index_select(x, 0, _idx([1, 4]))
    with pytest.raises(IndexOutOfRangeError, match="holds 4"):
        out.tolist()
    assert index_select(x, 0, _idx([2])).tolist() == [[6.0, 7.0, 8.0]]


def test_slots_of_recorded_runs_return_when_they_are_dropped(monkeypatch):
    from nbx_core.runtime.trace import Recorder

    monkeypatch.setattr(checks, "SLOTS", 4)
    monkeypatch.setattr(checks, "_tables", {})
    x = from_torch(torch.arange(12.0).reshape(4, 3))

    def record():
        with Recorder([x.storage]) as rec:
            index_select(x, 0, _idx([1]))
            index_select(x, 0, _idx([2]))
        assert len(rec.trace.reserved.slots) == 2
        return rec.trace

    kept = record()
    # Ten more recordings of two checks each in a table of four slots: each gives its slots back.
    for _ in range(10):
        record()
    full = record()
    with pytest.raises(NbxError, match="plans and captured graphs alive hold all 4 flag slots"):
        record()
    del kept
    assert record() is not full


def test_a_bad_index_in_a_replayed_plan_still_raises_after_slots_were_reused(tmp_path, monkeypatch):
    from nbx_core.graph import load
    from nbx_core.graph.export import export_module

    monkeypatch.setattr(checks, "SLOTS", 8)
    monkeypatch.setattr(checks, "_tables", {})

    class Gather(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.table = torch.nn.Parameter(torch.randn(6, 2))

        def forward(self, idx):
            return self.table[idx] + self.table[idx + 1]

    idx = torch.tensor([0, 2, 4])
    path = export_module(Gather().eval(), (idx,), tmp_path / "gather.nbx")
    for _ in range(6):  # each program records a plan with two index checks, then goes
        prog = load(path)
        prog(idx)
        prog(idx)
        del prog
    prog = load(path)
    assert prog(idx).shape == (3, 2)
    with pytest.raises(IndexOutOfRangeError):
        prog(torch.tensor([0, 5, 1]))
        checks.verify()
