"""``nbx compile``: a graph shipped with its kernels (nbx_core.graph.bundle, docs/bundles.md).

The compiles run ``nbx compile`` as a user does, in its own aot process, once per module: the
example graph at two sequence lengths and a zoo model (GPT-2 small, which has fusion patterns,
fused elementwise kernels and GEMM epilogues). A bundled program then launches with an empty,
read-only Triton cache and compiles nothing, also with its fused kernels regenerated elsewhere.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib
import json
import os
import shutil
import subprocess
import sys
import warnings
from contextlib import contextmanager
from pathlib import Path

import pytest

from nbx_core.backend import current
from nbx_core.errors import BundleError, GraphInputError
from nbx_core.graph import bundle, read_graph, save
from nbx_core.graph.bundle import INDEX_FILE, KERNELS_DIR, checksum

from .conftest import base_doc, base_weights, write

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "encoder_block.nbx"


def nbx(*args: str, cache: Path | None = None, **env: str) -> subprocess.CompletedProcess:
    """``nbx ARGS`` in a fresh process (``NBX_CACHE_DIR=cache`` when given)."""
    full = dict(os.environ, **env, **({"NBX_CACHE_DIR": str(cache)} if cache else {}))
    return subprocess.run(
        [sys.executable, "-m", "nbx_core.cli", *args], env=full, capture_output=True, text=True, timeout=600, cwd=ROOT
    )


def compile_graph(path: Path, *args: str, cache: Path) -> dict:
    done = nbx("compile", str(path), "--target", "sm_90", "--format", "json", *args, cache=cache)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def tree(path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


@contextmanager
def _once(tmp_path_factory, worker_id: str, name: str):
    """A directory made once per test run, shared by the xdist workers (the first makes it while the
    others wait): yields the directory and whether this process must fill it."""
    base = tmp_path_factory.getbasetemp()
    if worker_id != "master":
        base = base.parent  # the run's directory, above each worker's
    folder = base / name
    with open(base / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            fresh = not (folder / "done").exists()
            if fresh:
                shutil.rmtree(folder, ignore_errors=True)
                folder.mkdir()
            yield folder, fresh
            if fresh:
                (folder / "done").touch()
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@pytest.fixture(scope="module")
def built(tmp_path_factory, worker_id):
    """The example graph compiled at seq 8 and 16, and GPT-2 small at its exported length."""
    with _once(tmp_path_factory, worker_id, "nbx-bundles") as (root, fresh):
        if fresh:
            _build(root)
        return {
            "example": root / "encoder_block.nbx",
            "gpt2": root / "gpt2.nbx",
            "root": root,
            **json.loads((root / "reports.json").read_text()),
        }


def _build(root: Path) -> None:
    import torch

    from nbx_core.graph.export import export
    from nbx_core.testing import zoo

    example = root / "encoder_block.nbx"
    shutil.copytree(EXAMPLE, example)
    module, inputs, dynamic = zoo.build("gpt2", "small")
    with torch.no_grad():
        gpt2 = export(torch.export.export(module, (), inputs, dynamic_shapes=dynamic), root / "gpt2.nbx")
    done = nbx(
        "compile", str(example), "--target", "sm_90", "--dim", "seq=8,16", "--format", "json", cache=root / "cache"
    )
    assert done.returncode == 0, done.stderr
    reports = {
        "example_report": json.loads(done.stdout),
        "example_log": done.stderr,
        "gpt2_report": compile_graph(gpt2, cache=root / "cache"),
    }
    (root / "reports.json").write_text(json.dumps(reports))


def copy_of(graph: Path, tmp_path: Path) -> Path:
    out = tmp_path / graph.name
    shutil.copytree(graph, out)
    return out


# -- what nbx compile writes --------------------------------------------------------------------------


def test_compile_stores_the_example_graphs_kernels(built):
    example, report = built["example"], built["example_report"]
    found = bundle.read(example, "sm_90")
    assert found is not None and found.path == example / KERNELS_DIR / "sm_90"
    assert [s["dims"] for s in found.signatures] == [{"seq": 8}, {"seq": 16}]
    assert found.signatures[1]["inputs"] == [
        {"name": "src", "dtype": "float32", "shape": [2, 16, 32]},
        {"name": "src_key_padding_mask", "dtype": "bool", "shape": [2, 16]},
    ]
    kinds = {k.entry["kernel"].rsplit(":", 1)[1] for k in found.kernels.values()}
    assert {"_gemm_kernel", "_attn_fwd_kernel", "_row_norm_kernel", "_pointwise_kernel"} <= kinds
    for kernel in found.kernels.values():
        assert sorted(p.suffix for p in kernel.files.values()) == [".cubin", ".json"]
        assert all(p.parent.name == kernel.hash for p in kernel.files.values())
        assert kernel.entry["source"] and kernel.entry["signature"] and kernel.entry["num_warps"] >= 1
    assert report["kernels"] == len(found.kernels) and report["bytes"] == found.bytes > 0
    assert report["triton"] == found.triton and report["signatures"] == [dict(s) for s in found.signatures]
    assert "nbx compile: signature 2 (seq=16)" in built["example_log"]  # progress, one line each off a terminal


def test_compile_stores_a_zoo_models_fused_kernels(built):
    found = bundle.read(built["gpt2"], "sm_90")
    assert found is not None and [s["dims"] for s in found.signatures] == [{"seq": 12}]
    modules = [k.entry["kernel"] for k in found.kernels.values()]
    fused = [m for m in modules if m.startswith("nbx_fused_")]
    assert fused, modules  # the plan's fused elementwise kernels and GEMM epilogues are bundled
    epilogue = [
        k
        for k in found.kernels.values()
        if k.entry["kernel"].endswith(":_gemm_kernel")
        and str(k.entry["constexprs"].get("EPI", "")).startswith("nbx_fused_")
    ]
    assert epilogue, "no GEMM with a fused epilogue"
    assert built["gpt2_report"]["kernels"] == len(found.kernels)


def test_compile_records_each_kernels_parameter_order(built):
    # A host launcher takes the arguments in the kernel's order, which the sorted signature loses.
    found = bundle.read(built["gpt2"], "sm_90")
    assert found is not None
    plain = 0
    for kernel in found.kernels.values():
        assert sorted(kernel.entry["params"]) == sorted(kernel.entry["signature"])
        module, name = kernel.entry["kernel"].split(":")
        if not module.startswith("nbx_fused_"):  # generated modules are imported from the NBX cache
            fn = getattr(importlib.import_module(module), name)
            assert kernel.entry["params"] == list(fn.arg_names)
            plain += 1
    assert plain > 5


def test_compiling_again_writes_the_same_bytes(built, tmp_path):
    example = copy_of(built["example"], tmp_path)
    before = tree(example / KERNELS_DIR)
    # Another NBX cache: the fused kernels are generated again, elsewhere, and must come out the same.
    compile_graph(example, "--dim", "seq=8,16", "--no-progress", cache=tmp_path / "other-cache")
    assert tree(example / KERNELS_DIR) == before
    index = json.loads((example / KERNELS_DIR / "sm_90" / INDEX_FILE).read_text())
    assert [k["hash"] for k in index["kernels"]] == sorted(k["hash"] for k in index["kernels"])


# -- a bundled program on the target compiles nothing -----------------------------------------------

_SERVE = """
import json, os, sys, warnings
import numpy as np
from nbx_core import dtypes as D
from nbx_core.errors import BundleError
from nbx_core.graph import read_graph
from nbx_core.graph.bundled import BundledProgram, open_bundle
from nbx_core.graph.validate import load_weights
import triton  # after nbx_core, which configures it for the backend

