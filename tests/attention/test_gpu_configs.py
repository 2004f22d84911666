"""On the aot backend: the GPU tile configurations compile for sm_90 and fit its shared memory."""

from __future__ import annotations

import pytest

from nbx_core.runtime.launch import BACKEND
from nbx_core.testing import from_torch, make

HOPPER_SMEM = 227 * 1024


@pytest.mark.skipif(BACKEND != "aot", reason="compiles the GPU tile configurations (aot backend only)")
@pytest.mark.parametrize(
    "dtype,L,S,E",
    [
        ("bfloat16", 300, 300, 128),
        ("bfloat16", 300, 300, 256),
        ("bfloat16", 1, 4096, 128),
        ("float32", 300, 300, 256),
        ("float64", 300, 300, 256),
    ],
)
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


@pytest.mark.skipif(BACKEND != "aot", reason="reads the PTX compiled for sm_90 (aot backend only)")
def test_head_dim_128_compiles_warp_specialized(monkeypatch):
    # Triton keeps a loop it cannot specialize as it is, silently: the PTX must show the producer
    # warp group beside the two consumers (384 threads) and the registers moved between them.
    import nbx_attention.flash_attention as fa
    import nbx_attention.warp_specialized as ws

    ptx = []

    def compile_only(kernel, grid, *args, **kwargs):
        ptx.append(kernel.warmup(*args, grid=grid, **kwargs).asm["ptx"])

    monkeypatch.setattr(ws, "launch", compile_only)
    # Eight query tiles would otherwise split the keys.
    monkeypatch.setattr(fa.SPLIT, "lookup", lambda *a, **kw: {"PROGRAMS_PER_SM": 0})
    q, k = from_torch(make((1, 2, 512, 128), "bfloat16")), from_torch(make((1, 2, 1024, 128), "bfloat16"))
    out = from_torch(make((1, 2, 512, 128), "bfloat16"))
    fa.flash_forward(q, k, k, None, out, None, scale=0.1, causal=False, masked_lse=0.0)
    assert len(ptx) == 1 and ".reqntid 384" in ptx[0] and "setmaxnreg" in ptx[0]
