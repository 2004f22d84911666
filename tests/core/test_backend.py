"""Backend choice, the launch seam's checks, and the cuda backend (skipped unless it is active)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import nbx_core
from nbx_core.backend import current
from nbx_core.device import Device
from nbx_core.errors import DeviceError
from nbx_core.tensor import NBXTensor
from nbx_core.testing import from_torch, make

cuda_only = pytest.mark.skipif(current() != "cuda", reason="needs the cuda backend (an NVIDIA GPU)")


def _python(code: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=120)


def test_unknown_backend_is_a_clear_error():
    r = _python("import nbx_core.runtime.launch", NBX_BACKEND="tpu")
    assert r.returncode != 0
    assert "NBX_BACKEND='tpu' is not a backend: use one of cpu, cuda, aot" in r.stderr


def test_backend_is_chosen_once_and_sets_the_interpreter():
    r = _python("import os, nbx_core.runtime.launch as l; print(l.BACKEND, os.environ['TRITON_INTERPRET'])",
                NBX_BACKEND="cpu")
    assert r.stdout.split() == ["cpu", "1"]


def test_aot_compiles_without_running():
    r = _python("import nbx_core.api as n, nbx_core.runtime.launch as l; n.ones(3).t().contiguous(); "
                "print(len(l.compiled_variants) > 0)", NBX_BACKEND="aot")
    assert r.stdout.strip() == "True", r.stderr


@pytest.mark.skipif(current() == "cuda", reason="checks the host backends' device guard")
def test_device_tensor_on_host_backend_is_refused():
    class FakeDeviceStorage:
        device = Device("cuda:0")
        ptr, nbytes = 0, 16

    t = NBXTensor(FakeDeviceStorage(), (4,), (1,), 0, nbx_core.float32)
    from nbx_core.runtime.kernels.fill import _fill_kernel
    from nbx_core.runtime.launch import launch

    with pytest.raises(DeviceError, match="got a tensor on cuda:0"):
        launch(_fill_kernel, (1,), t, 0.0, 0, 4, (4,), (1,), FLOAT=True, NDIM=1, BLOCK=4, INT64=False)


@cuda_only
def test_host_device_round_trip_and_kernels():
    x = make((64, 33), "bfloat16")
    d = nbx_core.tensor(x.float().numpy()).to("cuda")
    assert d.device == Device("cuda:0")
    back = d.t().contiguous().to(nbx_core.bfloat16).cpu()
    np.testing.assert_array_equal(back.numpy().astype(np.float32), x.t().float().numpy())


@cuda_only
def test_dlpack_on_gpu_is_zero_copy():
    t = torch.randn(4, 5, device="cuda").t()
    n = nbx_core.from_dlpack(t)
    assert n.device == Device("cuda:0") and n.data_ptr() == t.data_ptr() and n.stride() == t.stride()
    back = torch.from_dlpack(n)
    assert back.data_ptr() == t.data_ptr()
    n2 = nbx_core.ones(3, device="cuda")
    assert torch.from_dlpack(n2).data_ptr() == n2.data_ptr()


@cuda_only
def test_cuda_launch_cache_gives_the_same_results():
    x = from_torch(make((1000,)))
    first = x.clone().cpu().numpy()
    for _ in range(3):
        np.testing.assert_array_equal(x.clone().cpu().numpy(), first)


def test_prepared_launch_runs_with_new_values_each_call():
    from nbx_core.runtime.kernels.fill import _fill_kernel
    from nbx_core.runtime.launch import prepare

    dev = "cuda" if current() == "cuda" else "cpu"
    run = prepare(_fill_kernel, (1,), (None, None, 0, 4, (4,), (1,)), (0, 1), FLOAT=True, NDIM=1, CONTIG=True,
                  BLOCK=4, INT64=False)
    a, b = nbx_core.empty(4, device=dev), nbx_core.empty(4, device=dev)
    run(a, 1.5)
    run(b, -2.0)
    if current() != "aot":
        np.testing.assert_array_equal(a.cpu().numpy(), [1.5] * 4)
        np.testing.assert_array_equal(b.cpu().numpy(), [-2.0] * 4)
    with pytest.raises(ValueError):
        run(a)


@cuda_only
def test_freed_small_blocks_are_reused_and_given_back():
    from nbx_core.memory import cuda as C

    x = nbx_core.empty(1000, device="cuda")
    ptr = x.data_ptr()
    del x
    assert nbx_core.empty(1000, device="cuda").data_ptr() == ptr  # 4000 bytes round to the same block
    y = nbx_core.empty(1000, device="cuda")
    del y
    assert C._cached[0] > 0
    C.empty_cache()
    assert C._cached[0] == 0 and not any(C._blocks.values())


@cuda_only
def test_reused_blocks_hold_new_values():
    for i in range(20):
        x = nbx_core.full((300,), float(i), device="cuda")
        np.testing.assert_array_equal(x.cpu().numpy(), np.full(300, i, np.float32))


def test_aot_refuses_a_kernel_over_the_shared_memory_limit(monkeypatch):
    # A kernel that compiles but could not launch (too much shared memory) is an error at compile time.
    from types import SimpleNamespace

    from nbx_core.errors import BackendError
    from nbx_core.runtime import launch

    monkeypatch.setenv("NBX_AOT_TARGET", "sm_90")
    kernel = SimpleNamespace(__name__="_big_kernel")
    launch._check_shared(kernel, SimpleNamespace(metadata=SimpleNamespace(shared=232448)))
    with pytest.raises(BackendError, match=r"_big_kernel: needs 262144 bytes of shared memory, over the 232448"):
        launch._check_shared(kernel, SimpleNamespace(metadata=SimpleNamespace(shared=262144)))