compiles = []
triton.knobs.compilation.listener = lambda src, metadata, metadata_group, times, cache_hit: compiles.append(
    cache_hit)
report = {}
os.environ["NBX_REQUIRE_BUNDLE"] = "1"
for path in sys.argv[1:]:
    graph = read_graph(path)
    found = open_bundle(graph, "sm_90")
    program = BundledProgram(found, graph, load_weights(graph))
    for record in found.signatures:
        program.check_compiles(**{i["name"]: np.ones(i["shape"], D.from_name(i["dtype"]).np)
                                  for i in record["inputs"]})
    report[path] = {"served": compiles.count(True), "compiled": compiles.count(False)}
    compiles.clear()

graph = read_graph(sys.argv[1])  # the example graph, at a length its bundle lacks
longer = {"src": np.ones((2, 32, 32), np.float32), "src_key_padding_mask": np.zeros((2, 32), bool)}
try:
    BundledProgram(open_bundle(graph, "sm_90"), graph, load_weights(graph)).check_compiles(**longer)
except BundleError as exc:
    report["required"] = {"error": str(exc), "compiled": compiles.count(False)}
del os.environ["NBX_REQUIRE_BUNDLE"]
os.environ["TRITON_CACHE_DIR"] = sys.argv[0] + ".writable"  # what Triton compiles must go somewhere
with warnings.catch_warnings(record=True) as seen:
    warnings.simplefilter("always")
    BundledProgram(open_bundle(graph, "sm_90"), graph, load_weights(graph)).check_compiles(**longer)
