"""Tile sweeps on one GPU: each tunable kernel's candidate configurations against torch.

    python -m benchmarks.sweep --out DIR [--only linalg,norm,...] [--write-tables] [--margin 0.02]

A family with a tuning module (``nbx_<family>.tuning``, what ``nbx tune`` runs) is swept through it:
every case of its default shapes, the shipped configuration first (marked ``shipped``), then each
candidate, all passed to the launcher as ``config=``, each timed against the case's torch
reference. Results go to ``DIR/sweep.json``. Cases that share a lookup key (layer and RMS norm of
one row length) choose together: the configuration fastest in total. With ``--write-tables``, a
key whose choice beats the shipped configuration by more than ``--margin`` (a fraction of its
time) gets it as its entry in the plugin's table for this GPU's architecture, with
``DIR/sweep.json`` as its source: commit the table together with that file (under
``benchmarks/results/sweeps/``).
Families not yet moved onto tuning modules run their own sweeps below.
"""

from __future__ import annotations

import argparse
import importlib
import json
import operator
import sys
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

HERE = Path(__file__).parent


def _describe(config: dict[str, int]) -> str:
    return " ".join(f"{k}={v}" for k, v in config.items())


def _reference(case: Any) -> Any:
    """The torch call a case is timed against: its tensors read through DLPack."""
    name, args = case.reference
    fn = operator.attrgetter(name)(torch)
    args = [torch.from_dlpack(a) if hasattr(a, "__dlpack__") else a for a in args]
    return lambda: fn(*args)


def sweep_tunables(h, family: str) -> list[tuple[Any, Any, float]]:
    """Time every case of ``family``'s sweeps, the shipped configuration first; returns (tunable,
    choice, the shipped configuration's total ms) per lookup key (:func:`nbx_core.runtime.tuner.choose`)."""
    from nbx_core.cli.tune import sweeps_of
    from nbx_core.runtime.tuner import Timing, choose
    from nbx_core.runtime.tuning import frozen

    chosen = []
    for sweep in sweeps_of(family):
        tunable, timed, shipped_of = sweep.tunable, [], {}
        for shape in sweep.shapes:
            for dtype in sweep.dtypes:
                for case in sweep.cases(tuple(shape), dtype):
                    shipped = tunable.lookup(*case.args)
                    shipped_of[tunable.key(*case.args).text()] = frozen(shipped)
                    ref, timings = _reference(case), []
                    for config in [shipped] + [c for c in case.candidates if c != shipped]:
                        tag = "shipped" if config is shipped else _describe(config)
                        res = h.compare(f"{tunable.name} {case.label} {tag}", nbx=lambda c=config: case.run(c),  # noqa: B023
                                        torch=ref, shape=tuple(shape), dtype=dtype)
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
        data = written.get(path) or (json.loads(path.read_text()) if path.exists() else
                                     {"about": f"Tuned launch configurations for {target}.", "arch": target,
                                      "kernels": {}})
        shapes = data["kernels"].setdefault(tunable.name, {}).setdefault("shapes", {})
        shapes[choice.key.text()] = {"config": choice.config, "source": source}
        written[path] = data
    for path, data in written.items():
        path.write_text(tuning.table_text(data))
    return list(written)


def sweep_attention(h) -> None:
    from nbx_attention import flash_attention as fa
    from nbx_attention import sdpa

    base = fa._config
    cases = [(4, 32, 4096, 4096, 128, False), (4, 32, 4096, 4096, 128, True), (16, 12, 512, 512, 64, False)]
    configs = {128: [(128, 64, 8, 3), (128, 128, 8, 3), (64, 64, 4, 3), (128, 128, 8, 4), (64, 128, 4, 3)],
               64: [(128, 64, 4, 3), (64, 64, 4, 3), (128, 64, 8, 3), (64, 128, 4, 3)]}
    for B, H, L, S, D, causal in cases:
        q, k, v = h.randn((B, H, L, D)), h.randn((B, H, S, D)), h.randn((B, H, S, D))
        Q, K, V = h.nbx(q), h.nbx(k), h.nbx(v)
        flops = 4 * B * H * L * S * D // (2 if causal else 1)
        for cfg in configs[D]:
            fa._config = lambda *a, c=cfg: c
            h.compare(f"sdpa causal={causal} bm,bn,warps,stages={cfg}",
                      nbx=lambda: sdpa.scaled_dot_product_attention(Q, K, V, None, 0.0, causal),  # noqa: B023
                      torch=lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal),  # noqa: B023
                      shape=(B, H, L, S, D), dtype="bfloat16", flops=flops)
    fa._config = base
    B, H, S, D = 16, 32, 4096, 128
    q, k, v = h.randn((B, H, 1, D)), h.randn((B, H, S, D)), h.randn((B, H, S, D))
    Q, K, V = h.nbx(q), h.nbx(k), h.nbx(v)
    for cfg in [(16, 64, 4, 4), (16, 64, 4, 5), (16, 64, 4, 6), (16, 32, 4, 8), (16, 64, 8, 4)]:
        fa._config = lambda *a, c=cfg: c
        h.compare(f"sdpa decode bm,bn,warps,stages={cfg} programs/SM={fa.PROGRAMS_PER_SM}",
                  nbx=lambda: sdpa.scaled_dot_product_attention(Q, K, V, None, 0.0, False),
                  torch=lambda: F.scaled_dot_product_attention(q, k, v), shape=(B, H, 1, S, D),
                  dtype="bfloat16", bytes=(B * H * D * 2 + 2 * B * H * S * D) * 2)
    fa._config = base


