"""Whole-model inference: NBX against torch eager and torch.compile, in one process, on one GPU.

::

    python -m benchmarks.models --out DIR [--models bert,gpt2_b1] [--reps 30]

Each model of :data:`CASES` is built at its real size from :mod:`nbx_core.testing.zoo` (random
weights, bfloat16, on the GPU), exported with ``torch.export`` and loaded into NBX, then timed
as medians of single forward calls from an idle GPU (host time included, as a lone request
sees it), the ways taking turns within each round:

- ``torch``: torch eager under ``inference_mode``;
- ``compile``, ``compile_ro``: ``torch.compile`` in its default mode and ``mode="reduce-overhead"``;
- ``nbx``: the NBX Program planned, without CUDA graphs (``cuda_graphs=False``);
- ``nbx_graph``: the Program replayed as a CUDA graph (the default for static shapes).

It also records NBX's first run in a fresh process with empty Triton and NBX caches, peak device
memory (torch's allocator for torch, the CUDA pool's high-water mark for NBX), and the outputs'
relative error against torch eager and against the model run in float32 (a row whose error passes
neither test of :func:`accurate` is marked failed).
Results: ``DIR/models.json`` and the chart ``DIR/models.png`` (speed relative to torch eager).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

CASES: dict[str, tuple[str, dict[str, int]]] = {
    "bert": ("bert", {}),  # BERT-base, batch 8, sequence 512, padding mask
    "gpt2": ("gpt2", {}),  # GPT-2 small, batch 8, sequence 512
    "gpt2_b1": ("gpt2", {"batch": 1, "dim": 16}),  # batch 1, sequence 16: bound by host time
    "llama": ("llama", {}),  # Llama-style 1B (GQA), batch 1, sequence 2048
    "vit": ("vit", {}),  # ViT-B/16, batch 32
    "resnet": ("resnet", {}),  # ResNet-50, batch 32
    "whisper": ("whisper_encoder", {}),  # Whisper-base encoder
}
TOLERANCE = 3e-2
"""Largest relative error (Frobenius norm, against torch eager) a bfloat16 model may show, unless
it is no less accurate than torch eager itself (:func:`accurate`)."""

MARGIN = 1.1
"""How much larger than torch eager's own error against a float32 run NBX's may be (:func:`accurate`)."""

WAYS = ("torch", "compile", "compile_ro", "nbx", "nbx_graph")


def _median_ms(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1e3, 4)


def _flat(value: Any) -> list[Any]:
    if isinstance(value, tuple | list):
        return [x for v in value for x in _flat(v)]
    return [value]


def _rel_error(got: Any, want: Any) -> float:
    import torch

    errs = []
    for g, w in zip(_flat(got), _flat(want), strict=True):
        g = torch.from_dlpack(g) if not isinstance(g, torch.Tensor) else g
        g, w = g.double().cpu(), w.double().cpu()
        errs.append(float((g - w).norm() / w.norm().clamp_min(1e-30)))
    return max(errs)


def accurate(row: dict[str, Any]) -> bool:
    """Whether a row's outputs pass: within :data:`TOLERANCE` of torch eager's, or, against the same
    model run in float32, no more than :data:`MARGIN` times torch eager's own error (two bfloat16
    runs that round at different points differ by about both their errors)."""
    worst = max(row["error"], row["error_graph"])
    if worst <= TOLERANCE:
        return True
    ref = row.get("torch_error_fp32")
    return ref is not None and max(row["nbx_error_fp32"], row["nbx_graph_error_fp32"]) <= MARGIN * ref


def _float32_outputs(module: Any, inputs: dict[str, Any]) -> Any:
    """The model's outputs computed in float32 (its weights and floating inputs widened), on the host
    copy of the outputs so that its memory is free before NBX is measured."""
    import copy

    import torch

    wide = copy.deepcopy(module).float()
    args = {k: v.float() if v.is_floating_point() else v for k, v in inputs.items()}
    # IEEE float32 throughout: cuDNN's convolutions would otherwise take TF32 (10-bit mantissas).
    matmul_tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        with torch.inference_mode(), torch.backends.cudnn.flags(enabled=True, allow_tf32=False):
            out = [t.float().cpu() for t in _flat(wide(**args))]
    finally:
        torch.backends.cuda.matmul.allow_tf32 = matmul_tf32
    del wide
    torch.cuda.empty_cache()
    return out


def _replay(prog: Any, inputs: dict[str, Any], before: int) -> tuple[Any, float]:
    """One call of ``prog`` and the peak device memory (MB) it reached above ``before`` bytes."""
    import torch

    from nbx_core.memory import cuda

    cuda.reset_peak()
    got = prog(**inputs)
    torch.cuda.synchronize()
    return got, round((cuda.memory_in_use()[1] - before) / 2**20, 1)


def _pool_high() -> int:
    """Bytes the CUDA driver's default pool (NBX's memory) has had in use at most, since the last reset."""
    from nbx_core.memory import cuda

    driver = cuda._driver()
    dev = cuda.check(driver.cuDeviceGet(0), "cuDeviceGet")
    pool = cuda.check(driver.cuDeviceGetDefaultMemPool(dev), "cuDeviceGetDefaultMemPool")
    value = cuda.check(
        driver.cuMemPoolGetAttribute(pool, driver.CUmemPool_attribute.CU_MEMPOOL_ATTR_USED_MEM_HIGH),
        "cuMemPoolGetAttribute",
    )
    return int(value)


def _pool_reset() -> None:
    from nbx_core.memory import cuda

    cuda.empty_cache()
    driver = cuda._driver()
    dev = cuda.check(driver.cuDeviceGet(0), "cuDeviceGet")
    pool = cuda.check(driver.cuDeviceGetDefaultMemPool(dev), "cuDeviceGetDefaultMemPool")
    cuda.check(
        driver.cuMemPoolSetAttribute(
            pool, driver.CUmemPool_attribute.CU_MEMPOOL_ATTR_USED_MEM_HIGH, driver.cuuint64_t(0)
        ),
        "cuMemPoolSetAttribute",
    )


def _export(name: str, kwargs: dict[str, int], folder: Path) -> tuple[Any, dict[str, Any], Path]:
    import torch

    from nbx_core.graph.export import export
    from nbx_core.testing import zoo

    module, inputs, _ = zoo.build(name, "real", torch.bfloat16, **kwargs)
    module = module.cuda()
    inputs = {k: v.cuda() for k, v in inputs.items()}
    with torch.no_grad():
        program = torch.export.export(module, (), inputs)
    path = folder / f"{name}.nbx"
    export(program, path)
    return module, inputs, path


def first_run(path: str, inputs_file: str) -> float:
    """Seconds from loading the graph to its first output on the GPU (run in a fresh process)."""
    import torch

    import nbx_core

    inputs = torch.load(inputs_file)
    start = time.perf_counter()
    prog = nbx_core.load(path)
    out = prog(**{k: v.cuda() for k, v in inputs.items()})
    from nbx_core.memory import cuda

    cuda.synchronize()
    _flat(out)
    return time.perf_counter() - start


def _first_run_fresh(path: Path, inputs: dict[str, Any], folder: Path) -> float | str:
    import torch

    inputs_file = folder / "inputs.pt"
    torch.save({k: v.cpu() for k, v in inputs.items()}, inputs_file)
    env = dict(os.environ, TRITON_CACHE_DIR=tempfile.mkdtemp(dir=folder), NBX_CACHE_DIR=tempfile.mkdtemp(dir=folder))
    code = f"from benchmarks.models import first_run; print('FIRST', first_run({str(path)!r}, {str(inputs_file)!r}))"
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        cwd=Path(__file__).resolve().parent.parent,
    )
    for line in done.stdout.splitlines():
        if line.startswith("FIRST "):
            return round(float(line.split()[1]), 3)
    return f"failed: {done.stderr.strip().splitlines()[-1] if done.stderr.strip() else done.returncode}"


def bench_case(key: str, reps: int, folder: Path, ways: tuple[str, ...] = WAYS, first: bool = True) -> dict[str, Any]:
    import torch

    import nbx_core

    name, kwargs = CASES[key]
    row: dict[str, Any] = {"model": key, "zoo": name, **kwargs}
    module, inputs, path = _export(name, kwargs, folder)
    row["nodes"] = len(json.loads((path / "graph.json").read_text())["nodes"])
    if first:
        row["first_run_s"] = _first_run_fresh(path, inputs, folder)

    gc.collect()
    torch.cuda.empty_cache()
    with torch.inference_mode():
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        want = module(**inputs)
        torch.cuda.synchronize()
        row["torch_peak_mb"] = round((torch.cuda.max_memory_allocated()) / 2**20, 1)
        row["torch_activation_peak_mb"] = round((torch.cuda.max_memory_allocated() - base) / 2**20, 1)
    ref = _float32_outputs(module, inputs)
    row["torch_error_fp32"] = _rel_error(want, ref)

    from nbx_core.memory import cuda as nbx_cuda

    gc.collect()  # the programs of the models before, held by reference cycles, free their memory now
    _pool_reset()
    nbx_cuda.reset_peak()
    before = nbx_cuda.memory_in_use()[0]
    plain = nbx_core.load(path, cuda_graphs=False)
    got = plain(**inputs)  # the first run: node by node, recorded
    torch.cuda.synchronize()
    row["nbx_first_peak_mb"] = round((nbx_cuda.memory_in_use()[1] - before) / 2**20, 1)
    row["nbx_pool_high_mb"] = round(_pool_high() / 2**20, 1)
    del got
    got, row["nbx_peak_mb"] = _replay(plain, inputs, before)  # a replay of the plan
    row["error"], row["nbx_error_fp32"] = _rel_error(got, want), _rel_error(got, ref)
    before_graph = nbx_cuda.memory_in_use()[0]
    graph = nbx_core.load(path)
    graph(**inputs)  # recorded, then captured as a CUDA graph
    torch.cuda.synchronize()
    got_graph, row["nbx_graph_peak_mb"] = _replay(graph, inputs, before_graph)  # a replay of the graph
    row["error_graph"], row["nbx_graph_error_fp32"] = _rel_error(got_graph, want), _rel_error(got_graph, ref)
    row["plan"] = {k: v for k, v in plain.describe(**inputs).items() if k != "kernels"}

    makers: dict[str, Callable[[], Callable[[], Any]]] = {
        "torch": lambda: lambda: module(**inputs),
        "compile": lambda: _bound(torch.compile(module), inputs),
        "compile_ro": lambda: _bound(torch.compile(module, mode="reduce-overhead"), inputs),
        "nbx": lambda: lambda: plain(**inputs),
        "nbx_graph": lambda: lambda: graph(**inputs),
    }
    calls = {way: makers[way]() for way in ways}
    times: dict[str, list[float]] = {w: [] for w in calls}
    with torch.inference_mode():
        for way, fn in calls.items():  # compile, capture, plan, warm caches
            start = time.perf_counter()
            for _ in range(3):
                fn()
            torch.cuda.synchronize()
            row[f"{way}_warmup_s"] = round(time.perf_counter() - start, 2)
        for _ in range(reps):
            for way, fn in calls.items():
                torch.cuda.synchronize()
                start = time.perf_counter()
                fn()
                torch.cuda.synchronize()
                times[way].append(time.perf_counter() - start)
    for way in calls:
        row[f"{way}_ms"] = _median_ms(times[way])
    for way, base in (
        ("nbx", "torch"),
        ("nbx_graph", "torch"),
        ("nbx_graph", "compile"),
        ("nbx_graph", "compile_ro"),
        ("nbx", "compile"),
    ):
        if f"{way}_ms" in row and f"{base}_ms" in row:
            row[f"{way}_vs_{base}"] = round(row[f"{base}_ms"] / row[f"{way}_ms"], 3)
    row["ok"] = accurate(row)
    return row


def _bound(fn: Callable[..., Any], inputs: dict[str, Any]) -> Callable[[], Any]:
    return lambda: fn(**inputs)


def chart(rows: list[dict[str, Any]], out: Path) -> None:
    """Bars of each model's speed relative to torch eager (higher is faster)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in rows if "torch_ms" in r]
    labels = [r["model"] for r in rows]
    shown = [
        ("nbx", "NBX"),
        ("nbx_graph", "NBX CUDA graph"),
        ("compile", "torch.compile"),
        ("compile_ro", "torch.compile reduce-overhead"),
    ]
    shown = [(way, title) for way, title in shown if all(f"{way}_ms" in r for r in rows)]
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(rows)), 4))
    width = 0.8 / len(shown)
    for i, (way, title) in enumerate(shown):
        ax.bar(
            [x + i * width for x in range(len(rows))],
            [r["torch_ms"] / r[f"{way}_ms"] for r in rows],
            width,
            label=title,
        )
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks([x + 0.4 - width / 2 for x in range(len(rows))], labels)
    ax.set_ylabel("speed relative to torch eager")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=120)


