"""complex and angle against torch."""

from __future__ import annotations

import pytest
import torch

from nbx_core.errors import NbxTypeError
from nbx_core.testing import check_op, check_raises, layouts, make, run_op

FLOATS = ("float32", "float16", "bfloat16")
SPECIAL = torch.tensor(
    [float("nan"), float("inf"), float("-inf"), 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1e-7, 3.0, -3.0, 30.0, -30.0, 100.0]
)


def test_complex():
    re, im = make((3, 4)), make((4,))
    check_op("aten::complex", re, im)
    for (_, a), (_, b) in zip(layouts(make((3, 4))), layouts(make((3, 4))), strict=True):
        check_op("aten::complex", a, b)
    check_op("aten::complex", SPECIAL, SPECIAL.flip(0))
    check_op("aten::complex", make((0, 2)), make((2,)))
    check_op("aten::complex", make(()), make(()))
    check_raises("aten::complex", re.double(), re, match="float32")
    with pytest.raises(NbxTypeError, match="complex64 only"):  # torch would build complex32
        run_op("aten::complex", re.half(), re.half())
    check_raises("aten::complex", make((2, 3)), make((4,)), match="broadcast")


def test_angle():
    for dtype in FLOATS:
        check_op("aten::angle", make((3, 4), dtype))
    for dtype in ("int32", "bool", "uint8"):
        check_op("aten::angle", make((3, 4), dtype))
    check_op("aten::angle", torch.tensor([-1.0, 0.0, -0.0, float("nan"), float("-inf"), float("inf"), 2.0]))
    z = torch.complex(make((3, 4)), make((3, 4)))
    check_op("aten::angle", z)
    check_op("aten::angle", z.t())
    a, b = torch.meshgrid(SPECIAL, SPECIAL, indexing="ij")
    check_op("aten::angle", torch.complex(a, b))
    check_op("aten::angle", torch.complex(make((0,)), make((0,))))
    for _, t in layouts(make((3, 4))):
        check_op("aten::angle", t)
