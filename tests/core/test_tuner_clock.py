"""nbx_core.runtime.tuner.kernel_clock: GPU time of queued runs, not the host's launch time."""

from __future__ import annotations

import types

import pytest

from nbx_core.memory import cuda as _cuda
from nbx_core.runtime import tuner
from nbx_core.runtime.launch import BACKEND


class _FakeDriver:
    """The cuda-bindings calls kernel_clock makes, logged; elapsed time is fixed."""

    CUresult = types.SimpleNamespace(CUDA_SUCCESS=0)

    def __init__(self, log: list, fail: bool = False) -> None:
        self.log, self.fail, self.made = log, fail, 0

    def cuGetErrorName(self, err):
        return 0, b"CUDA_ERROR_FAKE"

    def cuEventCreate(self, flags):
        if self.fail:
            return 1, None
        self.made += 1
        return 0, f"event{self.made}"

    def cuEventRecord(self, event, stream):
        self.log.append(("record", event, stream))
        return (0,)

    def cuEventSynchronize(self, event):
        return (0,)

    def cuEventElapsedTime(self, start, end):
        return 0, 2.0

    def cuEventDestroy(self, event):
        self.log.append(("destroy", event))
        return (0,)


@pytest.fixture
def fake_gpu(monkeypatch):
    log: list = []
    driver = _FakeDriver(log)
    monkeypatch.setattr(_cuda, "_driver", lambda: driver)
    monkeypatch.setattr(_cuda, "synchronize", lambda device=None: None)
    monkeypatch.setattr(_cuda, "current_stream", lambda: 7)
    monkeypatch.setattr("nbx_core.runtime.kernels.sleep.gpu_sleep", lambda seconds: log.append(("sleep", seconds)))
    return driver


def test_runs_are_queued_behind_a_sleep_and_bracketed_by_events(fake_gpu):
    log = fake_gpu.log
    assert tuner.kernel_clock(lambda: log.append("run"), 4) == pytest.approx(2.0 / 1e3 / 4)
    # Two untimed runs (compile, then the launch-time estimate), the sleep, the events around four runs.
    assert log[:2] == ["run", "run"]
    kind, seconds = log[2]
    assert kind == "sleep" and seconds >= 1e-3
    assert log[3:9] == [("record", "event1", 7), "run", "run", "run", "run", ("record", "event2", 7)]
    assert log[9:] == [("destroy", "event1"), ("destroy", "event2")]


def test_failing_events_fall_back_to_the_host_clock(fake_gpu, monkeypatch):
    fake_gpu.fail = True
    monkeypatch.setattr(tuner, "wall_clock", lambda fn, reps: 0.5)
    with pytest.warns(UserWarning, match="timing on the host clock"):
        assert tuner.kernel_clock(lambda: None, 3) == 0.5


def test_measure_uses_kernel_time_by_default():
    assert tuner.measure.__defaults__[-1] is tuner.kernel_clock


@pytest.mark.skipif(BACKEND != "aot", reason="compiles the sleep kernel for sm_90 (aot backend only)")
def test_sleep_kernel_compiles_for_hopper():
    from nbx_core.runtime import launch
    from nbx_core.runtime.kernels.sleep import _sleep_kernel, gpu_sleep

    gpu_sleep(0.01)
    assert any(key[0] == id(_sleep_kernel) for key in launch.compiled_variants)
