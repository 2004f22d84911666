"""Write the results table of benchmarks/README.md from benchmarks/results/*.json.

    python -m benchmarks.table
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).parent
BEGIN, END = "<!-- results:begin -->", "<!-- results:end -->"


def table() -> str:
    lines = []
    for path in sorted((HERE / "results").glob("*.json")):
        doc = json.loads(path.read_text())
        env = doc["environment"]
        lines.append(f"\n### {doc['family']}\n")
        lines.append(f"{env['gpu']}, driver {env['driver']}, torch {env['torch']}, triton {env['triton']}, "
                     f"{env['date']}; ceilings: copy {env['ceilings']['copy_GBps']} GB/s, "
                     f"bf16 mm {env['ceilings']['bf16_mm_TFLOPs']} TFLOP/s\n")
        lines.append("| op | shape | dtype | NBX ms | torch ms | ratio (torch/NBX) | NBX GB/s or TFLOP/s "
                     "| of ceiling | one call: NBX ms | one call: torch ms | one call: ratio |")
        lines.append("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        for r in doc["results"]:
            if "nbx_ms" not in r:
                extra = ", ".join(f"{k} {v}" for k, v in r.items() if k != "op")
                lines.append(f"| {r['op']} | {extra} | | | | | | | | | |")
                continue
            rate = r.get("nbx_GBps", r.get("nbx_TFLOPs", ""))
            lines.append(f"| {r['op']} | {r['shape']} | {r['dtype']} | {r['nbx_ms']} | {r['torch_ms']} | "
                         f"{r['ratio']} | {rate} | {r.get('ceiling_fraction', '')} | {r.get('nbx_sync_ms', '')} | "
                         f"{r.get('torch_sync_ms', '')} | {r.get('ratio_sync', '')} |")
        for e in doc.get("errors", []):
            lines.append(f"| {e['name']} | failed: {e['error'][:80]} | | | | | | | | | |")
    return "\n".join(lines)


def main() -> None:
    readme = HERE / "README.md"
    text = readme.read_text()
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    readme.write_text(f"{head}{BEGIN}\n{table()}\n{END}{tail}")


if __name__ == "__main__":
    main()
