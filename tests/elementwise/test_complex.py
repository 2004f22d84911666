"""complex, polar, complex multiplication and angle against torch."""

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


def test_polar():
    # Llama 4's rotary table: torch.polar(ones, positions x frequencies), broadcast.
    r, theta = make((3, 4)).abs(), make((4,)) * 10
    check_op("aten::polar", r, theta)
    check_op("aten::polar", torch.ones(5, 1), torch.arange(8.0) * 0.37)
    for (_, a), (_, b) in zip(layouts(make((3, 4)).abs()), layouts(make((3, 4))), strict=True):
        check_op("aten::polar", a, b)
    a, b = torch.meshgrid(SPECIAL.abs(), SPECIAL, indexing="ij")
    check_op("aten::polar", a, b)
    check_op("aten::polar", make((0, 2)), make((2,)))
    with pytest.raises(NbxTypeError, match="complex64 only"):  # torch would build complex128
        run_op("aten::polar", r.double(), theta.double())
    check_raises("aten::polar", make((2, 3)), make((4,)), match="broadcast")


def _exact_product(a, b):
    # The product rounded once from complex128: torch's float32 kernel rounds a*c - b*d with a fused
    # multiply-add, so where the two products cancel its real part keeps the rounding residual
    # (1e-7j * 1e-7j: 4e-22, not 0), which a part-by-part comparison would count against NBX.
    wide = (a.to(torch.complex128) if a.is_complex() else a.double()) * (
        b.to(torch.complex128) if torch.is_tensor(b) and b.is_complex() else (b.double() if torch.is_tensor(b) else b)
    )
    return wide.to(torch.complex64)


def test_complex_multiplication():
    # Llama 4's rotary: queries viewed as complex pairs times a complex table, broadcast over heads.
    q = torch.view_as_complex(make((2, 5, 3, 4, 2)))
    freqs = torch.polar(torch.ones(5, 1, 4), make((5, 1, 4)))
    check_op("aten::mul", q, freqs)
    check_op("aten::mul", freqs, q)
    check_op("aten::mul", q.transpose(1, 2), freqs.transpose(0, 1))
    a, b = torch.meshgrid(SPECIAL, SPECIAL, indexing="ij")
    z = torch.complex(a, b)
    check_op("aten::mul", z, z.t(), torch_fn=_exact_product)
    check_op("aten::mul", z, make((15, 15)), torch_fn=_exact_product)  # a real tensor scales both parts
    check_op("aten::mul", make((15,)), z, torch_fn=_exact_product)
    check_op("aten::mul", z, 2.5, torch_fn=_exact_product)
    check_raises("aten::mul", q, freqs[:2], match="broadcast")


def test_complex_multiplication_into_out():
    from nbx_core.testing import assert_close, from_torch

    z, w = torch.view_as_complex(make((6, 2))), torch.view_as_complex(make((6, 2), seed=1))
    want = _exact_product(z, w)
    out = from_torch(torch.zeros(6, dtype=torch.complex64))
    run_op("aten::mul.out", z, w, out=out)
    assert_close(out, want, what="mul.out")
    # out= one of the inputs: the imaginary part still reads the input as it was.
    self_ = from_torch(z.clone())
    run_op("aten::mul.out", self_, w, out=self_)
    assert_close(self_, want, what="mul.out into self")
    check_raises("aten::mul.out", z, w, out=torch.zeros(6), match="dtype")


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


def test_abs_of_complex_is_its_magnitude():
    # |stft(...)| is the spectrogram: torch's abs of complex64 is hypot(real, imag) in float32.
    z = torch.complex(make((3, 4)), make((3, 4), seed=1))
    check_op("aten::abs", z)
    check_op("aten::abs", z.t())
    a, b = torch.meshgrid(SPECIAL, SPECIAL, indexing="ij")  # inf beside NaN is inf; NaN otherwise NaN
    check_op("aten::abs", torch.complex(a, b))
    big = torch.tensor([3e38, 1e-40, 0.0, -2.5e38])  # no overflow or underflow in the squares
    check_op("aten::abs", torch.complex(big, big.flip(0)))
    check_op("aten::abs", torch.complex(make((0,)), make((0,))))
