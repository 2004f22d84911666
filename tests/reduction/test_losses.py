"""cross_entropy_loss, nll_loss and mse_loss against torch."""

from __future__ import annotations

import pytest
import torch

from nbx_core.errors import DeviceError, NbxError
from nbx_core.testing import check_op, check_raises, from_torch, layouts, make, numeric, on_other_device, run_op

FLOATS = ["float32", "float16", "bfloat16", "float64"]
NAN = float("nan")


def _targets(n: int, c: int, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, c, (n,), generator=g)


def _check_class_indices(op: str, dtype: str, reduction: int, ignored: int) -> tuple[torch.Tensor, ...]:
    """Check ``op`` on (6, 5) scores and class-index targets, row ``ignored`` at the default
    ignore_index -100, without and with class weights; return the scores, targets and weights."""
    x = make((6, 5), dtype)
    t = _targets(6, 5)
    t[ignored] = -100
    w = make((5,), dtype, low=0.1, high=2.0)
    check_op(op, x, t, None, reduction)
    check_op(op, x, t, w, reduction)
    return x, t, w


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("reduction", [0, 1, 2])
def test_cross_entropy_class_indices(dtype: str, reduction: int) -> None:
    x, t, w = _check_class_indices("aten::cross_entropy_loss", dtype, reduction, ignored=2)
    check_op("aten::cross_entropy_loss", x, t.clamp(0, 4), w, reduction, 3, 0.25)
    check_op("aten::cross_entropy_loss", x, t, None, reduction, -100, 0.1)
    check_op("aten::cross_entropy_loss", x, t.to(torch.uint8).clamp(0, 4), None, reduction)


@pytest.mark.parametrize("reduction", [0, 1, 2])
def test_cross_entropy_probabilities(reduction: int) -> None:
    x = make((4, 6))
    p = make((4, 6), seed=1).softmax(1)
    check_op("aten::cross_entropy_loss", x, p, None, reduction)
    check_op("aten::cross_entropy_loss", x, p, make((6,), low=0.1, high=2.0), reduction, -100, 0.2)
    check_op("aten::cross_entropy_loss", make((2, 4, 3)), make((2, 4, 3)).softmax(1), None, reduction, -100, 0.1)
    check_op("aten::cross_entropy_loss", x[0], p[0], None, reduction)
    check_op("aten::cross_entropy_loss", x.bfloat16(), p.bfloat16(), None, reduction)


def test_cross_entropy_shapes_and_layouts() -> None:
    x = make((2, 5, 3, 2))
    t = torch.randint(0, 5, (2, 3, 2), generator=torch.Generator().manual_seed(0))
    for red in (0, 1, 2):
        check_op("aten::cross_entropy_loss", x, t, None, red, 1, 0.1)
    check_op("aten::cross_entropy_loss", make((5,)), torch.tensor(3))
    for _, lx in layouts(make((4, 5))):
        check_op("aten::cross_entropy_loss", lx, _targets(4, 5), None, 0)
    for _, lt in layouts(_targets(4, 5)):
        check_op("aten::cross_entropy_loss", make((4, 5)), lt)
    check_op(
        "aten::cross_entropy_loss", make((3, 2500)) * 20, _targets(3, 2500), None, 1, -100, 0.1, rtol=1e-5, atol=1e-4
    )
    check_op("aten::cross_entropy_loss", make((0, 3)), torch.empty(0, dtype=torch.long))
    check_op("aten::cross_entropy_loss", make((2, 3)), torch.tensor([-100, -100]))
    big = torch.tensor([[1000.0, 0.0, -1000.0], [-float("inf"), 0.0, 1.0], [NAN, 1.0, 2.0]])
    check_op("aten::cross_entropy_loss", big, torch.tensor([0, 2, 1]), None, 0)


def test_cross_entropy_errors() -> None:
    x = make((3, 4))
    if numeric():
        check_raises("aten::cross_entropy_loss", x, torch.tensor([0, 1, 4]), match="target index 4 is out of bounds")
    check_raises("aten::cross_entropy_loss", x, torch.tensor([0, 1, 2], dtype=torch.int32), match="int64")
    check_raises("aten::cross_entropy_loss", x, torch.tensor([0, 1]), match="shape")
    check_raises("aten::cross_entropy_loss", x, torch.tensor([0, 1, 2]), make((3,)), match="weight")
    check_raises("aten::cross_entropy_loss", x, torch.tensor([0, 1, 2]), None, 1, -100, 1.5, match="smoothing")
    check_raises("aten::cross_entropy_loss", x, x.softmax(1), None, 1, 0, match="ignore_index")
    check_raises("aten::cross_entropy_loss", make(()), torch.tensor(0), match="1 dim")
    check_raises("aten::cross_entropy_loss", make((3, 4), "int32"), torch.tensor([0, 1, 2]), match="floating")


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("reduction", [0, 1, 2])
def test_nll_loss(dtype: str, reduction: int) -> None:
    x, t, w = _check_class_indices("aten::nll_loss", dtype, reduction, ignored=1)
    check_op("aten::nll_loss", x, t.clamp(0, 4), w, reduction, 2)
    check_op("aten::nll_loss", x[0], torch.tensor(3), w, reduction)
    check_op("aten::nll_loss", x, t.clamp(0, 4).to(torch.uint8), None, reduction)
    for _, lx in layouts(x):
        check_op("aten::nll_loss", lx, t, w, reduction)


def test_nll_loss_edges_and_errors() -> None:
    check_op("aten::nll_loss", make((2, 3)), torch.tensor([-100, -100]))
    check_op("aten::nll_loss", make((0, 3)), torch.empty(0, dtype=torch.long), None, 2)
    check_raises("aten::nll_loss", make((2, 3, 4)), torch.zeros(2, 4, dtype=torch.long), match="1-D or 2-D")
    check_raises("aten::nll_loss", make((2, 3)), torch.tensor([0, 1], dtype=torch.int32), match="int64")
    if numeric():
        check_raises("aten::nll_loss", make((2, 3)), torch.tensor([0, 3]), match="target index 3 is out of bounds")
    check_raises("aten::nll_loss", make((2, 3)), torch.tensor([0, 1]), make((2,)), match="weight")


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("reduction", [0, 1, 2])
def test_mse_loss(dtype: str, reduction: int) -> None:
    x, y = make((4, 5), dtype), make((4, 5), dtype, seed=1)
    check_op("aten::mse_loss", x, y, reduction)
    check_op("aten::mse_loss", x, y[0], reduction)
    for _, lx in layouts(x):
        check_op("aten::mse_loss", lx, y, reduction)


def test_mse_loss_edges_and_errors() -> None:
    check_op("aten::mse_loss", make((3,)), make((3,), "float64"))
    check_op("aten::mse_loss", make((0, 3)), make((0, 3)), 2)
    check_op("aten::mse_loss", make(()), make(()))
    check_op("aten::mse_loss", torch.tensor([NAN, 1.0]), torch.tensor([0.0, float("inf")]), 0)
    check_raises("aten::mse_loss", make((3,), "int32"), make((3,), "int32"), match="floating")
    check_raises("aten::mse_loss", make((3,)), make((2,)), match="broadcast")


def test_mixed_devices() -> None:
    x = from_torch(make((2, 3)))
    elsewhere = on_other_device(from_torch(torch.tensor([0, 1])))
    with pytest.raises(DeviceError, match="device"):
        run_op("aten::cross_entropy_loss", x, elsewhere)


def test_bad_reduction() -> None:
    with pytest.raises(NbxError, match="reduction"):
        run_op("aten::mse_loss", make((3,)), make((3,)), 5)
