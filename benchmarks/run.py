"""Run the GPU benchmarks and write ``results/<family>.json`` plus the table in README.md.

    python -m benchmarks.run --out DIR [--families elementwise,norm] [--quick]

Each ``benchmarks/bench_<family>.py`` defines ``run(h)`` taking a :class:`benchmarks.harness.Harness`.
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import json
import platform
import subprocess
import sys
import traceback
from pathlib import Path

HERE = Path(__file__).parent
FAMILIES = ["core", "elementwise", "linalg", "reduction", "norm", "index", "conv", "attention", "spectral"]


def _environment() -> dict[str, str]:
    import torch
    import triton

    try:
        driver = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=20,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        driver = "unknown"
    return {
        "gpu": torch.cuda.get_device_name(),
        "driver": driver,
        "torch": torch.__version__,
        "triton": triton.__version__,
        "python": platform.python_version(),
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
    }


def main(argv: list[str] | None = None) -> int:
    from benchmarks.harness import Harness

    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--out", type=Path, default=HERE / "results")
    p.add_argument("--families", default=",".join(FAMILIES))
    p.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    env = _environment()
    h = Harness(quick=args.quick)
    env["ceilings"] = h.measure_ceilings()
    print(f"ceilings: {env['ceilings']}", flush=True)
    failed = 0
    for fam in args.families.split(","):
        try:
            mod = importlib.import_module(f"benchmarks.bench_{fam}")
        except ModuleNotFoundError as e:
            print(f"{fam}: no benchmark ({e})", flush=True)
            continue
        print(f"== {fam}", flush=True)
        h.results, h.errors = [], []
        try:
            mod.run(h)
        except Exception:
            failed += 1
            h.errors.append({"name": fam, "error": traceback.format_exc()})
            print(traceback.format_exc(), flush=True)
        out = {"family": fam, "environment": env, "results": h.results, "errors": h.errors}
        (args.out / f"{fam}.json").write_text(json.dumps(out, indent=1) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parent))
    sys.exit(main())
