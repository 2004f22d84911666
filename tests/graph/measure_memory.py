"""Run one program N times and report resident memory and live NBXTensors (is memory flat?).

    python3 tests/graph/measure_memory.py [GRAPH] [--runs 100] [--device cpu]

Uses the installed plugins. RSS is read from /proc/self/statm (current, not peak); live tensors
are counted with gc. The result ("flat" or not) is the last line; exit code 1 if not flat.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
from pathlib import Path

import numpy as np

from nbx_core import NBXTensor
from nbx_core.cli.run import generate
from nbx_core.graph import load


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def live_tensors() -> int:
    gc.collect()
    return sum(isinstance(o, NBXTensor) for o in gc.get_objects())


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("graph", nargs="?", default=str(Path(__file__).parents[2] / "examples" / "encoder_block.nbx"))
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--device", default=None)
    args = parser.parse_args()
    prog = load(args.graph, device=args.device)
    rng = np.random.default_rng(0)
    inputs = {s.name: generate(s, prog.graph, {}, rng, 2)[0] for s in prog.inputs}
    for _ in range(3):  # warm-up: kernel imports, launch caches
        prog.run(inputs)
    base_rss, base_live = rss_mib(), live_tensors()
    samples = []
    for i in range(1, args.runs + 1):
        out = prog.run(inputs)
        del out
        if i % 25 == 0:
            samples.append((i, rss_mib(), live_tensors()))
    print(f"{args.graph}: {len(prog.graph.nodes)} nodes, {args.runs} runs after 3 warm-up runs")
    print(f"  before: RSS {base_rss:.1f} MiB, live NBXTensors {base_live}")
    for i, rss, live in samples:
        print(
            f"  after {i:4d}: RSS {rss:.1f} MiB ({rss - base_rss:+.1f}), live NBXTensors {live} ({live - base_live:+d})"
        )
    growth = samples[-1][1] - samples[0][1]
    flat = samples[-1][2] == base_live and growth < 2.0
    print(f"{'flat' if flat else 'NOT flat'}: RSS growth from run 25 to {args.runs}: {growth:+.2f} MiB")
    return 0 if flat else 1


if __name__ == "__main__":
    sys.exit(main())
