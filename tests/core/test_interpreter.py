"""The cpu backend's interpreter whatever was imported first, from several threads, and with kernels
whose modules do not import triton.language; concurrent program runs on every backend that runs them."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import nbx_core
from nbx_core.backend import current, kernel_device_type
from nbx_core.errors import BackendError
from nbx_core.graph import load, save
from nbx_core.registry import Registry
from nbx_core.runtime.launch import launch
from nbx_core.testing import numeric

runs_programs = pytest.mark.skipif(not numeric(), reason="the aot backend runs no program")

# A kernel that calls Triton's own jit helpers (tl.sum, x.max()) and one of its module.
_REDUCING_KERNEL = """
import nbx_core.runtime.launch
import triton
import triton.language as tl


@triton.jit
def _double(x):
    return x * 2


@triton.jit
def row_stats(x_ptr, out_ptr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.program_id(0) * N + tl.arange(0, N))
    tl.store(out_ptr + tl.program_id(0) * 2, _double(tl.sum(x, 0)))
    tl.store(out_ptr + tl.program_id(0) * 2 + 1, x.max())
"""

_TORCH_FIRST = """
import os, sys
import torch
import triton


class Tiny(torch.nn.Module):
    def forward(self, x):
        return torch.softmax(x, -1)


torch.export.export(Tiny(), (torch.randn(2, 3),))
assert "TRITON_INTERPRET" not in os.environ and "triton.language" in sys.modules

import numpy as np
import nbx_core
from nbx_core.graph import load
from nbx_core.runtime.launch import launch

sys.path.insert(0, sys.argv[2])
from reducing_kernel import row_stats

x = np.arange(12, dtype=np.float32).reshape(3, 4)
out = nbx_core.empty(6)
launch(row_stats, (3,), nbx_core.tensor(x), out, N=4)
print(out.numpy().tolist())
print(load(sys.argv[1])(x.T).numpy().tolist() == np.concatenate([x, x], 1).tolist())
"""


@pytest.mark.skipif(not numeric(), reason="runs a cpu-backend process, which the cpu pass runs already")
def test_triton_imported_before_nbx_core_still_interprets(core_graph, tmp_path):
    """torch.export imports Triton before nbx_core can tell it to interpret: kernels that call jit
    helpers, Triton's own and their module's, still run on the cpu backend."""
    (tmp_path / "reducing_kernel.py").write_text(_REDUCING_KERNEL)
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"} | {"NBX_BACKEND": "cpu"}
    r = subprocess.run(
        [sys.executable, "-c", _TORCH_FIRST, str(core_graph), str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split("\n")[:2] == ["[12.0, 3.0, 44.0, 7.0, 76.0, 11.0]", "True"]


def _in_threads(work, threads: int = 4) -> list[BaseException]:
    errors: list[BaseException] = []

    def guarded(i: int) -> None:
        try:
            work(i)
        except BaseException as e:
            errors.append(e)

    pool = [threading.Thread(target=guarded, args=(i,)) for i in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return errors


@runs_programs
@pytest.mark.parametrize("sharing", ["one program", "a program per thread"])
def test_programs_run_from_four_threads(core_graph, sharing):
    shared = load(core_graph)

    def work(i: int) -> None:
        prog = shared if sharing == "one program" else load(core_graph)
        for run in range(5):
            x = np.arange(3 * (i + 2), dtype=np.float32).reshape(-1, 3) + 100 * run
            got = prog(x).cpu().numpy()
            np.testing.assert_array_equal(got, np.concatenate([x.T, x.T], 1))

    assert _in_threads(work) == []


def test_single_ops_run_from_four_threads():
    def work(i: int) -> None:
        for run in range(5):
            x = np.arange(4 * (i + 1), dtype=np.float32).reshape(4, -1) * (run + 1)
            got = nbx_core.tensor(x, device=kernel_device_type()).t().contiguous()
            if numeric():
                np.testing.assert_array_equal(got.cpu().numpy(), x.T)

    assert _in_threads(work) == []


def _slow_add(self, other):
    """add, slowly: a run that reads a buffer lets the other threads run before it writes it back."""
    total = self.numpy() + other.numpy()
    time.sleep(0.005)
    return nbx_core.tensor(total)


class _SlowAddPlugin:
    @nbx_core.hookimpl
    def nbx_register_kernels(self, registry):
        registry.register("aten::add.Tensor", _slow_add)


@runs_programs
def test_runs_that_update_a_buffer_take_turns(tmp_path):
    """count = count + 1 each run: twenty runs from four threads count to twenty, each seeing the last."""
    from nbx_core.ops import plugin as core_plugin

    registry = Registry()
    registry.add_plugin("core", core_plugin)
    registry.add_plugin("slow", _SlowAddPlugin())
    doc = {
        "format": "nbx-graph",
        "version": 1,
        "symbols": {},
        "inputs": [{"name": "one", "dtype": "float32", "shape": [1]}],
        "weights": [{"name": "count", "key": "count", "kind": "buffer", "dtype": "float32", "shape": [1]}],
        "nodes": [
            {
                "name": "next",
                "op": "aten::add.Tensor",
                "args": [{"ref": "count"}, {"ref": "one"}],
                "kwargs": {},
                "outputs": ["next"],
            }
        ],
        "outputs": [{"name": "next", "dtype": "float32", "shape": [1]}],
        "mutations": [{"value": "next", "kind": "buffer", "target": "count"}],
    }
    prog = load(save(doc, {"count": np.zeros(1, np.float32)}, tmp_path / "count.nbx"), registry=registry, device="cpu")
    seen: list[float] = []

    def work(i: int) -> None:
        for _ in range(5):
            seen.append(float(prog(np.ones(1, np.float32)).numpy()[0]))

    assert _in_threads(work) == []
    assert sorted(seen) == [float(n) for n in range(1, 21)]


# -- kernel modules that do not import triton.language ------------------------------------------------
_HELPER_WITHOUT_TL = """
import triton


