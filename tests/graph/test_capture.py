"""CUDA-graph capture of a program: replays match uncaptured runs (cuda backend only)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nbx_core.backend import current
from nbx_core.errors import DeviceError

EXAMPLE = Path(__file__).parents[2] / "examples" / "encoder_block.nbx"


def _inputs(seed: int):
    import nbx_core

    rng = np.random.default_rng(seed)
    x = nbx_core.tensor(rng.standard_normal((2, 8, 32)).astype(np.float32), device="cuda")
    mask = nbx_core.tensor(np.zeros((2, 8), bool), device="cuda")
    return {"src": x, "src_key_padding_mask": mask}


@pytest.mark.skipif(current() != "cuda", reason="CUDA graphs need the cuda backend (an NVIDIA GPU)")
def test_replay_matches_uncaptured_runs():
    pytest.importorskip("nbx_attention", reason="the example graph needs nbx-attention")
    import nbx_core

    prog = nbx_core.load(EXAMPLE)
    captured = prog.capture(**_inputs(0))
    for seed in (1, 2):
        want = prog(**_inputs(seed)).numpy()
        got = captured(**_inputs(seed)).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.skipif(current() == "cuda", reason="checks the refusal off the cuda backend")
def test_capture_needs_the_cuda_backend():
    pytest.importorskip("nbx_attention", reason="the example graph needs nbx-attention")
    import nbx_core

    prog = nbx_core.load(EXAMPLE)
    with pytest.raises(DeviceError, match="CUDA graphs need the cuda backend"):
        prog.capture()
