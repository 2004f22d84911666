"""The OpInfo harness catches what it should: a wrong kernel, composites checked as themselves,
ties and half-type results compared as documented."""

from __future__ import annotations

import nbx_core.runtime.launch  # noqa: F401  (picks the backend before torch's test utilities import Triton)

# isort: split
import pytest
import torch

from nbx_core.backend import current
from nbx_core.testing import from_torch

if current() != "cpu":
    pytest.skip("the OpInfo harness runs on the cpu backend only", allow_module_level=True)

from torch.testing._internal.common_methods_invocations import op_db  # noqa: E402

from . import harness  # noqa: E402

_OPS = {harness.key(op): op for op in op_db}


def _calls(entry: str, dtype: torch.dtype = torch.float32) -> list[tuple[str, str | None]]:
    op = _OPS[entry]
    return [c for s in harness.samples(op, dtype)[:2] for c in harness.run_sample(op, s)]


def test_a_wrong_kernel_is_caught(monkeypatch):
    real = harness.run_op
    monkeypatch.setattr(
        harness,
        "run_op",
        lambda name, *a, **k: real("aten::neg", a[0]) if name.startswith("aten::add") else real(name, *a, **k),
    )
    calls = _calls("add")
    assert calls and all(name.startswith("aten::add") and failure for name, failure in calls)


@pytest.mark.parametrize(
    "entry,name",
    [
        ("nn.functional.layer_norm", "aten::layer_norm"),
        ("atleast_1d", "aten::atleast_1d"),
        ("cdist", "aten::_cdist_forward"),
        ("item", "aten::item"),
        ("item", "aten::_local_scalar_dense"),
        ("equal", "aten::equal"),
        ("nn.functional.interpolate.nearest", "aten::upsample_nearest1d.vec"),
    ],
)
def test_calls_are_checked_at_the_level_nbx_registers(entry, name):
    calls = _calls(entry)
    assert (name, None) in calls, calls


def test_tied_indices_are_checked_by_gathering():
    x = torch.tensor([[1.0, 3.0, 3.0, 0.0]])
    values, indices = torch.topk(x, 1)
    target = torch.ops.aten.topk.default
    other = (from_torch(values), from_torch(torch.tensor([[2]])))  # the other 3.0: as good
    harness._compare("topk", target, [x, 1], {}, other, (values, indices), "aten::topk")
    wrong = (from_torch(values), from_torch(torch.tensor([[0]])))
    with pytest.raises(AssertionError, match="input at the indices"):
        harness._compare("topk", target, [x, 1], {}, wrong, (values, indices), "aten::topk")


def test_half_results_may_match_torch_in_float32_instead():
    # exp of a bfloat16 input: the float32 result rounded once passes, a result off by far does not
    x = torch.tensor([5.3, -2.1, 0.7], dtype=torch.bfloat16)
    target = torch.ops.aten.exp.default
    once = from_torch(torch.exp(x.float()).bfloat16())
    harness._compare("exp", target, [x], {}, once, torch.exp(x), "aten::exp")
    with pytest.raises(AssertionError, match="float32"):
        harness._compare("exp", target, [x], {}, from_torch(torch.exp(x) * 1.1), torch.exp(x), "aten::exp")
