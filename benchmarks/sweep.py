"""Tile sweeps on one GPU: each tunable kernel's candidate configurations against torch.

    python -m benchmarks.sweep --out DIR [--only linalg,norm,...] [--write-tables] [--margin 0.02]

A family with a tuning module (``nbx_<family>.tuning``, what ``nbx tune`` runs) is swept through it:
every case of its default shapes, the shipped configuration first (marked ``shipped``), then each
candidate, all passed to the launcher as ``config=``, each timed against the case's torch
reference. Results go to ``DIR/sweep.json``. With ``--write-tables``, a case whose fastest
candidate beats the shipped configuration by more than ``--margin`` (a fraction of its time) gets
that candidate as its entry in the plugin's table for this GPU's architecture, with ``DIR/sweep.json``
as its source: commit the table together with that file (under ``benchmarks/results/sweeps/``).
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


def sweep_tunables(h, family: str) -> list[tuple[Any, Any, dict[str, int], float, float]]:
    """Time every case of ``family``'s sweeps; returns (tunable, case, fastest configuration, its ms,
    the shipped configuration's ms) per case."""
    from nbx_core.cli.tune import sweeps_of

    won = []
    for sweep in sweeps_of(family):
        tunable = sweep.tunable
        for shape in sweep.shapes:
            for case in sweep.cases(tuple(shape), sweep.dtype):
                shipped = tunable.lookup(*case.args)
                ref = _reference(case)
                times = {}
                for config in [shipped] + [c for c in case.candidates if c != shipped]:
                    tag = "shipped" if config is shipped else _describe(config)
                    res = h.compare(f"{tunable.name} {case.label} {tag}", nbx=lambda c=config: case.run(c),  # noqa: B023
                                    torch=ref, shape=tuple(shape), dtype=sweep.dtype)
                    if res is not None:
                        times[_describe(config)] = (config, res["nbx_ms"])
                if times:
                    config, ms = min(times.values(), key=lambda t: t[1])
                    base = times.get(_describe(shipped), (shipped, float("inf")))[1]
                    won.append((tunable, case, config, ms, base))
    return won


def write_tables(won: list, results: Path, margin: float) -> list[Path]:
    """Enter each case's fastest configuration, where it beats the shipped one by more than
    ``margin``, into its plugin's table for this GPU's architecture, sourced to ``results``."""
    from nbx_core.runtime import tuning

    target = tuning.arch()
    source = str(results.resolve().relative_to(HERE.parent.resolve())) if results.resolve().is_relative_to(
        HERE.parent.resolve()) else str(results)
    written = {}
    for tunable, case, config, ms, base in won:
        if ms >= base * (1 - margin):
            continue
        found = [p for p in sorted(tunable.tables.glob("*.json")) if json.loads(p.read_text()).get("arch") == target]
        path = found[0] if found else tunable.tables / f"{target}.json"
        data = written.get(path) or (json.loads(path.read_text()) if path.exists() else
                                     {"about": f"Tuned launch configurations for {target}.", "arch": target,
                                      "kernels": {}})
        shapes = data["kernels"].setdefault(tunable.name, {}).setdefault("shapes", {})
        shapes[tunable.key(*case.args).text()] = {"config": config, "source": source}
        written[path] = data
    for path, data in written.items():
        path.write_text(tuning.table_text(data))
    return list(written)


def _pointwise_dtype(h, ops: dict, dtype: str) -> None:
    """The issue's 2^28-element ops in one dtype at each (bytes per thread, warps) candidate."""
    import nbx_core.runtime.pointwise as P

    n = 1 << 28
    a, b, c = h.randn((n,), dtype), h.randn((n,), dtype), h.randn((n,), "bool")
    A, B, C = h.nbx(a), h.nbx(b), h.nbx(c)
    size = a.element_size()
    cases = [("add", lambda: ops["add"](A, B), lambda: torch.add(a, b), 3 * n * size),
             ("mul", lambda: ops["mul"](A, B), lambda: torch.mul(a, b), 3 * n * size),
             ("where", lambda: ops["where"](C, A, B), lambda: torch.where(c, a, b), 3 * n * size + n),
             ("gelu", lambda: ops["gelu"](A), lambda: F.gelu(a), 2 * n * size),
             ("silu", lambda: ops["silu"](A), lambda: F.silu(a), 2 * n * size),
             ("sigmoid", lambda: ops["sigmoid"](A), lambda: torch.sigmoid(a), 2 * n * size)]
    for nbytes, warps in [(4, 4), (8, 4), (8, 8), (16, 2), (16, 4), (16, 8), (32, 4), (64, 2)]:
        P.GPU_THREAD_BYTES, P.GPU_WARPS = nbytes, warps
        P._plans._plans.clear()
        for name, nbx, ref, io in cases:
            h.compare(f"{name} thread_bytes={nbytes} warps={warps}", nbx=nbx, torch=ref, shape=(n,), dtype=dtype,
                      bytes=io)


def sweep_pointwise(h) -> None:
    import nbx_core.runtime.pointwise as P
    from nbx_core.registry import get_registry

    reg = get_registry()
    ops = {name: reg.lookup(f"aten::{name}") for name in ("add", "mul", "where", "gelu", "silu", "sigmoid")}
    base = P.GPU_THREAD_BYTES, P.GPU_WARPS
    try:
        for dtype in ("bfloat16", "float32"):
            _pointwise_dtype(h, ops, dtype)
    finally:
        P.GPU_THREAD_BYTES, P.GPU_WARPS = base
        P._plans._plans.clear()


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
    won = []
    for name in args.only.split(","):
        print(f"== sweep {name}", flush=True)
        builtin = {"pointwise": sweep_pointwise,
                   "attention": sweep_attention, "attention-fold": sweep_attention_fold,
                   "attention-order": sweep_attention_order}
        if name in builtin:
            builtin[name](h)
        elif name in ("conv", "index", "reduction", "spectral"):
            importlib.import_module(f"benchmarks.bench_{name}").sweep(h)
        else:
            won += sweep_tunables(h, name)
    results = args.out / "sweep.json"
    results.write_text(json.dumps({"gpu": torch.cuda.get_device_name(), "results": h.results,
                                   "errors": h.errors}, indent=1) + "\n")
    if args.write_tables:
        for path in write_tables(won, results, args.margin):
            print(f"wrote {path}", flush=True)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parent))
    sys.exit(main())
