"""Tile sweeps on one GPU: each tunable kernel's candidate configurations against torch.

    python -m benchmarks.sweep --out DIR [--only linalg,norm,...] [--write-tables] [--margin 0.02]
    python -m benchmarks.sweep --out DIR --only linalg --kernel gemm --shapes 6304x2304x768,... [--write-tables]

A family with a tuning module (``nbx_<family>.tuning``, what ``nbx tune`` runs) is swept through it:
every case of its default shapes (or, for one family and one ``--kernel``, of ``--shapes``, written
as ``nbx tune`` takes them), the shipped configuration first (marked ``shipped``: the launch
as users get it, through the lookup), then each candidate, passed to the launcher as ``config=``,
each timed against the case's torch reference. Results go to ``DIR/sweep.json``. Cases that share
a lookup key (layer and RMS norm of one row length) choose together: the configuration fastest in
total. With ``--write-tables``, a key whose choice beats the shipped configuration by more than
``--margin`` (a fraction of its time) gets it as its entry in the plugin's table for this GPU's
architecture, with ``DIR/sweep.json`` as its source: commit the table together with that file
(under ``benchmarks/results/sweeps/``).
"""

from __future__ import annotations

import argparse
import json
import operator
import sys
from pathlib import Path
from typing import Any

import torch

HERE = Path(__file__).parent


def _describe(config: dict[str, int]) -> str:
    return " ".join(f"{k}={v}" for k, v in config.items())


def _torch(a: Any) -> Any:
    return torch.from_dlpack(a) if hasattr(a, "__dlpack__") else [_torch(b) for b in a] if isinstance(a, list) else a


def _reference(case: Any) -> Any:
    """The torch call a case is timed against: its tensors (also inside a list argument, lstm_cell's
    hx) read through DLPack."""
    name, args = case.reference
    fn = operator.attrgetter(name)(torch)
    args = [_torch(a) for a in args]
    return lambda: fn(*args)


def sweep_tunables(
    h, family: str, kernel: str | None = None, shapes: str | None = None
) -> list[tuple[Any, Any, float]]:
    """Time every case of ``family``'s sweeps (``kernel``'s only, at ``shapes``, when given), the
    shipped configuration first; returns (tunable, choice, the shipped configuration's total ms) per
    lookup key (:func:`nbx_core.runtime.tuner.choose`)."""
    from nbx_core.cli.tune import selected_sweeps
    from nbx_core.runtime.tuner import Timing, choose
    from nbx_core.runtime.tuning import frozen

    chosen = []
    sweeps, given = selected_sweeps(family, kernel, shapes)
    for sweep in sweeps:
        tunable, timed, shipped_of = sweep.tunable, [], {}
        for shape in given or sweep.shapes:
            for dtype in sweep.dtypes:
                for case in sweep.cases(tuple(shape), dtype):
                    shipped = tunable.lookup(*case.args)
                    shipped_of[tunable.key(*case.args).text()] = frozen(shipped)
                    ref, timings = _reference(case), []
                    for config in [shipped] + [c for c in case.candidates if c != shipped]:
                        tag = "shipped" if config is shipped else _describe(config)
                        # The shipped configuration runs as users run it: through the lookup.
                        run = None if config is shipped else config
                        res = h.compare(
                            f"{tunable.name} {case.label} {tag}",
                            nbx=lambda c=run: case.run(c),  # noqa: B023
                            torch=ref,
                            shape=tuple(shape),
                            dtype=dtype,
                        )
                        timings.append(Timing(config, res["nbx_ms"] / 1e3) if res else Timing(config, error="failed"))
                    timed.append((case, timings))
        for choice in choose(tunable, timed):
            chosen.append((tunable, choice, choice.totals.get(shipped_of[choice.key.text()], float("inf")) * 1e3))
    return chosen


def write_tables(chosen: list[tuple[Any, Any, float]], results: Path, margin: float) -> list[Path]:
    """Enter each key's chosen configuration, where it beats the shipped one by more than ``margin``
    (a fraction of the shipped time), into its plugin's table for this GPU's architecture, with
    ``results`` (the sweep's results file) as its source."""
    from nbx_core.runtime import tuning

    target, root = tuning.arch(), HERE.parent.resolve()
    source = str(results.resolve().relative_to(root)) if results.resolve().is_relative_to(root) else str(results)
    written: dict[Path, dict] = {}
    for tunable, choice, shipped_ms in chosen:
        if choice.seconds * 1e3 >= shipped_ms * (1 - margin):
            continue
        found = [p for p in sorted(tunable.tables.glob("*.json")) if json.loads(p.read_text()).get("arch") == target]
        path = found[0] if found else tunable.tables / f"{target}.json"
        data = written.get(path) or (
            json.loads(path.read_text())
            if path.exists()
            else {"about": f"Tuned launch configurations for {target}.", "arch": target, "kernels": {}}
        )
        shapes = data["kernels"].setdefault(tunable.name, {}).setdefault("shapes", {})
        shapes[choice.key.text()] = {"config": choice.config, "source": source}
        written[path] = data
    for path, data in written.items():
        path.write_text(tuning.table_text(data))
    return list(written)


def main(argv: list[str] | None = None) -> int:
    from benchmarks.harness import Harness

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--only", default="linalg,norm,core,attention,conv,reduction,index,spectral")
    p.add_argument("--write-tables", action="store_true", help="enter the winners in the plugins' tables")
    p.add_argument("--margin", type=float, default=0.02, help="how much faster a winner must be (default 0.02)")
    p.add_argument("--kernel", help="only this tunable kernel (one family in --only)")
    p.add_argument("--shapes", help="shapes to sweep instead of the kernel's own, as nbx tune takes them")
    args = p.parse_args(argv)
    if (args.kernel or args.shapes) and "," in args.only:
        p.error("--kernel and --shapes name one family's kernel: give one family in --only")
    args.out.mkdir(parents=True, exist_ok=True)
    h = Harness(reps=30)
    chosen = []
    for name in args.only.split(","):
        print(f"== sweep {name}", flush=True)
        chosen += sweep_tunables(h, name, args.kernel, args.shapes)
    results = args.out / "sweep.json"
    results.write_text(
        json.dumps({"gpu": torch.cuda.get_device_name(), "results": h.results, "errors": h.errors}, indent=1) + "\n"
    )
    if args.write_tables:
        for path in write_tables(chosen, results, args.margin):
            print(f"wrote {path}", flush=True)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parent))
    sys.exit(main())