report["missing"] = {"warnings": [str(w.message) for w in seen if w.category.__name__ == "BundleWarning"],
                     "compiled": compiles.count(False)}
print(json.dumps(report))
"""


@pytest.fixture(scope="module")
def served(built, tmp_path_factory, worker_id):
    """Both bundled graphs loaded in a fresh aot process, each signature compiled, with Triton's cache
    empty and read-only and a new NBX cache (fused kernels are generated again); then the example at
    a length its bundle lacks, with NBX_REQUIRE_BUNDLE=1 and without."""
    with _once(tmp_path_factory, worker_id, "nbx-bundles-served") as (root, fresh):
        if fresh:
            triton_cache = root / "triton-cache"
            triton_cache.mkdir()
            triton_cache.chmod(0o555)
            script = root / "serve.py"
            script.write_text(_SERVE)
            env = {
                **os.environ,
                "NBX_BACKEND": "aot",
                "TRITON_CACHE_DIR": str(triton_cache),
                "NBX_CACHE_DIR": str(root / "nbx-cache"),
            }
            done = subprocess.run(
                [sys.executable, str(script), str(built["example"]), str(built["gpt2"])],
                env=env,
                capture_output=True,
                text=True,
                timeout=600,
            )
            triton_cache.chmod(0o755)
            assert done.returncode == 0, done.stderr
            report = json.loads(done.stdout.strip().splitlines()[-1])
            report["triton_cache"] = sorted(p.name for p in triton_cache.iterdir())
            (root / "report.json").write_text(json.dumps(report))
        return json.loads((root / "report.json").read_text())


def test_a_bundled_program_compiles_no_kernel(built, served):
    for path in (built["example"], built["gpt2"]):
        assert served[str(path)]["compiled"] == 0
        assert served[str(path)]["served"] > 10
    assert served["triton_cache"] == []  # nothing compiled, nothing even looked up on disk


def test_require_bundle_refuses_to_compile_a_kernel_it_lacks(served):
    assert served["required"]["compiled"] == 0
    error = served["required"]["error"]
    assert "is not in the graph's kernel bundle for sm_90" in error and "NBX_REQUIRE_BUNDLE=1 forbids" in error
    assert "src [2, 32, 32]" in error and "nbx compile" in error


def test_a_signature_not_bundled_compiles_after_a_warning(served):
    missing = served["missing"]
    assert missing["compiled"] > 0 and len(missing["warnings"]) == missing["compiled"]
    assert all("is not in the graph's kernel bundle for sm_90" in w for w in missing["warnings"])
    assert "src [2, 32, 32]" in missing["warnings"][0] and "nbx compile" in missing["warnings"][0]


# -- a damaged or mismatched bundle -----------------------------------------------------------------


def _index(graph: Path) -> Path:
    return graph / KERNELS_DIR / "sm_90" / INDEX_FILE


def _rewrite_index(graph: Path, change, keep_checksum: bool = False) -> None:
    document = json.loads(_index(graph).read_text())
    change(document)
    if not keep_checksum:
        document["checksum"] = checksum(document)
    _index(graph).write_text(json.dumps(document))


def test_an_edited_index_is_caught(built, tmp_path, capsys):
    from nbx_core.cli import main

    graph = copy_of(built["example"], tmp_path)

    def fewer_warps(document):
        document["kernels"][0]["num_warps"] = 1

    _rewrite_index(graph, fewer_warps, keep_checksum=True)
    with pytest.raises(BundleError, match="checksum does not match"):
        bundle.read(graph, "sm_90")
    assert main(["registry", "check", str(graph)]) == 1
    err = capsys.readouterr().err
    assert "the kernel bundle for sm_90 cannot be used" in err and "checksum" in err


@pytest.mark.parametrize("damage", ["flipped", "truncated", "missing"])
def test_a_damaged_binary_is_caught(built, tmp_path, damage):
    graph = copy_of(built["example"], tmp_path)
    cubin = next((graph / KERNELS_DIR / "sm_90").rglob("*.cubin"))
    data = bytearray(cubin.read_bytes())
    if damage == "flipped":
        data[len(data) // 2] ^= 0xFF
        cubin.write_bytes(bytes(data))
    elif damage == "truncated":
        cubin.write_bytes(bytes(data[:-100]))
    else:
        cubin.unlink()
    want = {"flipped": "SHA-256 differs", "truncated": "truncated", "missing": "cannot be read"}[damage]
    with pytest.raises(BundleError, match=want) as caught:
        bundle.read(graph, "sm_90")
    assert str(cubin) in str(caught.value) and "nbx compile" in str(caught.value)


def test_an_index_that_lists_a_binary_twice_its_size_or_points_outside_is_caught(built, tmp_path):
    graph = copy_of(built["example"], tmp_path)

    def escape(document):
        files = document["kernels"][0]["files"]
        name = next(n for n in files if n.endswith(".cubin"))
        files["../../../graph.cubin"] = files.pop(name)

    _rewrite_index(graph, escape)
    with pytest.raises(BundleError, match="is malformed"):
        bundle.read(graph, "sm_90")
    _index(graph).write_text(_index(graph).read_text()[:100])  # truncated index
    with pytest.raises(BundleError, match="not JSON"):
        bundle.read(graph, "sm_90")


def test_a_damaged_bundle_stops_the_load_before_anything_runs(built, tmp_path):
    from nbx_core.graph.bundled import open_bundle

    graph = copy_of(built["example"], tmp_path)
    next((graph / KERNELS_DIR / "sm_90").glob("*/*.json")).write_text("{}")  # a kernel's metadata
    with pytest.raises(BundleError, match="bytes where"):
        open_bundle(read_graph(graph), "sm_90")


def test_a_bundle_for_another_triton_target_or_graph_is_ignored_with_a_warning(built, tmp_path, monkeypatch):
    from nbx_core.graph.bundled import open_bundle
    from nbx_core.runtime.prebuilt import BundleWarning

    graph = copy_of(built["example"], tmp_path)
    monkeypatch.delenv("NBX_REQUIRE_BUNDLE", raising=False)
    with pytest.warns(BundleWarning, match=r"has no kernels for this GPU's sm_80 \(it has: sm_90\)"):
        assert open_bundle(read_graph(graph), "sm_80") is None

    def older(document):
        document["triton"] = "0.0.1"

    _rewrite_index(graph, older)
    with pytest.warns(BundleWarning, match="built with Triton 0.0.1"):
        assert open_bundle(read_graph(graph), "sm_90") is None
    monkeypatch.setenv("NBX_REQUIRE_BUNDLE", "1")
    with pytest.raises(BundleError, match="built with Triton 0.0.1.*NBX_REQUIRE_BUNDLE=1"):
        open_bundle(read_graph(graph), "sm_90")

    other = copy_of(built["example"], tmp_path / "edited")
    (other / "graph.json").write_text((other / "graph.json").read_text() + "\n")
    monkeypatch.delenv("NBX_REQUIRE_BUNDLE")
    with pytest.warns(BundleWarning, match="built for another version of graph.json"):
        assert open_bundle(read_graph(other), "sm_90") is None


def test_a_graph_without_bundle_loads_quietly_unless_a_bundle_is_required(tmp_path, monkeypatch):
    from nbx_core.graph.bundled import open_bundle

    graph = read_graph(write(tmp_path / "plain.nbx", base_doc()))
    monkeypatch.delenv("NBX_REQUIRE_BUNDLE", raising=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert open_bundle(graph, "sm_90") is None
    monkeypatch.setenv("NBX_REQUIRE_BUNDLE", "1")
    with pytest.raises(BundleError, match="has no kernel bundle"):
        open_bundle(graph, "sm_90")


# -- the command line --------------------------------------------------------------------------------


def test_registry_check_shows_the_bundle(built, capsys):
    from nbx_core.cli import main

    assert main(["registry", "check", str(built["example"])]) == 0
    table = capsys.readouterr().out.split("kernel bundle (nbx compile)\n")[1]
    assert table.split("\n")[1].split()[:3] == [
        "sm_90",
        built["example_report"]["triton"],
        str(built["example_report"]["kernels"]),
    ]
    assert "seq=8; seq=16" in table and "MiB" in table
    assert main(["registry", "check", str(built["example"]), "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    (row,) = document["bundle"]
    assert row["kernels"] == built["example_report"]["kernels"] and row["bytes"] == built["example_report"]["bytes"]
    assert [s["dims"] for s in row["signatures"]] == [{"seq": 8}, {"seq": 16}] and row["problem"] is None
    assert main(["registry", "check", str(EXAMPLE), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["bundle"] == []


@pytest.mark.parametrize(
    "args, message",
    [
        (["--target", "sm90"], "write sm_NN"),
        (["--target", "sm_90", "--dim", "seq=8,x"], "sizes are integers"),
        (["--target", "sm_90", "--dim", "sequence=8"], "no symbolic dim named sequence"),
        (["--target", "sm_90", "--dim", "seq=65"], "seq=65 lies outside the exported range 2..64"),
    ],
)
def test_compile_refuses_bad_usage_before_compiling(args, message, capsys):
    from nbx_core.cli import main

    assert main(["compile", str(EXAMPLE), *args]) == 2
    assert message in capsys.readouterr().err
    assert not (EXAMPLE / KERNELS_DIR).exists()


def test_signatures_are_every_combination_of_the_sizes_given(tmp_path):
    doc = base_doc()
    doc["symbols"]["width"] = {"min": 1, "max": 8, "example": 4}
    doc["inputs"].append({"name": "y", "dtype": "float32", "shape": ["width", "batch"]})
    graph = read_graph(write(tmp_path / "two.nbx", doc))
    assert bundle.signatures(graph, {}) == [{"batch": 2, "width": 4}]
    assert bundle.signatures(graph, {"width": [1, 8, 1]}) == [{"batch": 2, "width": 1}, {"batch": 2, "width": 8}]
    assert bundle.signatures(graph, {"batch": [3, 5], "width": [2]}) == [
        {"batch": 3, "width": 2},
        {"batch": 5, "width": 2},
    ]
    assert bundle.signature_record(graph, {"batch": 3, "width": 2})["inputs"][1]["shape"] == [2, 3]
    doc["symbols"]["width"]["example"] = None
    graph = read_graph(write(tmp_path / "unknown.nbx", doc))
    with pytest.raises(GraphInputError, match="width has no exported example size"):
        bundle.signatures(graph, {})


def test_saving_over_a_bundled_graph_drops_its_stale_kernels(built, tmp_path):
    graph = copy_of(built["example"], tmp_path)
    save(base_doc(), base_weights(), graph)
    assert sorted(p.name for p in graph.iterdir()) == ["graph.json", "weights.safetensors"]


def test_index_checksum_covers_everything_but_itself():
    document = {"format": "nbx-kernels", "kernels": [], "checksum": "x"}
    assert checksum(document) == checksum({**document, "checksum": "y"})
    body = json.dumps({"format": "nbx-kernels", "kernels": []}, sort_keys=True, separators=(",", ":"))
    assert checksum(document) == hashlib.sha256(body.encode()).hexdigest()


# -- on the GPU -----------------------------------------------------------------------------------


_ON_GPU = """
import json, sys
import numpy as np
import nbx_core
import triton

