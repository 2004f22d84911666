"""A bundled program builds its kernels' host launchers in parallel before its first run
(nbx_core.runtime.launchers). No GPU here: Triton's launcher build is replaced by a recorder, and
the bundles are written directly, with stand-in binaries."""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from nbx_core.graph import bundle, read_graph
from nbx_core.graph import runner as _runner
from nbx_core.graph.bundled import BundledProgram
from nbx_core.graph.validate import load_weights
from nbx_core.runtime import launchers

from .conftest import base_doc, base_weights, write

_METADATA = {
    "target": {"backend": "cuda", "arch": 90, "warp_size": 32},
    "num_warps": 4,
    "num_ctas": 1,
    "shared": 0,
    "tensordesc_meta": [],
    "global_scratch_size": 0,
    "global_scratch_align": 1,
    "profile_scratch_size": 0,
    "profile_scratch_align": 1,
    "launch_cooperative_grid": False,
    "launch_pdl": False,
}


def _kernel(tmp_path: Path, i: int, signature: dict, params: list[str] | None, name: str = "_k") -> tuple:
    files = tmp_path / f"files{i}"
    files.mkdir()
    (files / f"{name}.cubin").write_bytes(bytes([i]) * 8)
    (files / f"{name}.json").write_text(json.dumps({**_METADATA, "name": name, "hash": f"{i:064x}"}))
    entry = {"kernel": f"mod:{name}", "signature": signature, "num_warps": 4}
    if params is not None:
        entry["params"] = params
    return f"{i:064x}", (entry, {f"{name}.cubin": files / f"{name}.cubin", f"{name}.json": files / f"{name}.json"})


def _bundle(tmp_path: Path, kernels: dict) -> tuple[Path, bundle.Bundle]:
    graph = write(tmp_path / "g.nbx", base_doc())
    return graph, bundle.write(graph, "sm_90", "3.6.0", [], kernels)


def _distinct(tmp_path: Path, n: int) -> dict:
    """``n`` variants whose launchers differ (``n`` int arguments)."""
    return dict(
        _kernel(tmp_path, i, {f"a{j}": "i32" for j in range(i + 1)}, [f"a{j}" for j in range(i + 1)]) for i in range(n)
    )


@pytest.fixture
def on_gpu(monkeypatch):
    """Launchers are built as on the cuda backend; each build is recorded."""
    built: list[launchers.Launcher] = []
    monkeypatch.setattr(launchers, "_driver_ready", lambda: True)
    monkeypatch.setattr(launchers, "build", built.append)
    return built


def test_every_bundled_launcher_is_built_from_its_metadata_in_parameter_order(tmp_path, on_gpu):
    # The index sorts a signature's keys; the launcher takes the arguments in the kernel's order.
    kernels = dict(
        [
            _kernel(
                tmp_path,
                1,
                {"x": "*fp32", "n": "i32", "BLOCK": "constexpr", "pair": ["*fp16", "i64"]},
                ["x", "pair", "n", "BLOCK"],
            ),
            _kernel(tmp_path, 2, {"y": "*bf16", "m": "i64"}, ["y", "m"], name="_other"),
            # the same launcher as kernel 2 (another tile, same argument types): built once
            _kernel(tmp_path, 3, {"y": "*bf16", "m": "i64"}, ["y", "m"], name="_other"),
            # a bundle written before params were recorded: left to the first launch
            _kernel(tmp_path, 4, {"z": "*fp32"}, None),
        ]
    )
    _, found = _bundle(tmp_path, kernels)
    launchers.warm(list(found.kernels.values())).wait()
    got = sorted(((b.kernel, list(b.signature.items()), b.metadata["name"]) for b in on_gpu), key=str)
    assert got == [
        ("mod:_k", [("x", "*fp32"), ("pair", ("*fp16", "i64")), ("n", "i32"), ("BLOCK", "constexpr")], "_k"),
        ("mod:_other", [("y", "*bf16"), ("m", "i64")], "_other"),
    ]
    assert on_gpu[0].metadata["target"] == _METADATA["target"]


def test_launchers_are_built_concurrently(tmp_path, monkeypatch):
    monkeypatch.setattr(launchers, "_driver_ready", lambda: True)
    monkeypatch.setattr(os, "cpu_count", lambda: 3)
    together = threading.Barrier(3, timeout=10)  # passes only when 3 builds run at once
    lock, active, peak, built = threading.Lock(), [0], [0], []

    def build(launcher):
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        together.wait()
        with lock:
            active[0] -= 1
            built.append(launcher.kernel)

    monkeypatch.setattr(launchers, "build", build)
    _, found = _bundle(tmp_path, _distinct(tmp_path, 6))
    launchers.warm(list(found.kernels.values())).wait()
    assert peak[0] == 3 and len(built) == 6


