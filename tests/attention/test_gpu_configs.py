"""On the aot backend: the GPU tile configurations compile for sm_90 and fit its shared memory."""

from __future__ import annotations

import pytest

from nbx_core.launch import BACKEND
from nbx_core.testing import from_torch, make

HOPPER_SMEM = 227 * 1024


@pytest.mark.skipif(BACKEND != "aot", reason="compiles the GPU tile configurations (aot backend only)")
@pytest.mark.parametrize("dtype,L,S,E", [("bfloat16", 300, 300, 128), ("bfloat16", 300, 300, 256),
                                         ("bfloat16", 1, 4096, 128), ("float32", 300, 300, 256),
                                         ("float64", 300, 300, 256)])
def test_flash_tiles_fit_shared_memory(dtype, L, S, E, monkeypatch):
    import nbx_attention.flash_attention as fa

    used = []

    def compile_only(kernel, grid, *args, **kwargs):
        used.append(kernel.warmup(*args, grid=grid, **kwargs).metadata.shared)

    monkeypatch.setattr(fa, "launch", compile_only)
    q, k = from_torch(make((1, 2, L, E), dtype)), from_torch(make((1, 2, S, E), dtype))
    out = from_torch(make((1, 2, L, E), dtype))
    fa.flash_forward(q, k, k, None, out, None, scale=0.1, causal=True, masked_lse=0.0)
    assert used and max(used) <= HOPPER_SMEM, used
