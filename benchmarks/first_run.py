"""First run of a model on the GPU without and with its kernel bundle (``nbx compile``, issue 34).

::

    python -m benchmarks.first_run --out DIR [--models bert,gpt2]

Each model of :data:`benchmarks.models.CASES` is built at its real size (random weights, bfloat16),
exported, and compiled into a bundle for this GPU's target by ``nbx compile`` (the aot backend, in
its own process, timed). Then each way below runs in a fresh process that times loading the graph
and its first call to the output on the host (``first_s``), then the median of later calls
(``later_ms``). Every way starts with an empty NBX cache (fused kernels are generated again):

- ``cold``: no bundle and an empty Triton cache: Triton compiles every kernel;
- ``warm``: no bundle, Triton's cache as ``cold`` left it: nothing compiles, kernels load from it;
- ``bundled``: the bundle, an empty Triton cache and ``NBX_REQUIRE_BUNDLE=1`` (a kernel missing
  from the bundle is an error, not a compile);
- ``bundled_ro``: the same with a read-only Triton cache that holds only the host modules Triton
  builds with the C compiler (its driver's ``cuda_utils``; on Triton 3.6 also a launcher stub per
  kernel signature), copied from ``warm``'s cache: no kernel binary, and no room to write one.

Proof that nothing compiled: every way counts the Triton compiles (``triton.knobs.compilation.listener``
with ``cache_hit`` false) and the kernel binaries (``*.cubin``) and host modules (``*.so``) written to
its Triton cache directory; ``bundled_ro`` could not have written any. Results: ``DIR/first_run.json``
and a table on stdout; the goal is a bundled first run at most twice the warm one.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
WAYS = ("cold", "warm", "bundled", "bundled_ro")
LATER_CALLS = 5


def child(path: str, inputs_file: str) -> dict[str, Any]:
    """In a fresh process: load ``path``, call it on the inputs of ``inputs_file`` (a torch.save of
    CPU tensors), and count what Triton compiled."""
    import torch

    inputs = {k: v.cuda() for k, v in torch.load(inputs_file).items()}
    torch.cuda.synchronize()
    import triton

    import nbx_core
    from nbx_core.memory import cuda

    events: list[bool] = []
    triton.knobs.compilation.listener = lambda src, metadata, metadata_group, times, cache_hit: events.append(cache_hit)
    start = time.perf_counter()
    program = nbx_core.load(path)
    loaded = time.perf_counter()
    program(**inputs)
    cuda.synchronize()
    first = time.perf_counter()
    later = []
    for _ in range(LATER_CALLS):
        t = time.perf_counter()
        program(**inputs)
        cuda.synchronize()
        later.append(time.perf_counter() - t)
    return {
        "first_s": round(first - start, 3),
        "load_s": round(loaded - start, 3),
        "first_call_s": round(first - loaded, 3),
        "later_ms": round(statistics.median(later) * 1e3, 3),
        "triton_compiles": events.count(False),
        "triton_cache_hits": events.count(True),
        "bundled": type(program).__name__ == "BundledProgram",
    }


def _run_child(path: Path, inputs_file: Path, env: dict[str, str], triton_cache: Path) -> dict[str, Any]:
    code = (
        "import json; from benchmarks.first_run import child; "
        f"print('RESULT', json.dumps(child({str(path)!r}, {str(inputs_file)!r})))"
    )
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=1800, cwd=ROOT)
    row: dict[str, Any] = {}
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            row = json.loads(line[len("RESULT ") :])
    if not row:
        tail = done.stderr.strip().splitlines()
        row = {"failed": tail[-1] if tail else f"exit {done.returncode}"}
    return row


def _host_modules(cache: Path, folder: Path) -> Path:
    """A new Triton cache holding the entries of ``cache`` that are host modules (C extensions), not
    kernels."""
    out = Path(tempfile.mkdtemp(dir=folder))
    for entry in cache.iterdir():
        files = list(entry.iterdir()) if entry.is_dir() else []
        if any(f.suffix == ".so" for f in files) and not any(f.suffix == ".cubin" for f in files):
            shutil.copytree(entry, out / entry.name)
    return out


def _read_only(folder: Path, read_only: bool) -> None:
    for path in [folder, *folder.rglob("*")]:
        if path.is_dir():
            path.chmod(0o555 if read_only else 0o755)


def _plain_copy(graph: Path, folder: Path) -> Path:
    """The graph without its bundle (its files linked, not copied)."""
    plain = folder / f"{graph.stem}_plain.nbx"
    plain.mkdir()
    for name in ("graph.json", "weights.safetensors"):
        (plain / name).symlink_to(graph / name)
    return plain


def bench_model(key: str, folder: Path, target: str) -> dict[str, Any]:
    import torch

    from benchmarks.models import CASES, _export

    name, kwargs = CASES[key]
    module, inputs, graph = _export(name, kwargs, folder)
    inputs_file = folder / f"{key}-inputs.pt"
    torch.save({k: v.cpu() for k, v in inputs.items()}, inputs_file)
    del module
    torch.cuda.empty_cache()
    row: dict[str, Any] = {"model": key, "target": target}

    started = time.perf_counter()
    env = dict(os.environ, NBX_CACHE_DIR=tempfile.mkdtemp(dir=folder), TRITON_CACHE_DIR=tempfile.mkdtemp(dir=folder))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "nbx_core.cli",
            "compile",
            str(graph),
            "--target",
            target,
            "--format",
            "json",
            "--no-progress",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=3600,
        cwd=ROOT,
    )
    if done.returncode != 0:
        return {**row, "failed": f"nbx compile: {done.stderr.strip()[-2000:]}"}
    report = json.loads(done.stdout)
    row["compile"] = {
        "seconds": round(time.perf_counter() - started, 1),
        "kernels": report["kernels"],
        "bytes": report["bytes"],
        "triton": report["triton"],
    }

    plain = _plain_copy(graph, folder)
    cold_cache = Path(tempfile.mkdtemp(dir=folder))
    for way in WAYS:
        if way in ("cold", "warm"):
            triton_cache = cold_cache
        elif way == "bundled_ro":
            triton_cache = _host_modules(cold_cache, folder)
        else:
            triton_cache = Path(tempfile.mkdtemp(dir=folder))
        env = {k: v for k, v in os.environ.items() if k != "NBX_REQUIRE_BUNDLE"}
        env.update(NBX_BACKEND="cuda", NBX_CACHE_DIR=tempfile.mkdtemp(dir=folder), TRITON_CACHE_DIR=str(triton_cache))
        if way.startswith("bundled"):
            env["NBX_REQUIRE_BUNDLE"] = "1"
        if way == "bundled_ro":
            _read_only(triton_cache, True)
        before = set(triton_cache.rglob("*"))
        result = _run_child(graph if way.startswith("bundled") else plain, inputs_file, env, triton_cache)
        after = [p for p in triton_cache.rglob("*") if p not in before]  # warm and bundled_ro start filled
        result["cubins_written"] = sum(p.suffix == ".cubin" for p in after)
        result["host_modules_written"] = sum(p.suffix == ".so" for p in after)
        _read_only(triton_cache, False)
        row[way] = result
        print(f"  {key} {way}: {json.dumps(result)}", flush=True)
    if "first_s" in row.get("bundled", {}) and "first_s" in row.get("warm", {}):
        row["bundled_vs_warm"] = round(row["bundled"]["first_s"] / row["warm"]["first_s"], 2)
    return row


def _table(rows: list[dict[str, Any]]) -> str:
    lines = ["model    way          first_s  load_s  first_call_s  later_ms  compiles  cubins  host .so"]
    for r in rows:
        if "failed" in r:
            lines.append(f"{r['model']:<8} failed: {r['failed']}")
            continue
        c = r["compile"]
        lines.append(
            f"{r['model']:<8} nbx compile  {c['seconds']} s for {c['kernels']} kernels, "
            f"{c['bytes'] / 2**20:.1f} MiB (Triton {c['triton']})"
        )
        for way in WAYS:
            w = r[way]
            if "failed" in w:
                lines.append(f"{'':<8} {way:<12} failed: {w['failed']}")
                continue
            lines.append(
                f"{'':<8} {way:<12} {w['first_s']:<8} {w['load_s']:<7} {w['first_call_s']:<13} "
                f"{w['later_ms']:<9} {w['triton_compiles']:<9} {w['cubins_written']:<7} "
                f"{w['host_modules_written']}"
            )
        lines.append(f"{'':<8} bundled first run / warm first run: {r.get('bundled_vs_warm')}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from benchmarks.models import CASES

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for first_run.json")
    parser.add_argument("--models", default="bert,gpt2", help=f"comma-separated, of {', '.join(CASES)}")
    parser.add_argument("--target", default=None, help="the bundle's target (default: this GPU's, e.g. sm_90)")
    args = parser.parse_args(argv)
    keys = args.models.split(",")
    unknown = [k for k in keys if k not in CASES]
    if unknown:
        parser.error(f"--models: unknown {', '.join(unknown)}; known: {', '.join(CASES)}")
    import torch

    if not torch.cuda.is_available():
        parser.error("needs a CUDA GPU (the bundled and unbundled first runs launch on it)")
    major, minor = torch.cuda.get_device_capability()
    target = args.target or f"sm_{major}{minor}"
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    folder = Path(tempfile.mkdtemp(prefix="nbx-first-run-"))
    try:
        for key in keys:
            print(f"== {key}", flush=True)
            rows.append(bench_model(key, folder, target))
            (args.out / "first_run.json").write_text(json.dumps(rows, indent=1) + "\n")
    finally:
        _read_only(folder, False)
        shutil.rmtree(folder, ignore_errors=True)
    print(_table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