def _merged(rows: list[dict[str, Any]], earlier: Path | None) -> list[dict[str, Any]]:
    """``rows`` with the rows of ``earlier`` (a models.json from the same GPU) for the models this run
    did not time, in CASES order: one table from runs split across machine sessions."""
    if earlier is None:
        return rows
    import torch

    doc = json.loads(earlier.read_text())
    if doc["gpu"] != torch.cuda.get_device_name():
        raise SystemExit(f"--merge {earlier}: timed on {doc['gpu']}, this GPU is {torch.cuda.get_device_name()}")
    by_model = {r["model"]: r for r in doc["results"]} | {r["model"]: r for r in rows}
    return [by_model[k] for k in CASES if k in by_model]


def _write(out: Path, rows: list[dict[str, Any]]) -> None:
    import torch
    import triton

    doc = {
        "gpu": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "date": time.strftime("%Y-%m-%d"),
        "results": rows,
    }
    (out / "models.json").write_text(json.dumps(doc, indent=1) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--models", default=",".join(CASES))
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--ways", default=",".join(WAYS), help=f"which of {', '.join(WAYS)} to time")
    parser.add_argument("--no-first-run", action="store_true", help="skip the cold-cache first run")
    parser.add_argument(
        "--merge",
        type=Path,
        metavar="JSON",
        help="an earlier models.json of this GPU whose other models join this run's table",
    )
    args = parser.parse_args(argv)
    ways = tuple(w for w in WAYS if w in args.ways.split(","))
    import torch

    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for key in args.models.split(","):
            print(f"== {key}", flush=True)
            try:
                row = bench_case(key, args.reps, Path(tmp), ways, not args.no_first_run)
            except Exception as exc:  # one model's failure must not lose the others' numbers
                row = {"model": key, "failed": f"{type(exc).__name__}: {exc}"}
                traceback.print_exc()
            rows.append(row)
            print(json.dumps(row), flush=True)
            _write(args.out, _merged(rows, args.merge))  # after each model: a cut run keeps what it measured
            torch.cuda.empty_cache()
    rows = _merged(rows, args.merge)
    chart(rows, args.out / "models.png")
    for r in rows:
        shown = {k: v for k, v in r.items() if k.endswith("_ms") or k.endswith("_vs_torch") or k == "error"}
        print(r["model"], r.get("failed") or shown)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