def test_a_failed_build_is_logged_and_the_others_are_built(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(launchers, "_driver_ready", lambda: True)
    built = []

    def build(launcher):
        if len(launcher.signature) == 2:
            raise RuntimeError("cc: not found")
        built.append(len(launcher.signature))

    monkeypatch.setattr(launchers, "build", build)
    _, found = _bundle(tmp_path, _distinct(tmp_path, 3))
    with caplog.at_level(logging.DEBUG, logger=launchers.__name__):
        launchers.warm(list(found.kernels.values())).wait()
    assert sorted(built) == [1, 3]
    assert any("host launcher not built ahead" in r.getMessage() and r.exc_info for r in caplog.records)


@pytest.mark.parametrize("backend", ["cpu", "aot"])
def test_nothing_is_built_off_the_gpu(backend, tmp_path, monkeypatch):
    built = []
    monkeypatch.setattr(launchers, "build", built.append)
    _, found = _bundle(tmp_path, _distinct(tmp_path, 2))
    monkeypatch.setattr(launchers._backend, "current", lambda: backend)  # nothing launches a cubin there
    launchers.warm(list(found.kernels.values())).wait()
    assert built == []


def test_a_bundled_programs_first_run_waits_for_its_launchers(tmp_path, monkeypatch, np_registry):
    monkeypatch.setattr(launchers, "_driver_ready", lambda: True)
    done, seen = [], []

    def build(launcher):
        time.sleep(0.2)
        done.append(launcher)

    def run(self, inputs, *, planned=True):
        seen.append(len(done))
        return {}

    monkeypatch.setattr(launchers, "build", build)
    monkeypatch.setattr(_runner.Program, "run", run)
    graph, found = _bundle(tmp_path, _distinct(tmp_path, 2))
    g = read_graph(graph)
    BundledProgram(found, g, load_weights(g), registry=np_registry).run({"x": np.ones((2, 4), np.float32)})
    assert seen == [2]


def test_a_bundled_program_runs_when_its_launchers_fail_to_build(tmp_path, monkeypatch, np_registry):
    monkeypatch.setattr(launchers, "_driver_ready", lambda: True)

    def build(launcher):
        raise OSError("no space left on device")

    monkeypatch.setattr(launchers, "build", build)
    graph, found = _bundle(tmp_path, _distinct(tmp_path, 2))
    g = read_graph(graph)
    x = np.array([[1.0, 2.0, -3.0, 4.0], [0.5, -1.5, 2.5, 8.0]], np.float32)
    out = BundledProgram(found, g, load_weights(g), registry=np_registry).run({"x": x})["relu"].numpy()
    w, b = base_weights()["lin.w"], base_weights()["lin.b"]
    np.testing.assert_allclose(out, np.maximum(x.astype(np.float64) * w + b, 0), rtol=1e-6)


def test_build_hands_triton_the_launcher_inputs_a_compiled_kernel_would(monkeypatch):
    import triton
    import triton.backends.nvidia.driver as nv
    from triton.backends.compiler import GPUTarget

    made = []
    per_signature = hasattr(nv, "make_launcher")  # Triton 3.6 compiles a C module per signature; 3.9 has none
    if per_signature:
        monkeypatch.setattr(
            nv, "compile_module_from_src", lambda src, name, **kw: made.append(src) or SimpleNamespace(launch=None)
        )
        monkeypatch.setattr(nv, "library_dirs", lambda: [])

    def launcher_cls(src, metadata):
        made.append((src, metadata))
        if per_signature:
            nv.CudaLauncher(src, metadata)

    monkeypatch.setattr(triton.runtime.driver, "_active", SimpleNamespace(launcher_cls=launcher_cls))
    signature = {"x": "*fp32", "pair": ("i32", "i64"), "n": "i32", "BLOCK": "constexpr"}
    launchers.build(launchers.Launcher("mod:_k", signature, {**_METADATA, "name": "_k"}))
    src, metadata = made[0]
    assert list(src.signature.items()) == list(signature.items()) and src.constants == {}
    assert metadata.target == GPUTarget("cuda", 90, 32) and metadata.tensordesc_meta == [] and metadata.name == "_k"
    if per_signature:
        assert len(made) == 2 and "__triton_launcher" in made[1]