def _attention_ab(h, knob: str, cases: list[tuple[int, int, int, int, int, bool]]) -> None:
    """The flash kernel at its shipped tiles with the choice function ``knob`` of flash_attention
    answering True and then False, on (B, H, L, S, D, causal) ``cases``."""
    from nbx_attention import flash_attention as fa
    from nbx_attention import sdpa

    base = getattr(fa, knob)
    try:
        for B, H, L, S, D, causal in cases:
            q, k, v = h.randn((B, H, L, D)), h.randn((B, H, S, D)), h.randn((B, H, S, D))
            Q, K, V = h.nbx(q), h.nbx(k), h.nbx(v)
            cost = dict(flops=4 * B * H * L * S * D // (2 if causal else 1)) if L > 1 else \
                dict(bytes=(B * H * L * D * 2 + 2 * B * H * S * D) * 2)
            for on in (True, False):
                setattr(fa, knob, lambda *a, f=on: f)
                h.compare(f"sdpa causal={causal} {knob.strip('_')}={on}",
                          nbx=lambda: sdpa.scaled_dot_product_attention(Q, K, V, None, 0.0, causal),  # noqa: B023
                          torch=lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal),  # noqa: B023
                          shape=(B, H, L, S, D), dtype="bfloat16", **cost)
    finally:
        setattr(fa, knob, base)


def sweep_attention_fold(h) -> None:
    """The flash kernel with its scale folded into the softmax and not."""
    _attention_ab(h, "_fold_scale", [(4, 32, 4096, 4096, 128, False), (4, 32, 4096, 4096, 128, True),
                                     (16, 12, 512, 512, 64, False), (1, 32, 16384, 16384, 128, True)])


def sweep_attention_order(h) -> None:
    """The causal flash kernel with each head's query tiles launched last row first and not."""
    _attention_ab(h, "_heavy_first", [(4, 32, 4096, 4096, 128, True), (1, 32, 16384, 16384, 128, True),
                                      (16, 12, 512, 512, 64, True)])


def main(argv: list[str] | None = None) -> int:
    from benchmarks.harness import Harness

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--only", default="linalg,norm,core,attention,conv,reduction,index,spectral")
    p.add_argument("--write-tables", action="store_true", help="enter the winners in the plugins' tables")
    p.add_argument("--margin", type=float, default=0.02, help="how much faster a winner must be (default 0.02)")
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    h = Harness(reps=30)
    chosen = []
    for name in args.only.split(","):
        print(f"== sweep {name}", flush=True)
        builtin = {"attention": sweep_attention, "attention-fold": sweep_attention_fold,
                   "attention-order": sweep_attention_order}
        if name in builtin:
            builtin[name](h)
        elif name in ("conv", "index", "reduction", "spectral"):
            importlib.import_module(f"benchmarks.bench_{name}").sweep(h)
        else:
            chosen += sweep_tunables(h, name)
    results = args.out / "sweep.json"
    results.write_text(json.dumps({"gpu": torch.cuda.get_device_name(), "results": h.results,
                                   "errors": h.errors}, indent=1) + "\n")
    if args.write_tables:
        for path in write_tables(chosen, results, args.margin):
            print(f"wrote {path}", flush=True)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parent))
    sys.exit(main())
