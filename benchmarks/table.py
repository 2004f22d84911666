"""The result tables of benchmarks/README.md, from benchmarks/results/.

    python -m benchmarks.table                  # rewrite both tables in README.md
    python -m benchmarks.table --print models   # print one as Markdown: models or ops

The whole-model table comes from ``results/models.json`` (``python -m benchmarks.models``), the
single-op tables from ``results/<family>.json`` (``python -m benchmarks.run``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
RESULTS = HERE / "results"
MODELS = "models.json"
SECTIONS = {
    "models": ("<!-- models:begin -->", "<!-- models:end -->"),
    "ops": ("<!-- results:begin -->", "<!-- results:end -->"),
}


def _cell(value: Any) -> str:
    return "—" if value is None or value == "" else str(value)


def models_table(results: Path = RESULTS) -> str:
    """Markdown: one row a model, times in ms (median of single calls from an idle GPU), speed as
    torch eager's time over the way's, and the chart when ``models.png`` is beside the JSON."""
    path = results / MODELS
    if not path.exists():
        return (
            "No whole-model results yet: run `python -m benchmarks.models --out DIR` on a GPU and "
            "copy `models.json` and `models.png` into `benchmarks/results/`."
        )
    doc = json.loads(path.read_text())
    lines = [
        f"{doc['gpu']}, torch {doc['torch']}, triton {doc['triton']}, {doc['date']}; times in ms, speed = "
        "torch eager time / this time (above 1: faster than eager).",
        "",
        "| model | nodes | torch eager | torch.compile | compile, reduce-overhead | NBX | NBX CUDA graph "
        "| speed: NBX | speed: NBX CUDA graph | speed: torch.compile | NBX CUDA graph / torch.compile "
        "| NBX CUDA graph / reduce-overhead | NBX first run (s) | peak MB: torch / NBX / NBX CUDA graph "
        "| error vs eager | error vs float32: torch / NBX |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in doc["results"]:
        if "failed" in r:
            lines.append(f"| {r['model']} | failed: {str(r['failed'])[:80]} |" + " |" * 14)
            continue
        speed = {
            way: round(r["torch_ms"] / r[f"{way}_ms"], 3) if r.get(f"{way}_ms") and r.get("torch_ms") else None
            for way in ("nbx", "nbx_graph", "compile")
        }
        graph_ms = r.get("nbx_graph_ms")
        versus = {
            base: round(r[f"{base}_ms"] / graph_ms, 3) if r.get(f"{base}_ms") and graph_ms else None
            for base in ("compile", "compile_ro")
        }
        error = max(r.get("error", 0.0), r.get("error_graph", 0.0))
        fp32 = [r.get(k) for k in ("torch_error_fp32", "nbx_error_fp32", "nbx_graph_error_fp32")]
        reference = (
            f"{fp32[0]:.1e} / {max(e for e in fp32[1:] if e is not None):.1e}"
            if fp32[0] is not None and any(e is not None for e in fp32[1:])
            else None
        )
        cells = [
            r["model"],
            r.get("nodes"),
            r.get("torch_ms"),
            r.get("compile_ms"),
            r.get("compile_ro_ms"),
            r.get("nbx_ms"),
            r.get("nbx_graph_ms"),
            speed["nbx"],
            speed["nbx_graph"],
            speed["compile"],
            versus["compile"],
            versus["compile_ro"],
            r.get("first_run_s"),
            f"{_cell(r.get('torch_peak_mb'))} / {_cell(r.get('nbx_peak_mb'))} / {_cell(r.get('nbx_graph_peak_mb'))}",
            f"{error:.1e}" + ("" if r.get("ok", True) else " (over tolerance)"),
            reference,
        ]
        lines.append("| " + " | ".join(map(_cell, cells)) + " |")
    if (results / "models.png").exists():
        lines += ["", "![speed relative to torch eager](results/models.png)"]
    return "\n".join(lines)


def ops_table(results: Path = RESULTS) -> str:
    """Markdown: a table per family's ``<family>.json``."""
    lines = []
    for path in sorted(results.glob("*.json")):
        if path.name == MODELS:
            continue
        doc = json.loads(path.read_text())
        env = doc["environment"]
        lines.append(f"\n### {doc['family']}\n")
        lines.append(
            f"{env['gpu']}, driver {env['driver']}, torch {env['torch']}, triton {env['triton']}, "
            f"{env['date']}; ceilings: copy {env['ceilings']['copy_GBps']} GB/s, "
            f"bf16 mm {env['ceilings']['bf16_mm_TFLOPs']} TFLOP/s\n"
        )
        lines.append(
            "| op | shape | dtype | NBX ms | torch ms | ratio (torch/NBX) | NBX GB/s or TFLOP/s "
            "| of ceiling | one call: NBX ms | one call: torch ms | one call: ratio |"
        )
        lines.append("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        for r in doc["results"]:
            if "nbx_ms" not in r:
                extra = ", ".join(f"{k} {v}" for k, v in r.items() if k != "op")
                lines.append(f"| {r['op']} | {extra} | | | | | | | | | |")
                continue
            rate = r.get("nbx_GBps", r.get("nbx_TFLOPs", ""))
            lines.append(
                f"| {r['op']} | {r['shape']} | {r['dtype']} | {r['nbx_ms']} | {r['torch_ms']} | "
                f"{r['ratio']} | {rate} | {r.get('ceiling_fraction', '')} | {r.get('nbx_sync_ms', '')} | "
                f"{r.get('torch_sync_ms', '')} | {r.get('ratio_sync', '')} |"
            )
        for e in doc.get("errors", []):
            lines.append(f"| {e['name']} | failed: {e['error'][:80]} | | | | | | | | | |")
    return "\n".join(lines)


def render(readme: str, results: Path = RESULTS) -> str:
    """``readme`` with each marked section replaced by its table."""
    for name, make in (("models", models_table), ("ops", ops_table)):
        begin, end = SECTIONS[name]
        head, rest = readme.split(begin, 1)
        _, tail = rest.split(end, 1)
        readme = f"{head}{begin}\n{make(results)}\n{end}{tail}"
    return readme


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--print", dest="table", choices=sorted(SECTIONS), help="print this table instead")
    args = parser.parse_args(argv)
    if args.table:
        print({"models": models_table, "ops": ops_table}[args.table]())
        return 0
    readme = HERE / "README.md"
    readme.write_text(render(readme.read_text()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
