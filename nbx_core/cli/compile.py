"""``nbx compile GRAPH --target sm_90 [--dim NAME=SIZE,SIZE ...]``: ship a graph with its kernels.

Compiles, with no GPU needed, every kernel the graph's execution plans launch for each input
signature, and stores the binaries in GRAPH/kernels/TARGET/ (docs/bundles.md). A signature is one
size for each symbolic dim: the exported size, unless --dim lists others; several --dim give every
combination. Loading the graph on a GPU of that target then launches the stored binaries instead
of compiling them; a run the bundle does not cover compiles as usual, with a warning.

The compile runs on the aot backend in a child process (this command again, with NBX_BACKEND=aot
and NBX_AOT_TARGET=TARGET), since a process chooses its backend once: the command works the same on
a machine with or without a GPU, and leaves the caller's backend alone.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from typing import Any

from ..errors import GraphInputError
from .options import UsageError, format_table, registry_options

_TARGET = re.compile(r"sm_[0-9]{2,3}")


def add_compile_parser(subparsers: Any) -> None:
    """Add the ``compile`` command (nbx_core.cli's contract: defaults set ``func`` and ``parser``)."""
    command = subparsers.add_parser("compile", parents=[registry_options()],
                                    help="build a graph's kernels for a GPU and store them in the graph",
                                    description=__doc__.split("\n\n", 1)[1].replace("``", ""),
                                    formatter_class=argparse.RawDescriptionHelpFormatter)
    command.add_argument("graph", metavar="GRAPH", help="a graph directory (name.nbx)")
    command.add_argument("--target", required=True, metavar="sm_NN", help="the GPU to compile for (sm_90: H100, H200)")
    command.add_argument("--dim", action="append", default=[], metavar="NAME=SIZE,...",
                         help="sizes of a symbolic dim to compile for (repeatable; default: the exported size)")
    command.add_argument("--format", choices=("table", "json"), default="table", help="output format")
    command.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    command.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)  # the aot child
    command.set_defaults(func=_compile, parser=command)


def _sizes(items: list[str]) -> dict[str, list[int]]:
    sizes: dict[str, list[int]] = {}
    for item in items:
        name, sep, values = item.partition("=")
        parts = values.split(",")
        if not sep or not name or not all(p.strip().isdigit() for p in parts):
            raise UsageError(f"--dim {item!r}: expected NAME=SIZE or NAME=SIZE,SIZE,... (sizes are integers)")
        sizes.setdefault(name, []).extend(int(p) for p in parts)
    return sizes


def _compile(args: argparse.Namespace) -> int:
    if not _TARGET.fullmatch(args.target):
        raise UsageError(f"--target {args.target}: write sm_NN, for example sm_90 (H100, H200)")
    sizes = _sizes(args.dim)
    from ..graph import bundle, read_graph

    graph = read_graph(args.graph)
    try:
        bundle.signatures(graph, sizes)
    except GraphInputError as exc:
        raise UsageError(str(exc)) from None
    if args.worker:
        return _work(args, sizes)
    child = [sys.executable, "-m", "nbx_core.cli", "compile", args.graph, "--target", args.target,
             "--format", args.format, "--worker"]
    child += [f"--dim={item}" for item in args.dim]
    child += [f"--disable-plugin={name}" for name in args.disable_plugin]
    child += [f"--prefer={item}" for item in args.prefer]
    child += (["--no-autoload"] if args.no_autoload else []) + ([f"--plugins={args.plugins}"] if args.plugins else [])
    child += ["--no-progress"] if args.no_progress else []
    env = dict(os.environ, NBX_BACKEND="aot", NBX_AOT_TARGET=args.target)
    return subprocess.run(child, env=env).returncode


def _work(args: argparse.Namespace, sizes: dict[str, list[int]]) -> int:
    from ..graph.compile import build

    progress = _Progress(enabled=not args.no_progress)
    try:
        built = build(args.graph, args.target, sizes, on_signature=progress.signature, on_kernel=progress.kernel)
    finally:
        progress.close()
    records = [dict(s) for s in built.signatures]
    document = {"graph": args.graph, "target": built.target, "path": str(built.path), "triton": built.triton,
                "nbx": built.nbx, "signatures": records, "kernels": len(built.kernels), "bytes": built.bytes}
    if args.format == "json":
        print(json.dumps({"schema": 1, **document}, indent=2))
        return 0
    print(f"{args.graph}: {len(built.kernels)} kernels for {built.target} ({size_text(built.bytes)}, Triton "
          f"{built.triton}) in {built.path}")
    print(format_table(("signature", "inputs"), [(signature_text(s), inputs_text(s)) for s in records]))
    return 0


def signature_text(record: dict[str, Any]) -> str:
    """A signature as ``seq=128``, or ``exported shapes`` for a graph without symbolic dims."""
    return ", ".join(f"{k}={v}" for k, v in record["dims"].items()) or "exported shapes"


def inputs_text(record: dict[str, Any]) -> str:
    return ", ".join(f"{i['name']} {i['dtype']} {i['shape']}" for i in record["inputs"])


def size_text(nbytes: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.1f} {unit}"
    return f"{nbytes} B"


class _Progress:
    """Progress on stderr: on a terminal, tqdm's bar counting kernels when tqdm is installed;
    otherwise (a log, or no tqdm) one line per signature."""

    def __init__(self, enabled: bool) -> None:
        self.bar: Any = None
        self.plain = enabled
        self.count = 0
        if enabled and sys.stderr.isatty():
            try:
                from tqdm import tqdm
            except ImportError:
                return
            self.bar = tqdm(unit=" kernels", file=sys.stderr, dynamic_ncols=True)
            self.plain = False

    def signature(self, index: int, dims: dict[str, int]) -> None:
        label = ", ".join(f"{k}={v}" for k, v in dims.items()) or "exported shapes"
        if self.bar is not None:
            self.bar.set_description_str(f"signature {index + 1} ({label})")
        elif self.plain:
            print(f"nbx compile: signature {index + 1} ({label}); {self.count} kernels so far", file=sys.stderr,
                  flush=True)

    def kernel(self, variant: Any) -> None:
        self.count += 1
        if self.bar is not None:
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