compiles = []
triton.knobs.compilation.listener = lambda src, metadata, metadata_group, times, cache_hit: compiles.append(
    cache_hit)
program = nbx_core.load(sys.argv[1])
inputs = np.load(sys.argv[2])
outs = [program(src=inputs["src"], src_key_padding_mask=inputs["mask"]).numpy() for _ in range(3)]
np.save(sys.argv[3], np.stack(outs))
print(json.dumps({"type": type(program).__name__, "compiled": compiles.count(False)}))
"""


@pytest.mark.skipif(current() != "cuda", reason="launching bundled binaries needs the cuda backend (an NVIDIA GPU)")
def test_load_on_the_gpu_launches_the_bundle_and_matches_an_unbundled_run(built, tmp_path):
    import numpy as np

    from nbx_core.graph import load

    x = np.random.default_rng(0).standard_normal((2, 16, 32)).astype(np.float32)
    mask = np.zeros((2, 16), bool)
    mask[1, 12:] = True
    np.savez(tmp_path / "inputs.npz", src=x, mask=mask)
    env = {
        **os.environ,
        "NBX_BACKEND": "cuda",
        "NBX_REQUIRE_BUNDLE": "1",
        "NBX_CACHE_DIR": str(tmp_path / "nbx"),
        "TRITON_CACHE_DIR": str(tmp_path / "triton"),
    }
    done = subprocess.run(
        [sys.executable, "-c", _ON_GPU, str(built["example"]), str(tmp_path / "inputs.npz"), str(tmp_path / "out.npy")],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"type": "BundledProgram", "compiled": 0}
    want = load(EXAMPLE)(src=x, src_key_padding_mask=mask).numpy()
    for got in np.load(tmp_path / "out.npy"):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_the_first_run_benchmark_parses_its_arguments_without_a_gpu(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.first_run", "--out", str(tmp_path), "--models", "bert,nope"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode == 2 and "--models: unknown nope" in done.stderr
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.first_run", "--help"], capture_output=True, text=True, timeout=300, cwd=ROOT
    )
    assert done.returncode == 0 and "--models" in done.stdout
