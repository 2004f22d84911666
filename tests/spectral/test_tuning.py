"""FFT and stft launches as data (nbx_spectral.row_fft.ROW_FFT, COLUMN_PASS, nbx_spectral.fft.DFT,
CHIRP, HERMITIAN, nbx_spectral.stft.PAD, OVERLAP_ADD): today's choices on each backend, and config=."""

from __future__ import annotations

import pytest
import torch
import triton
from nbx_spectral import fft as F
from nbx_spectral import row_fft as R
from nbx_spectral import stft as S

from nbx_core.errors import NbxError
from nbx_core.runtime import tuning
from nbx_core.runtime.launch import multiprocessors
from nbx_core.testing import from_torch, make, numeric, to_torch

pytestmark = pytest.mark.usefixtures("tuning_cache")


def test_same_launch_as_before():
    # Before the choice moved onto nbx_core.runtime.tuning: row programs of 4 warps (1 on the
    # interpreter), 4 per SM (the interpreter: 4 at most); column passes of 128 columns for DFTs of
    # up to 64 points, 32 above (the interpreter: the whole row, up to 256); DFT tiles (64, 32, 32)
    # on 2 warps and 3 stages (the interpreter: 16 to 256 rows by 64 by 64).
    for n in (256, 4096):
        for complex_in in (True, False):
            assert R.ROW_FFT.resolve(n, complex_in, target="sm_90")[0] == {"num_warps": 4, "PROGRAMS_PER_SM": 4}
            assert R.ROW_FFT.resolve(n, complex_in, target=None)[0] == {
                "num_warps": 1,
                "PROGRAMS_PER_SM": 4,
                "PROGRAMS": 4,
            }
    for n, c, gpu, cpu in (
        (65536, 16, 128, 256),
        (1 << 20, 64, 128, 256),
        (1 << 21, 128, 32, 256),
        (8192, 64, 128, 128),
    ):
        assert R.COLUMN_PASS.resolve(n, c, target="sm_90")[0] == {"BLOCK_J": gpu}
        assert R.COLUMN_PASS.resolve(n, c, target=None)[0] == {"BLOCK_J": cpu}
    for kind, n, rows, bm in (("r2c", 400, 96032, 256), ("c2c", 100, 5, 16), ("c2r", 3000, 100, 128)):
        assert F.DFT.resolve(kind, n, rows, target="sm_90")[0] == {
            "BM": 64,
            "BN": 32,
            "BK": 32,
            "num_warps": 2,
            "num_stages": 3,
        }
        config = {"BM": bm, "BN": 64, "BK": 64, "num_warps": 1, "num_stages": 1}
        assert F.DFT.resolve(kind, n, rows, target=None)[0] == config
        if tuning.arch() is None:
            assert F.DFT.lookup(kind, n, rows) == config


def test_same_stft_blocks_as_before():
    # Before the choice moved onto nbx_core.runtime.tuning: stft's pad and istft's overlap-add ran
    # programs of the row's floats (at least 16), up to 1024 on a GPU and 65536 on the interpreter.
    for n, gpu, cpu in ((5, 16, 16), (600, 1024, 1024), (3000, 1024, 4096), (480400, 1024, 65536)):
        assert S.PAD.resolve(n, target="sm_90")[0] == S.OVERLAP_ADD.resolve(n, 3, target="sm_90")[0] == {"BLOCK": gpu}
        assert S.PAD.resolve(n, target=None)[0] == S.OVERLAP_ADD.resolve(n, 3, target=None)[0] == {"BLOCK": cpu}


def test_row_programs_as_before_over_a_grid():
    # The row kernel's programs as the backend test chose them: min(rows, SMs x 4) on a GPU (the H200's
    # 132 SMs outside the cuda backend), min(rows, 4) on the interpreter.
    device = from_torch(make((1,))).device
    sms = multiprocessors(device.index or 0)
    for rows in (1, 3, 4, 5, 100, 527, 528, 529, 100000):
        for n in (256, 4096):
            gpu, cpu = (R.ROW_FFT.resolve(n, True, target=t)[0] for t in ("sm_90", None))
            assert R._programs(rows, device, gpu) == min(rows, sms * 4)
            assert R._programs(rows, device, cpu) == min(rows, 4)


def test_chirp_and_hermitian_blocks_as_before_over_a_grid():
    # Bluestein's chirp multiply: the row's columns (at least 16) up to 1024 on a GPU, 4096 on the
    # interpreter; the spectrum rebuild: the length, up to the same caps.
    for n in (*range(1, 70), 127, 128, 129, 521, 1000, 1024, 1025, 2048, 4096, 4097, 9000, 1 << 20):
        for target, cap in (("sm_90", 1024), (None, 4096)):
            assert F.CHIRP.resolve(n, target=target)[0] == {"BLOCK": min(triton.next_power_of_2(max(n, 16)), cap)}
            assert F.HERMITIAN.resolve(n, target=target)[0] == {"BLOCK": min(triton.next_power_of_2(n), cap)}


def test_config_argument_replaces_the_lookup(monkeypatch):
    # An rfft of rows of 256 on 2 warps and 3 programs, against torch.
    from nbx_core import dtypes as D
    from nbx_core.tensor import empty_tensor
    from nbx_core.testing import from_torch

    seen, launch = [], R.launch
    monkeypatch.setattr(
        R,
        "launch",
        lambda kernel, grid, *a, **kw: seen.append((grid, kw["num_warps"])) or launch(kernel, grid, *a, **kw),
    )
    x = make((5, 256))
    y = empty_tensor((5, 129), D.complex64, from_torch(x).device)
    R.row_fft(from_torch(x), y, n=256, n_lim=129, sign=-1, scale=1.0, config={"num_warps": 2, "PROGRAMS_PER_SM": 1})
    assert seen == [((5,), 2)]  # min(rows, 132 SMs x 1), on every backend: no cap on the programs
    if numeric():
        torch.testing.assert_close(to_torch(y), torch.fft.rfft(x), rtol=1e-4, atol=1e-3)
    with pytest.raises(NbxError, match="passed as config= to row_fft: PROGRAMS_PER_SM must be an integer of at least"):
        R.row_fft(from_torch(x), y, n=256, n_lim=129, sign=-1, scale=1.0, config={"num_warps": 2, "PROGRAMS_PER_SM": 0})
