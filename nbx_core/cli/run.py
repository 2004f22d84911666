"""``nbx run GRAPH [--input name=file.npy ...] [--output out.npz] [--device cpu|cuda]``.

Inputs not given are generated, deterministically (``--seed``): floating inputs from a standard
normal, integer inputs uniform in [0, --int-high), bool inputs all False (an all-masked row would
make attention undefined). Symbolic dims take the size the graph was exported with unless
``--dim name=size`` says otherwise. Reading .npy/.npz never unpickles. The summary goes to stdout:
the backend and device, the inputs and how each was made, each output's dtype, shape, min, max,
mean and NaN count (of the magnitude, for complex outputs), and the times, start-up included.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from .. import backend
from .. import dtypes as D
from ..errors import GraphInputError
from ..graph.format import Graph, TensorSpec
from .options import UsageError, format_table, registry_options

_BACKENDS = {"cpu": "cpu (Triton's interpreter)", "cuda": "cuda", "aot": "aot (compiles kernels, computes nothing)"}
_IMPORTED = time.perf_counter()


def add_run_parser(subparsers: Any) -> None:
    """Add the ``run`` command (nbx_core.cli's contract: defaults set ``func`` and ``parser``)."""
    run = subparsers.add_parser("run", parents=[registry_options()], help="run an NBX graph",
                                description=__doc__.split("\n\n", 1)[1].replace("``", ""),
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    run.add_argument("graph", metavar="GRAPH", help="a graph directory (name.nbx)")
    run.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy",
                     help="an input from a .npy file (repeatable); inputs not given are generated")
    run.add_argument("--output", metavar="OUT.npz", help="write the outputs to this .npz file")
    run.add_argument("--device", default=None, help="cpu or cuda[:N] (default: the backend's device)")
    run.add_argument("--dim", action="append", default=[], metavar="NAME=SIZE",
                     help="size of a symbolic dim for generated inputs (default: the exported size)")
    run.add_argument("--seed", type=int, default=0, help="seed of generated inputs (default 0)")
    run.add_argument("--int-high", type=int, default=2, help="generated integer inputs lie in [0, N) (default 2)")
    run.add_argument("--plan", action="store_true",
                     help="print the execution plan: launches, fused kernels, fusion patterns, arena size")
    run.add_argument("--no-fusion", action="store_true", help="run without fusion patterns and fused kernels")
    run.add_argument("--no-plan", action="store_true", help="run node by node, without an execution plan")
    run.add_argument("--no-cuda-graphs", action="store_true", help="replay the plan without CUDA graphs (cuda)")
    run.set_defaults(func=_run, parser=run)


def _pairs(items: list[str], flag: str) -> dict[str, str]:
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name or not value:
            raise UsageError(f"{flag} {item!r}: expected NAME=VALUE")
        out[name] = value
    return out


def _read_npy(name: str, file: str) -> np.ndarray:
    try:
        return np.load(file, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise UsageError(f"--input {name}={file}: cannot read it as a .npy array: {exc}") from exc


def generate(spec: TensorSpec, graph: Graph, dims: dict[str, int], rng: np.random.Generator,
             int_high: int) -> tuple[np.ndarray, str]:
    """A deterministic input for ``spec`` and a word on how it was made."""
    for expr in spec.shape:
        for name in getattr(expr, "symbols", ()):
            if name not in dims:
                example = graph.symbols[name].example
                if example is None:
                    raise GraphInputError(f"{graph.file}: input {spec.name!r} has symbolic dim {name} with no "
                                          f"exported size: pass --dim {name}=SIZE or --input {spec.name}=FILE.npy")
                dims[name] = example
    shape = tuple(d if isinstance(d, int) else d(dims) for d in spec.shape)
    dtype = D.from_name(spec.dtype)
    if dtype.is_floating_point or dtype.is_complex:
        return rng.standard_normal(shape).astype(dtype.np), "generated, normal(0, 1)"
    if dtype is D.bool_:
        return np.zeros(shape, np.bool_), "generated, all False"
    return rng.integers(0, int_high, shape).astype(dtype.np), f"generated, integers in [0, {int_high})"


def _show(shape: tuple[int, ...]) -> str:
    return "[" + ", ".join(map(str, shape)) + "]"


def statistics(array: np.ndarray) -> tuple[str, str, str, str]:
    """min, max, mean and NaN count of an output as ``nbx run`` prints them ('' where one does not
    apply: an empty array, the NaN count of a non-float); complex values by their magnitude."""
    if array.size == 0:
        return "", "", "", ""
    if array.dtype.kind == "c":
        array = np.abs(array)
    if array.dtype.kind in "biu":
        return str(array.min()), str(array.max()), f"{array.mean(dtype=np.float64):.4g}", ""
    values = array.astype(np.float64)
    nans = int(np.isnan(values).sum())
    if nans == values.size:
        return "nan", "nan", "nan", str(nans)
    numbers = values[~np.isnan(values)]
    return f"{numbers.min():.4g}", f"{numbers.max():.4g}", f"{numbers.mean():.4g}", str(nans)


def _since_start() -> float:
    """Seconds since this process started (Linux's /proc), else since this module was imported."""
    try:
        stat = Path("/proc/self/stat").read_text()
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        started = int(stat.rsplit(")", 1)[1].split()[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return time.perf_counter() - _IMPORTED
    return max(uptime - started, 0.0)


def describe_plan(about: dict[str, Any]) -> str:
    """The plan of a run as ``nbx run --plan`` prints it (from :meth:`Program.describe`)."""
    lines = [f"plan: {about['nodes']} nodes"]
    patterns = about.get("patterns") or {}
    if patterns:
        lines[0] += ", fusion patterns " + ", ".join(f"{name} x{n}" for name, n in patterns.items())
    if about.get("folded_batch_norms"):
        lines[0] += f", {about['folded_batch_norms']} batch norms folded into convolutions"
    if about.get("channels_last_convolutions"):
        lines[0] += f", {about['channels_last_convolutions']} convolutions on channels-last inputs"
    if about.get("merged_linears"):
        lines[0] += f", {about['merged_linears']} linear layers merged into the product of a sibling"
    if about.get("dropped_copies"):
        lines[0] += f", {about['dropped_copies']} copies only attention read dropped"
    if not about.get("planned"):
        lines.append(f"  not planned: {about['reason']}; the program runs node by node")
        return "\n".join(lines)
    fused = about.get("fused") or {}
    lines.append(f"  {about['launches']} launches, {about['zero_fills']} zero fills; fused: "
                 f"{fused.get('elementwise_kernels', 0)} elementwise kernels and {fused.get('epilogues', 0)} "
                 f"epilogues in place of {fused.get('launches_removed', 0)} launches"
                 + (f"; {about['hoisted_launches']} launches of shape-only values ran once, their results kept "
                    f"({about['hoisted_bytes'] / 2**20:.2f} MiB)" if about.get("hoisted_launches") else ""))
    hosted = about.get("temporaries_in_outputs", 0)
    graph = "yes" if about["cuda_graph"] else "no"
    if about.get("cuda_graph_bytes"):
        graph += f", its block {about['cuda_graph_bytes'] / 2**20:.2f} MiB"
    lines.append(f"  arena {about['arena_bytes'] / 2**20:.2f} MiB for {about['temporaries'] - hosted} temporaries"
                 + (f", {hosted} more in the outputs' bytes" if hosted else "")
                 + f"; CUDA graph: {graph}"
                 + (f" ({about['cuda_graph_reason']})" if about.get("cuda_graph_reason") else ""))
    lines.append("  kernels: " + ", ".join(f"{name} x{n}" for name, n in about["kernels"].items()))
    return "\n".join(lines)


def _run(args: argparse.Namespace) -> int:
    from ..graph import load

    started = time.perf_counter()
    prog = load(args.graph, device=args.device, planning=not args.no_plan, fusion=not args.no_fusion,
                cuda_graphs=False if args.no_cuda_graphs else None)
    loaded = time.perf_counter()
    given = _pairs(args.input, "--input")
    names = {s.name for s in prog.inputs}
    unknown = sorted(set(given) - names)
    if unknown:
        raise UsageError(f"--input {unknown[0]}: the graph has no such input; inputs: {', '.join(sorted(names))}")
    dims = {}
    for name, size in _pairs(args.dim, "--dim").items():
        if name not in prog.graph.symbols or not size.isdigit():
            raise UsageError(f"--dim {name}={size}: expected one of the graph's symbols "
                             f"({', '.join(prog.graph.symbols) or 'none'}) and a size")
        dims[name] = int(size)
    rng = np.random.default_rng(args.seed)
    inputs, notes = {}, {}
    for spec in prog.inputs:
        if spec.name in given:
            inputs[spec.name], notes[spec.name] = _read_npy(spec.name, given[spec.name]), f"from {given[spec.name]}"
        else:
            inputs[spec.name], note = generate(spec, prog.graph, dims, rng, args.int_high)
            notes[spec.name] = f"{note}, seed {args.seed}"
    results = prog.run(inputs)
    ran = time.perf_counter()
    arrays = {}
    for name, value in results.items():
        array = value.numpy()
        # npz stores numpy's own dtypes only: bfloat16 and float8 are widened to float32.
        arrays[name] = array.astype(np.float32) if array.dtype.kind == "V" or value.dtype.is_float8 \
            or value.dtype is D.bfloat16 else np.ascontiguousarray(array)
    print(f"{args.graph}: {len(prog.graph.nodes)} nodes, backend {_BACKENDS[backend.current()]}, "
          f"device {prog.device}")
    print()
    print(format_table(("input", "dtype", "shape", "source"),
                 [(s.name, s.dtype, _show(inputs[s.name].shape), notes[s.name]) for s in prog.inputs]))
    print()
    print(format_table(("output", "dtype", "shape", "min", "max", "mean", "NaN"),
                 [(name, value.dtype, _show(value.shape), *statistics(arrays[name]))
                  for name, value in results.items()]))
    print()
    if args.plan:
        print(describe_plan(prog.describe(**inputs)))
        print()
    total = _since_start()
    print(f"time: {total:.2f} s in all: start-up {max(total - (ran - started), 0.0):.2f} s, "
          f"load + resolve {loaded - started:.2f} s, run {ran - loaded:.2f} s")
    if args.output:
        np.savez(Path(args.output), allow_pickle=False, **arrays)
        print(f"wrote {args.output}")
    else:
        print("outputs not saved: --output OUT.npz writes them")
    return 0
