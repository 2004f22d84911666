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
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, **env}, timeout=120
    )


def test_unknown_backend_is_a_clear_error():
    r = _python("import nbx_core.runtime.launch", NBX_BACKEND="tpu")
    assert r.returncode != 0
    assert "NBX_BACKEND='tpu' is not a backend: use one of cpu, cuda, aot" in r.stderr


def test_backend_is_chosen_once_and_sets_the_interpreter():
    r = _python(
        "import os, nbx_core.runtime.launch as l; print(l.BACKEND, os.environ['TRITON_INTERPRET'])", NBX_BACKEND="cpu"
    )
    assert r.stdout.split() == ["cpu", "1"]


def test_aot_compiles_without_running():
    r = _python(
        "import nbx_core.api as n, nbx_core.runtime.launch as l; n.ones(3).t().contiguous(); "
        "print(len(l.compiled_variants) > 0)",
        NBX_BACKEND="aot",
    )
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
    run = prepare(
        _fill_kernel,
        (1,),
        (None, None, 0, 4, (4,), (1,)),
        (0, 1),
        FLOAT=True,
        NDIM=1,
        CONTIG=True,
        BLOCK=4,
        INT64=False,
    )
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


# -- a backend that cannot run, as a user meets it ---------------------------------------------------
def _nbx(*args: str, **env: str) -> subprocess.CompletedProcess:
    code = "import sys; from nbx_core.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, env={**os.environ, **env}, timeout=120
    )


def _cuda_unavailable() -> str | None:
    from nbx_core.memory.cuda import unavailable

    return unavailable()


def test_nbx_run_says_the_backend_is_unknown(core_graph):
    r = _nbx("run", str(core_graph), NBX_BACKEND="foo")
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip() == "nbx: error: NBX_BACKEND='foo' is not a backend: use one of cpu, cuda, aot"


_LAZY_KERNEL = """
import nbx_core
from nbx_core.registry import Registry

class Plugin:
    @nbx_core.hookimpl
    def nbx_register_kernels(self, registry):
        registry.register("test::cast", "nbx_core.runtime.kernels.copy:cast_to")  # its module imports the launcher

registry = Registry()
registry.add_plugin("test", Plugin())
try:
    registry.lookup("test::cast")
except Exception as e:
    print(type(e).__name__, e)
"""


def test_a_plugin_kernel_gets_the_backend_error_not_a_plugin_error():
    r = _python(_LAZY_KERNEL, NBX_BACKEND="foo")
    assert r.stdout.strip() == "BackendError NBX_BACKEND='foo' is not a backend: use one of cpu, cuda, aot", r.stderr


@pytest.mark.skipif(_cuda_unavailable() is None, reason="a CUDA device is visible here")
def test_nbx_run_on_cuda_without_a_gpu_says_why(core_graph):
    r = _nbx("run", str(core_graph), NBX_BACKEND="cuda")
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.startswith("nbx: error: NBX_BACKEND=cuda, but ")
    assert r.stderr.strip().endswith("unset NBX_BACKEND or set NBX_BACKEND=cpu to run on the CPU")
    r = _nbx("run", str(core_graph), "--device", "cuda", NBX_BACKEND="cpu")
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.startswith("nbx: DeviceError: cuda:0 cannot be used: ")


class _NoDeviceDriver:
    """cuda-bindings' driver on a machine without a GPU: cuInit fails, or cannot load the driver."""

    class CUresult:
        CUDA_SUCCESS = 0

    def __init__(self, load_error: Exception | None) -> None:
        self.load_error = load_error

    def cuInit(self, flags: int) -> tuple[int]:
        if self.load_error is not None:
            raise self.load_error
        return (100,)

    def cuGetErrorName(self, err: int) -> tuple[int, bytes]:
        return 0, b"CUDA_ERROR_NO_DEVICE"


@pytest.mark.parametrize("load_error", [None, RuntimeError('"cuda" is an NVIDIA driver library')])
def test_installed_bindings_without_a_gpu_say_there_is_no_device(monkeypatch, load_error):
    import threading

    from nbx_core.memory import cuda as C

    monkeypatch.setattr(C, "_driver", lambda: _NoDeviceDriver(load_error))
    C.unavailable.cache_clear()
    try:
        reason = C.unavailable()
        assert reason.startswith("no CUDA device is visible (") and "pip install" not in reason
        assert C.device_count() == 0
        errors: list[Exception] = []

        def first_use_on_a_thread() -> None:
            try:
                C.ensure_context(0)
            except DeviceError as e:
                errors.append(e)

        thread = threading.Thread(target=first_use_on_a_thread)
        thread.start()
        thread.join()
        assert [str(e) for e in errors] == [f"cuda:0 cannot be used: {reason}; use the cpu device"]
    finally:
        monkeypatch.undo()
        C.unavailable.cache_clear()


# -- the aot backend computes no values: it refuses to run a program --------------------------------
_AOT_PROGRAM = """
import sys
import numpy as np
import nbx_core.runtime.launch as launch
from nbx_core.cli import main
from nbx_core.errors import BackendError
from nbx_core.graph import load

print("nbx run exit", main(["run", sys.argv[1]]))
prog = load(sys.argv[1])
x = np.ones((4, 3), np.float32)
for run in (lambda: prog(x), lambda: prog.run({"x": x})):
    try:
        run()
    except BackendError as e:
        print("refused:", e)
print("check_compiles", prog.check_compiles(x), len(launch.compiled_variants) > 0)
"""


def test_aot_refuses_to_run_a_program_and_compiles_it_on_request(core_graph):
    r = subprocess.run(
        [sys.executable, "-c", _AOT_PROGRAM, str(core_graph)],
        capture_output=True,
        text=True,
        env={**os.environ, "NBX_BACKEND": "aot"},
        timeout=120,
    )
    lines = r.stdout.splitlines()
    assert lines[0] == "nbx run exit 2" and "outputs:" not in r.stdout, r.stdout + r.stderr
    assert r.stderr.startswith(
        f"nbx: error: {core_graph / 'graph.json'}: the aot backend (NBX_BACKEND=aot) "
        "compiles kernels for sm_90 without running them, a compile-only check"
    )
    assert len([line for line in lines if line.startswith("refused: ")]) == 2
    assert "to check that its kernels compile for sm_90, call Program.check_compiles(...)" in lines[1]
    assert lines[-1] == "check_compiles None True", r.stderr


@pytest.mark.skipif(current() == "aot", reason="checks the refusal off the aot backend")
def test_check_compiles_needs_the_aot_backend(core_graph):
    from nbx_core.errors import BackendError
    from nbx_core.graph import load

    with pytest.raises(BackendError, match="check_compiles needs the aot backend"):
        load(core_graph).check_compiles(np.ones((4, 3), np.float32))
