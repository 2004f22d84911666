"""Conformance of aten::_weight_norm and aten::_weight_norm_interface against torch (CPU).

torch's CPU ``_weight_norm_interface`` takes only dim 0 and the last dim; for other dims (and
dim=-1, the whole-tensor norm) the reference is torch's own composite definition.
"""

from __future__ import annotations

import pytest
import torch

from nbx_core.errors import DeviceError
from nbx_core.testing import check_op, check_raises, from_torch, layouts, make, run_op

V = (3, 4, 5)
# (dim, g shape): every dim, negative dims, dim=-1 (whole tensor), g flat or keep-dim shaped.
CASES = [
    (0, (3, 1, 1)),
    (0, (3,)),
    (1, (1, 4, 1)),
    (2, (1, 1, 5)),
    (2, (5,)),
    (-2, (1, 4, 1)),
    (-3, (3, 1, 1)),
    (-1, (1, 1, 1)),
    (-1, ()),
]


def _interface_reference(v, g, dim):
    norm = torch.norm_except_dim(v, 2, dim)
    if v.dtype in (torch.float16, torch.bfloat16):
        norm = torch.norm_except_dim(v.float(), 2, dim)
    return torch._weight_norm(v, g, dim), norm.reshape(g.shape)


def _tol(dtype: str) -> dict:
    # float16 takes torch's composite path, which rounds g / norm to float16 before the product.
    return {"rtol": 4e-3, "atol": 4e-3} if dtype == "float16" else {}


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
@pytest.mark.parametrize(("dim", "gshape"), CASES)
def test_weight_norm(dtype, dim, gshape):
    v, g = make(V, dtype), make(gshape, dtype, seed=1)
    check_op("aten::_weight_norm", v, g, dim, **_tol(dtype))
    check_op("aten::_weight_norm_interface", v, g, dim, torch_fn=_interface_reference, **_tol(dtype))


@pytest.mark.parametrize("dim", [0, 2])
def test_weight_norm_interface_against_torch_kernel(dim):
    # The dims torch's own kernel takes: compared with it directly.
    v = make(V, "bfloat16")
    g = make((3, 1, 1) if dim == 0 else (1, 1, 5), "bfloat16", seed=1)
    check_op("aten::_weight_norm_interface", v, g, dim)
    check_op("aten::_weight_norm_interface", v.float(), g.float(), dim)


def test_weight_norm_broadcast_g():
    # dim=-1 with a g that is not one value: g broadcasts (torch's composite path).
    check_op("aten::_weight_norm", make(V), make((1, 1, 5), seed=1), -1)


def test_weight_norm_defaults_and_ranks():
    check_op("aten::_weight_norm", make((6, 2)), make((6, 1), seed=1))
    check_op("aten::_weight_norm_interface", make((7,)), make((7,), seed=1), 0)
    check_op("aten::_weight_norm", make((7,)), make((), seed=1), -1)


def test_weight_norm_layouts():
    for _, v in layouts(make((4, 6))):
        check_op("aten::_weight_norm", v, make((4, 1), seed=1), 0)
        # torch's CPU kernel assumes a contiguous v (its caller _weight_norm makes it so).
        check_op(
            "aten::_weight_norm_interface",
            v,
            make((1, 6), seed=1),
            1,
            torch_fn=lambda v, g, dim: torch.ops.aten._weight_norm_interface(v.contiguous(), g, dim),
        )


def test_weight_norm_zero_size():
    check_op("aten::_weight_norm_interface", make((3, 0)), make((3, 1), seed=1), 0)
    check_op("aten::_weight_norm", make((0, 4)), make((1, 4), seed=1), 1)


def test_bad_inputs(on_cuda):
    v = make(V)
    check_raises("aten::_weight_norm", v, make((1, 1, 5)), 3, match="dim")
    check_raises("aten::_weight_norm", v, make((1, 1, 5)), -4, match="dim")
    check_raises("aten::_weight_norm", v, make((3, 1, 1), "bfloat16"), 0, match="dtype")
    check_raises("aten::_weight_norm_interface", v.bfloat16(), make((3, 1, 1)), 0, match="dtype")
    check_raises("aten::_weight_norm", v.int(), make((3, 1, 1)).int(), 0, match="float32")
    with pytest.raises(Exception, match="g must hold"):
        run_op("aten::_weight_norm_interface", v, make((4,)), 0)
    with pytest.raises(DeviceError, match="device"):
        run_op("aten::_weight_norm", from_torch(v), on_cuda(from_torch(make((3, 1, 1)))), 0)
