"""``nbx tune --family NAME [--kernel K] [--shapes 8192x4096,...] [--dtype bfloat16] [--reps N]``.

Times the candidate launch configurations of a plugin's tunable kernels on this GPU and keeps, for
each lookup key, the fastest over the key's cases in the user cache (``$NBX_CACHE_DIR/tuning/<family>.json``, default
``~/.cache/nbx``), which every later lookup reads before the plugin's tables. The plugin's sweeps
come from the ``tuning`` module beside its plugin module (``nbx_norm.tuning``). Needs the cuda
backend.
"""

from __future__ import annotations

import argparse
import importlib
from typing import Any

from .options import UsageError, format_table


def add_tune_parser(subparsers: Any) -> None:
    """Add the ``tune`` command (defaults set ``func`` and ``parser``)."""
    tune = subparsers.add_parser(
        "tune",
        help="tune a plugin's kernels for this GPU",
        description=__doc__.split("\n\n", 1)[1].replace("``", ""),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    tune.add_argument("--family", required=True, metavar="NAME", help="the plugin to tune (norm, linalg, core ...)")
    tune.add_argument("--kernel", metavar="K", help="only this tunable kernel of the plugin")
    tune.add_argument("--shapes", metavar="AxB,...", help="shapes to tune (default: the sweep's own)")
    tune.add_argument("--dtype", metavar="DTYPE", help="dtype of the inputs (default: the sweep's, bfloat16)")
    tune.add_argument("--reps", type=int, default=20, metavar="N", help="timed runs per candidate (default 20)")
    tune.set_defaults(func=_tune, parser=tune)


def sweeps_of(family: str) -> list[Any]:
    """The SWEEPS of ``family``'s tuning module, found beside the plugin module its entry point names."""
    from ..registry.loader import discover_plugins

    found = discover_plugins().get(family)
    if not found:
        raise UsageError(f"--family {family!r}: no installed plugin of that name (see nbx registry plugins)")
    package = found[0].entry_point.value.split(":")[0].rpartition(".")[0]
    try:
        module = importlib.import_module(f"{package}.tuning")
    except ModuleNotFoundError as exc:
        if exc.name != f"{package}.tuning":
            raise
        raise UsageError(f"--family {family!r}: the plugin has no tuning module ({package}.tuning)") from exc
    return list(module.SWEEPS)


def selected_sweeps(family: str, kernel: str | None = None, shapes: str | None = None) -> tuple[list[Any], Any]:
    """The sweeps of ``family`` (of its tunable ``kernel`` only, when given) and the shapes parsed
    from ``shapes`` (None: each sweep's own); shapes need a single kernel, since each kernel reads
    them its own way."""
    from ..runtime.tuner import parse_shapes

    sweeps = sweeps_of(family)
    if kernel:
        sweeps = [s for s in sweeps if s.tunable.name == kernel]
        if not sweeps:
            raise UsageError(
                f"--kernel {kernel!r}: {family} tunes {', '.join(s.tunable.name for s in sweeps_of(family))}"
            )
    if shapes and len(sweeps) > 1:
        raise UsageError(
            f"--shapes: {family} tunes several kernels, whose shapes mean different things; "
            f"name one with --kernel ({', '.join(s.tunable.name for s in sweeps)})"
        )
    return sweeps, parse_shapes(shapes) if shapes else None


def _tune(args: argparse.Namespace) -> int:
    from ..runtime.tuner import require_gpu, tune

    require_gpu(f"nbx tune --family {args.family}")
    sweeps, shapes = selected_sweeps(args.family, args.kernel, args.shapes)
    if args.reps < 1:
        raise UsageError(f"--reps {args.reps}: must be at least 1")
    rows = []
    for sweep in sweeps:
        for choice in tune(sweep, shapes, args.dtype, args.reps):
            config = ", ".join(f"{k}={v}" for k, v in choice.config.items())
            cases = "; ".join(c.label for c in choice.cases)
            rows.append([sweep.tunable.name, choice.key.text(), f"{choice.seconds * 1e3:.4f}", config, cases])
    print(format_table(["kernel", "key", "ms", "config", "cases"], rows))
    from ..runtime.tuning import cache_path

    print(f"written to {cache_path(args.family)}")
    return 0