@triton.jit
def plus_one(x):
    return x + 1
"""

_KERNEL_WITHOUT_TL = """
import nbx_core.runtime.launch
import triton
from triton.language import constexpr

from {helper} import plus_one


@triton.jit
def add_one(x_ptr, n, BLOCK: constexpr):
    offsets = triton.language.program_id(0) * BLOCK + triton.language.arange(0, BLOCK)
    mask = offsets < n
    triton.language.store(x_ptr + offsets, plus_one(triton.language.load(x_ptr + offsets, mask=mask)), mask=mask)
"""

_KERNEL_WITH_NAMES = """
import nbx_core.runtime.launch
import triton
from triton.language import arange, constexpr, load, program_id, store


@triton.jit
def add_one(x_ptr, n, BLOCK: constexpr):
    offsets = program_id(0) * BLOCK + arange(0, BLOCK)
    store(x_ptr + offsets, load(x_ptr + offsets, mask=offsets < n) + 1, mask=offsets < n)
"""


def _module(tmp_path, monkeypatch, name: str, source: str):
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))
    monkeypatch.syspath_prepend(str(tmp_path))
    return importlib.import_module(name)


def test_kernel_whose_modules_do_not_import_triton_language(tmp_path, monkeypatch):
    _module(tmp_path, monkeypatch, "nbx_test_helper_without_tl", _HELPER_WITHOUT_TL)
    kernel = _module(
        tmp_path,
        monkeypatch,
        "nbx_test_kernel_without_tl",
        _KERNEL_WITHOUT_TL.format(helper="nbx_test_helper_without_tl"),
    ).add_one
    x = nbx_core.tensor(np.arange(5, dtype=np.float32), device=kernel_device_type())
    launch(kernel, (1,), x, 5, BLOCK=8)
    if numeric():
        np.testing.assert_array_equal(x.cpu().numpy(), np.arange(1, 6))


@pytest.mark.skipif(current() != "cpu", reason="a trap of Triton's interpreter; compiled kernels take these names")
def test_language_names_imported_by_name_are_an_error_that_says_what_to_write(tmp_path, monkeypatch):
    kernel = _module(tmp_path, monkeypatch, "nbx_test_kernel_with_names", _KERNEL_WITH_NAMES).add_one
    with pytest.raises(BackendError) as info:
        launch(kernel, (1,), nbx_core.tensor(np.arange(5, dtype=np.float32)), 5, BLOCK=8)
    assert str(info.value) == (
        "nbx_test_kernel_with_names.add_one: Triton's interpreter (the cpu backend) cannot run functions imported "
        "by name from triton.language (nbx_test_kernel_with_names.arange, nbx_test_kernel_with_names.load, "
        "nbx_test_kernel_with_names.program_id, nbx_test_kernel_with_names.store): call them through the module, "
        "as tl.load(...) after `import triton.language as tl`"
    )


_AUTOTUNED_KERNEL = """
import nbx_core.runtime.launch
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK": 8})], key=["n"])
@triton.jit
def add_one(x_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n) + 1, mask=offsets < n)
"""


@pytest.mark.skipif(current() != "cpu", reason="checks the interpreter's launch of a wrapped kernel")
def test_autotuned_kernel_runs_on_the_interpreter(tmp_path, monkeypatch):
    kernel = _module(tmp_path, monkeypatch, "nbx_test_autotuned_kernel", _AUTOTUNED_KERNEL).add_one
    x = nbx_core.tensor(np.arange(5, dtype=np.float32))
    launch(kernel, (1,), x, 5)
    np.testing.assert_array_equal(x.numpy(), np.arange(1, 6))
