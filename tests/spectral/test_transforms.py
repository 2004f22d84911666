"""Conformance of _fft_r2c/_fft_c2r/_fft_c2c and fft_rfft/irfft/fft/ifft against torch (CPU)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from nbx_core.errors import NbxTypeError, NbxValueError, ShapeError
from nbx_core.testing import check_raises, layouts, make, numeric, run_op

NORMS = [None, "backward", "ortho", "forward"]


@pytest.mark.parametrize("normalization", [0, 1, 2])
@pytest.mark.parametrize("onesided", [True, False])
def test_fft_r2c(normalization, onesided, fft_check):
    fft_check("aten::_fft_r2c", make((3, 10)), [1], normalization, onesided, n=10)
    fft_check("aten::_fft_r2c", make((4, 5, 6)), [0, 2], normalization, onesided, n=24)


def test_fft_r2c_layouts_and_dims(fft_check):
    for _, x in layouts(make((6, 8))):
        fft_check("aten::_fft_r2c", x, [1], 0, True, n=8)
        fft_check("aten::_fft_r2c", x, [0], 2, True, n=6)
    fft_check("aten::_fft_r2c", make((2, 3, 4)), [0, 1, 2], 1, True, n=24)


@pytest.mark.parametrize("normalization", [0, 1, 2])
@pytest.mark.parametrize("last", [8, 9])
def test_fft_c2r(normalization, last, fft_check):
    x = make((3, last // 2 + 1), "complex64")
    fft_check("aten::_fft_c2r", x, [1], normalization, last, n=last)
    y = make((4, 3, last // 2 + 1), "complex64")
    fft_check("aten::_fft_c2r", y, [0, 2], normalization, last, n=4 * last)


def test_fft_c2r_layouts(fft_check):
    for _, x in layouts(make((5, 5), "complex64")):
        fft_check("aten::_fft_c2r", x, [1], 2, 8, n=8)
        fft_check("aten::_fft_c2r", x, [0], 0, 9, n=9)


@pytest.mark.parametrize("normalization", [0, 1, 2])
@pytest.mark.parametrize("forward", [True, False])
def test_fft_c2c(normalization, forward, fft_check):
    fft_check("aten::_fft_c2c", make((3, 12), "complex64"), [1], normalization, forward, n=12)
    fft_check("aten::_fft_c2c", make((3, 4, 5), "complex64"), [2, 0], normalization, forward, n=15)
    fft_check("aten::_fft_c2c", make((2, 3, 4), "complex64"), [0, 1, 2], normalization, forward, n=24)


def test_fft_c2c_layouts_and_empty(fft_check):
    for _, x in layouts(make((4, 6), "complex64")):
        fft_check("aten::_fft_c2c", x, [1], 0, True, n=6)
        fft_check("aten::_fft_c2c", x, [0], 1, False, n=4)
    fft_check("aten::_fft_c2c", make((1, 1), "complex64"), [0, 1], 2, True, n=1)


@pytest.mark.parametrize("norm", NORMS)
def test_fft_rfft(norm, fft_check):
    for n in (None, 6, 13, 20):
        fft_check("aten::fft_rfft", make((3, 10)), n, -1, norm, n=n or 10)
    fft_check("aten::fft_rfft", make((7, 2)), 9, 0, norm, n=9)


@pytest.mark.parametrize("norm", NORMS)
def test_fft_irfft(norm, fft_check):
    x = make((3, 6), "complex64")
    for n in (None, 5, 10, 11, 16):
        fft_check("aten::fft_irfft", x, n, -1, norm, n=n or 10)
    fft_check("aten::fft_irfft", make((6, 2), "complex64"), None, 0, norm, n=10)
    fft_check("aten::fft_irfft", make((3, 6)), 7, 1, norm, n=7)


@pytest.mark.parametrize("norm", NORMS)
def test_fft_fft(norm, fft_check):
    for n in (None, 4, 11, 17):
        fft_check("aten::fft_fft", make((3, 11), "complex64"), n, -1, norm, n=n or 11)
        fft_check("aten::fft_fft", make((3, 11)), n, 1, norm, n=n or 11)
    fft_check("aten::fft_fft", make((5, 2, 3), "complex64"), None, 0, norm, n=5)


@pytest.mark.parametrize("norm", NORMS)
def test_fft_ifft(norm, fft_check):
    for n in (None, 3, 9, 14):
        fft_check("aten::fft_ifft", make((2, 9), "complex64"), n, -1, norm, n=n or 9)
        fft_check("aten::fft_ifft", make((2, 9)), n, -1, norm, n=n or 9)
    fft_check("aten::fft_ifft", make((4, 3), "complex64"), None, -2, norm, n=4)


def test_wrappers_layouts_and_integer_input(fft_check):
    for _, x in layouts(make((6, 7))):
        fft_check("aten::fft_rfft", x, None, -1, None, n=7)
        fft_check("aten::fft_fft", x, 10, 0, "ortho", n=10)
    for _, x in layouts(make((6, 7), "complex64")):
        fft_check("aten::fft_ifft", x, None, 1, None, n=7)
        fft_check("aten::fft_irfft", x, 12, 1, "forward", n=12)
    ints = make((3, 8), "int64")
    fft_check("aten::fft_fft", ints, None, -1, None, n=8)
    fft_check("aten::fft_rfft", ints, None, -1, None, n=8)
    fft_check("aten::fft_fft", make((8,)), None, 0, None, n=8)


@pytest.mark.parametrize("n", [48, 37, 64])
def test_four_step_and_bluestein_plans(small_plans, n, fft_check):
    # DIRECT_MAX = 16: 48 = 6 x 8 and 64 = 8 x 8 run four-step, 37 (prime) runs Bluestein.
    fft_check("aten::fft_fft", make((3, n), "complex64"), None, -1, None, n=n)
    fft_check("aten::fft_ifft", make((3, n), "complex64"), None, -1, "ortho", n=n)
    fft_check("aten::fft_rfft", make((2, n)), None, -1, "forward", n=n)
    fft_check("aten::_fft_r2c", make((2, n)), [1], 0, False, n=n)
    fft_check("aten::fft_irfft", make((2, n // 2 + 1), "complex64"), n, -1, None, n=n)
    for _, x in layouts(make((4, n), "complex64")):
        fft_check("aten::_fft_c2c", x, [1], 2, True, n=n)


@pytest.mark.parametrize("n", [256, 2048, 16384])
def test_row_and_column_plans(n, fft_check):
    # Powers of two: 256 and 2048 run in one program per row, 16384 takes a column pass first.
    fft_check("aten::fft_fft", make((2, n), "complex64"), None, -1, None, n=n)
    fft_check("aten::fft_ifft", make((2, n), "complex64"), None, -1, "ortho", n=n)
    fft_check("aten::fft_rfft", make((2, n)), None, -1, "forward", n=n)
    fft_check("aten::fft_irfft", make((2, n // 2 + 1), "complex64"), n, -1, None, n=n)
    # Strided rows and samples: the transformed dim first, or every other sample.
    fft_check("aten::fft_fft", make((n, 2), "complex64"), None, 0, None, n=n)
    fft_check("aten::fft_rfft", make((2, 2 * n))[:, ::2], None, -1, None, n=n)


def test_row_and_column_plans_with_int64_offsets(monkeypatch, fft_check):
    # The 64-bit offset variants of the row and column kernels (chosen for > 2^31-element reach),
    # forced at small sizes: strided and contiguous rows.
    from nbx_spectral import row_fft

    asked = []
    monkeypatch.setattr(row_fft, "needs_int64", lambda *args: asked.append(args) or True)
    for n in (256, 16384):
        fft_check("aten::fft_fft", make((2, n), "complex64"), None, -1, None, n=n)
        fft_check("aten::fft_fft", make((n, 2), "complex64"), None, 0, None, n=n)
        fft_check("aten::fft_rfft", make((2, 2 * n))[:, ::2], None, -1, None, n=n)
    assert len(asked) >= 9, "the row and column kernels did not choose their offsets through needs_int64"


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
@pytest.mark.parametrize("n", [256, 16384])
def test_row_and_column_plans_keep_nan_and_inf(n):
    # A NaN whose tf32 rounding carries into the sign bit (0x7FFFFFFF) still reaches every bin of its
    # row, an infinity leaves no bin finite (as in torch, whose bins there are all NaN), and the
    # other row is untouched.
    x = np.random.default_rng(n).standard_normal((3, n)).astype(np.float32)
    x.view(np.uint32)[0, 5] = 0x7FFFFFFF
    x[1, 7] = np.inf
    got = run_op("aten::fft_rfft", torch.from_numpy(x))
    if not numeric():
        return
    got = got.numpy()
    ref = torch.fft.rfft(torch.from_numpy(x)).numpy()
    assert (np.isnan(got[0].real) | np.isnan(got[0].imag)).all()
    assert not np.isfinite(ref[:2]).any() and not np.isfinite(got[1]).any()
    exact = np.fft.rfft(x[2].astype(np.float64))
    assert np.abs(got[2] - exact).max() < 1e-5 * np.sqrt(np.mean(np.abs(exact) ** 2)) * np.log2(n)


def test_bad_input_errors():
    x = make((3, 8))
    check_raises("aten::fft_rfft", x, 0, match="n must be >= 1")
    check_raises("aten::fft_fft", x, None, 2, match="dim")
    check_raises("aten::fft_rfft", make((3, 8), "complex64"), match="real input")
    check_raises("aten::fft_ifft", x, None, -1, "bogus", match="normalization mode")
    check_raises("aten::fft_irfft", make((3, 1), "complex64"), match="Invalid number of data points")
    check_raises("aten::_fft_c2r", make((3, 5), "complex64"), [1], 0, 4, match="last_dim_size")
    check_raises("aten::_fft_r2c", make((3, 4), "int64"), [1], 0, True, match="float32")
    for dt in ("float16", "bfloat16"):
        check_raises("aten::fft_fft", make((3, 6), dt), match="not supported")
    with pytest.raises(ShapeError, match="0-dim"):
        run_op("aten::fft_fft", torch.tensor(1.0))


def test_float64_is_refused():
    # torch gives complex128 here; NBX has complex64 only and says so.
    for name, args in [("aten::fft_fft", ()), ("aten::fft_rfft", ()), ("aten::_fft_r2c", ([1], 0, True))]:
        with pytest.raises(NbxTypeError, match="complex64 only"):
            run_op(name, make((2, 4), "float64"), *args)
    with pytest.raises(NbxTypeError, match="complex64"):
        run_op("aten::_fft_c2c", make((2, 4)), [1], 0, True)
    with pytest.raises(NbxValueError, match="length 0"):
        run_op("aten::_fft_c2c", make((2, 0), "complex64"), [1], 0, True)


def test_empty_batch():
    # torch's CPU (MKL) FFT refuses 0-size batches; NBX returns the empty result of the right shape.
    assert run_op("aten::_fft_c2c", make((0, 5), "complex64"), [1], 0, True).shape == (0, 5)
    assert run_op("aten::fft_rfft", make((0, 6))).shape == (0, 4)
    assert run_op("aten::fft_irfft", make((2, 0, 3), "complex64"), None, -1).shape == (2, 0, 4)
