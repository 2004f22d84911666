"""Where a model's GPU time goes: the kernels of one NBX run and one torch eager run, by total time.

::

    python -m benchmarks.profile_models --models gpt2,vit [--top 15] [--ways nbx,torch,compile]

Builds each model as :mod:`benchmarks.models` does, warms NBX (plan, CUDA graph off), torch eager
and ``torch.compile`` (default mode, with ``compile`` in ``--ways``) up, then profiles one call of
each with torch.profiler (CUPTI sees NBX's Triton kernels too) and prints the kernels that took the
most device time.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path


def _top(prof, n: int) -> list[tuple[str, float, int]]:
    totals: dict[str, list[float]] = {}
    for e in prof.events():
        if e.device_type.name == "CUDA":
            entry = totals.setdefault(e.name[:90], [0.0, 0])
            entry[0] += e.device_time_total if hasattr(e, "device_time_total") else e.cuda_time_total
            entry[1] += 1
    rows = sorted(((k, v[0] / 1e3, v[1]) for k, v in totals.items()), key=lambda r: -r[1])
    return rows[:n]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", required=True)
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--ways", default="nbx,torch", help="of nbx, torch, compile")
    args = parser.parse_args(argv)
    import torch
    from torch.profiler import ProfilerActivity, profile

    import nbx_core

    from .models import CASES, _export

    for key in args.models.split(","):
        name, kwargs = CASES[key]
        with tempfile.TemporaryDirectory() as tmp:
            module, inputs, path = _export(name, kwargs, Path(tmp))
            prog = nbx_core.load(path, cuda_graphs=False)
            ways = args.ways.split(",")
            calls = {"nbx": prog, "torch": module}
            calls = {way: torch.compile(module) if way == "compile" else calls[way] for way in ways}
            with torch.inference_mode():
                for _ in range(3):
                    for fn in calls.values():
                        fn(**inputs)
                torch.cuda.synchronize()
                for who, fn in calls.items():
                    with profile(activities=[ProfilerActivity.CUDA]) as prof:
                        fn(**inputs)
                        torch.cuda.synchronize()
                    rows = _top(prof, args.top)
                    total = sum(r[1] for r in _top(prof, 10**6))
                    print(f"== {key} {who}: {total:.3f} ms of kernels")
                    for kernel, ms, count in rows:
                        print(f"  {ms:8.3f} ms  {count:4d}x  {kernel}")
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
