"""The ``nbx`` command.

``nbx registry list|plugins|coverage|check`` audit the installed kernels; data goes to stdout (a
table, or JSON with ``--format json``: schemas in docs/cli.md), messages to stderr. Exit codes:
0 clean; 1 the registry has problems (duplicate names, plugins that failed to load, preferences
that choose nothing) or names are missing; 2 bad usage (a flag, a contradictory plugin selection,
an unreadable file, a backend that cannot run here).

``nbx run`` belongs to :mod:`nbx_core.cli.run`, which must define ``add_run_parser(subparsers)``:
it adds a ``run`` parser (built with ``parents=[registry_options()]`` from :mod:`nbx_core.cli.options`
to take the plugin flags) whose defaults set ``func``, a handler ``(args) -> int``, and ``parser``,
the parser itself (whose usage an unknown flag prints). Before any handler runs, ``main`` installs
the plugin selection of the flags for :func:`nbx_core.registry.get_registry`. That module is
imported only when the command is ``run``, so auditing never imports the graph runner or kernels.
``nbx compile`` (:mod:`nbx_core.cli.compile`) imports nothing heavy until it runs: its compile
happens in a child process on the aot backend.
``nbx tune`` belongs to :mod:`nbx_core.cli.tune`, which imports kernels only when it runs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .. import opnames
from ..errors import (
    BackendError,
    DuplicateKernelError,
    InvalidOpNameError,
    NbxError,
    RegistryConfigError,
    RegistryError,
    UnresolvedOpError,
)
from ..registry import (
    Entry,
    PluginInfo,
    Registry,
    RegistryConfig,
    load_registry,
    parse_preferences,
    reset_registry,
    split_names,
)
from ..version import __version__
from .compile import add_compile_parser, signature_text, size_text
from .options import UsageError, format_table, registry_options
from .tune import add_tune_parser

EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE = 0, 1, 2
JSON_SCHEMA = 1


def config_from_args(args: argparse.Namespace) -> RegistryConfig:
    """The environment's plugin selection with the command line's flags layered on top."""
    return RegistryConfig.from_env().with_overrides(
        disable=args.disable_plugin,
        autoload=False if args.no_autoload else None,
        plugins=None if args.plugins is None else split_names(args.plugins),
        prefer=parse_preferences(args.prefer, "--prefer"),
    )


# -- output ----------------------------------------------------------------------------------------


def _emit(args: argparse.Namespace, document: dict[str, Any], table: Callable[[], str]) -> None:
    if args.format == "json":
        print(json.dumps({"schema": JSON_SCHEMA, **document}, indent=2))
    else:
        print(table())


def _problems_json(problems: Sequence[RegistryError]) -> list[dict[str, str]]:
    return [{"error": type(p).__name__, "message": str(p)} for p in problems]


def _report(problems: Sequence[RegistryError]) -> None:
    for problem in problems:
        print(f"nbx: {type(problem).__name__}: {problem}", file=sys.stderr)


def _entry_json(entry: Entry) -> dict[str, Any]:
    return {
        "name": entry.name,
        "namespace": entry.namespace,
        "op": entry.op,
        "overload": entry.overload,
        "plugin": entry.plugin,
        "distribution": entry.distribution,
        "version": entry.version,
        "target": entry.target,
        "preferred": entry.preferred,
        "status": entry.status,
    }


def _note(entry: Entry) -> str:
    if entry.preferred:
        return "preferred"
    return "" if entry.status == "active" else entry.status


def _load(args: argparse.Namespace) -> Registry:
    return load_registry(args.registry_config, strict=False)


# -- nbx registry ----------------------------------------------------------------------------------


def _cmd_list(args: argparse.Namespace) -> int:
    registry = _load(args)
    plugins = {p.name: p for p in registry.plugins()}
    if args.plugin is not None and args.plugin not in plugins:
        raise UsageError(f"--plugin {args.plugin}: no such plugin; plugins: {', '.join(sorted(plugins))}")
    namespaces = sorted({e.namespace for e in registry.entries()})
    if args.namespace is not None and args.namespace not in namespaces:
        raise UsageError(
            f"--namespace {args.namespace}: no registered op is in this namespace; "
            f"namespaces: {', '.join(namespaces) or 'none'}"
        )
    entries = [
        e for e in registry.entries() if args.plugin in (None, e.plugin) and args.namespace in (None, e.namespace)
    ]
    problems = registry.problems()
    rows = [(e.name, e.plugin, _note(e), e.target) for e in entries]
    patterns = [
        (p, status)
        for p, status in registry.pattern_entries()
        if args.plugin in (None, p.provenance.plugin) and args.namespace in (None, p.pattern.name.partition("::")[0])
    ]

    def table() -> str:
        text = format_table(("op", "plugin", "note", "target"), rows)
        if patterns:
            pattern_rows = [
                (
                    p.pattern.name,
                    p.provenance.plugin,
                    "" if status == "active" else status,
                    f"{p.pattern.size()} nodes: {p.pattern.structure()}",
                )
                for p, status in patterns
            ]
            text += "\n\nfusion patterns\n" + format_table(("becomes", "plugin", "note", "matches"), pattern_rows)
        return text

    document = {
        "ops": [_entry_json(e) for e in entries],
        "patterns": [
            {
                "name": p.pattern.name,
                "plugin": p.provenance.plugin,
                "distribution": p.provenance.distribution,
                "version": p.provenance.version,
                "nodes": p.pattern.size(),
                "matches": p.pattern.structure(),
                "status": status,
            }
            for p, status in patterns
        ],
        "problems": _problems_json(problems),
    }
    _emit(args, document, table)
    if not entries:
        _explain_empty(args, plugins)
    _report(problems)
    return EXIT_PROBLEMS if problems else EXIT_OK


def _explain_empty(args: argparse.Namespace, plugins: dict[str, PluginInfo]) -> None:
    """Say on stderr why ``nbx registry list`` with these filters lists nothing."""
    info = plugins.get(args.plugin) if args.plugin is not None else None
    if info is not None and info.status != "loaded":
        why = info.reason or (type(info.error).__name__ if info.error else info.status)
        print(f"nbx: plugin {info.name!r} is {info.status}, so it registers nothing: {why}", file=sys.stderr)
    elif args.plugin is not None and args.namespace is not None:
        print(f"nbx: plugin {args.plugin!r} registers no op in namespace {args.namespace!r}", file=sys.stderr)
    elif args.plugin is not None:
        print(f"nbx: plugin {args.plugin!r} registers no op", file=sys.stderr)


def _cmd_plugins(args: argparse.Namespace) -> int:
    registry = _load(args)
    plugins = registry.plugins()
    problems = registry.problems()
    document = {
        "plugins": [
            {
                "name": p.name,
                "distribution": p.distribution,
                "version": p.version,
                "ops": p.ops,
                "status": p.status,
                "reason": p.reason,
                "error": None if p.error is None else str(p.error),
            }
            for p in plugins
        ],
        "problems": _problems_json(problems),
    }
    rows = [
        (
            p.name,
            p.distribution or "-",
            p.version or "-",
            p.ops,
            p.status,
            p.reason or (type(p.error).__name__ if p.error else ""),
        )
        for p in plugins
    ]
    headers = ("plugin", "distribution", "version", "ops", "status", "detail")
    _emit(args, document, lambda: format_table(headers, rows))
    _report(problems)
    return EXIT_PROBLEMS if problems else EXIT_OK


def _read_against(against: str) -> tuple[str, tuple[str, ...]]:
    if against in opnames.OPSETS:  # a bundled list wins over a file of the same name: write ./core
        return against, opnames.opset(against)
    if not Path(against).is_file():
        raise UsageError(f"--against {against}: neither a bundled op list ({', '.join(opnames.OPSETS)}) nor a file")
    try:
        return against, opnames.read_op_file(against)
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"--against {against}: cannot read it: {exc}") from exc


def _cmd_coverage(args: argparse.Namespace) -> int:
    label, names = _read_against(args.against)
    registry = _load(args)
    covered: list[tuple[str, Entry]] = []
    missing: list[tuple[str, str]] = []
    conflicts: list[tuple[str, str]] = []
    for name in names:
        try:
            covered.append((name, registry.resolve(name)))
        except DuplicateKernelError as exc:
            conflicts.append((name, str(exc)))
        except UnresolvedOpError as exc:
            missing.append((name, str(exc)))
    percentage = round(100.0 * len(covered) / len(names), 1) if names else 100.0
    problems = registry.problems()
    document = {
        "against": label,
        "total": len(names),
        "percentage": percentage,
        "covered": [{"name": n, "plugin": e.plugin, "target": e.target} for n, e in covered],
        "missing": [{"name": n, "reason": r} for n, r in missing],
        "conflicts": [{"name": n, "reason": r} for n, r in conflicts],
        "problems": _problems_json(problems),
    }

    def table() -> str:
        lines = [f"coverage against {label}: {len(covered)} of {len(names)} names covered ({percentage}%)"]
        for title, rows in (("missing", missing), ("conflicts", conflicts)):
            if rows:
                lines.append(f"{title} ({len(rows)}):")
                lines.extend(f"  {reason}" for _, reason in rows)
        return "\n".join(lines)

    _emit(args, document, table)
    _report(problems)
    return EXIT_PROBLEMS if problems or missing or conflicts else EXIT_OK


def _cmd_check(args: argparse.Namespace) -> int:
    try:
        from ..graph import required_ops
        from ..graph.bundle import summary as bundle_summary
    except ImportError as exc:
        raise UsageError(
            "nbx registry check cannot read graphs here: nbx_core.graph.required_ops is not available "
            f"({exc}); reinstall nbx-core"
        ) from exc
    registry = _load(args)
    counts = required_ops(args.graph)
    ops: list[dict[str, Any]] = []
    for name, count in sorted(counts.items()):
        try:
            entry = registry.resolve(name)
        except DuplicateKernelError as exc:
            ops.append({"name": name, "count": count, "status": "conflict", "reason": str(exc)})
        except UnresolvedOpError as exc:
            ops.append({"name": name, "count": count, "status": "missing", "reason": str(exc)})
        else:
            ops.append(
                {
                    "name": name,
                    "count": count,
                    "status": "resolved",
                    "plugin": entry.plugin,
                    "distribution": entry.distribution,
                    "version": entry.version,
                    "target": entry.target,
                }
            )
    problems = registry.problems()
    unresolved = [op["name"] for op in ops if op["status"] != "resolved"]
    bundles = bundle_summary(args.graph)
    document = {"graph": args.graph, "ops": ops, "unresolved": unresolved, "bundle": bundles}
    document["problems"] = _problems_json(problems)
    rows = [
        (op["name"], op["count"], op.get("plugin"), "" if "target" in op else op["status"], op.get("target"))
        for op in ops
    ]

    def table() -> str:
        text = format_table(("op", "uses", "plugin", "note", "target"), rows)
        if bundles:
            text += "\n\nkernel bundle (nbx compile)\n" + format_table(
                ("target", "triton", "kernels", "size", "signatures", "problem"),
                [
                    (
                        b["target"],
                        b.get("triton"),
                        b.get("kernels"),
                        size_text(b["bytes"]) if "bytes" in b else None,
                        "; ".join(signature_text(s) for s in b.get("signatures", ())),
                        b["problem"],
                    )
                    for b in bundles
                ],
            )
        return text

    _emit(args, document, table)
    _report(problems)
    for b in bundles:
        if b["problem"]:
            print(
                f"nbx: {args.graph}: the kernel bundle for {b['target']} cannot be used: {b['problem']}",
                file=sys.stderr,
            )
    try:
        registry.require(counts)
    except UnresolvedOpError as exc:
        print(f"nbx: {args.graph} cannot run: {exc}", file=sys.stderr)
    broken = any(b["problem"] for b in bundles)
    return EXIT_PROBLEMS if problems or unresolved or broken else EXIT_OK


# -- parser ----------------------------------------------------------------------------------------


def _add_registry_parser(subparsers: Any) -> None:
    registry = subparsers.add_parser("registry", help="audit the installed kernels and plugins")
    commands = registry.add_subparsers(dest="registry_command", required=True, metavar="COMMAND")
    output = argparse.ArgumentParser(add_help=False)
    output.add_argument("--format", choices=("table", "json"), default="table", help="output format")
    parents = [registry_options(), output]

    listing = commands.add_parser("list", parents=parents, help="every registered op and its provider")
    listing.add_argument("--plugin", metavar="NAME", help="only ops of this plugin")
    listing.add_argument("--namespace", metavar="NS", help="only ops in this namespace (e.g. aten)")
    listing.set_defaults(func=_cmd_list, parser=listing)

    plugins = commands.add_parser("plugins", parents=parents, help="every plugin and its status")
    plugins.set_defaults(func=_cmd_plugins, parser=plugins)

    coverage = commands.add_parser("coverage", parents=parents, help="which names of an op list are covered")
    coverage.add_argument(
        "--against",
        required=True,
        metavar="LIST",
        help=f"a bundled list ({', '.join(opnames.OPSETS)}) or a file, one name per line",
    )
    coverage.set_defaults(func=_cmd_coverage, parser=coverage)

    check = commands.add_parser("check", parents=parents, help="whether the registry can run a graph")
    check.add_argument("graph", metavar="GRAPH", help="a graph directory (name.nbx)")
    check.set_defaults(func=_cmd_check, parser=check)


def _add_run_parser(subparsers: Any, wanted: bool) -> None:
    """The real ``run`` parser when the command is ``run``; otherwise (or when nbx_core.cli.run is
    unavailable) a placeholder that names the command in ``nbx --help``."""
    reason = "not requested"
    if wanted:
        try:
            from .run import add_run_parser
        except ImportError as exc:
            reason = str(exc)
        else:
            add_run_parser(subparsers)
            return
    run = subparsers.add_parser("run", add_help=False, help="run an NBX graph (see nbx run --help)")
    run.add_argument("rest", nargs=argparse.REMAINDER)
    run.set_defaults(func=lambda args: _run_unavailable(reason))


def _run_unavailable(reason: str) -> int:
    raise UsageError(f"nbx run needs nbx_core.cli.run, which is not available ({reason}); reinstall nbx")


def build_parser(with_run: bool = False) -> argparse.ArgumentParser:
    """The ``nbx`` parser; ``with_run`` imports nbx_core.cli.run for the real ``run`` parser."""
    parser = argparse.ArgumentParser(prog="nbx", description="NBX: ATen graphs on Triton kernels.")
    parser.add_argument("--version", action="version", version=f"nbx-core {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_registry_parser(subparsers)
    _add_run_parser(subparsers, with_run)
    add_compile_parser(subparsers)
    add_tune_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``nbx`` with ``argv`` (default: the process's arguments); returns the exit code."""
    argv = sys.argv[1:] if argv is None else list(argv)
    command = next((a for a in argv if not a.startswith("-")), None)
    parser = build_parser(with_run=command == "run")
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # the usage of the command that was given them, not nbx's
        getattr(args, "parser", parser).error(f"unrecognized arguments: {' '.join(unknown)}")
    try:
        if hasattr(args, "prefer"):  # the command takes the plugin-selection flags
            args.registry_config = config_from_args(args)
            reset_registry(args.registry_config)
        return args.func(args)
    except (UsageError, RegistryConfigError, InvalidOpNameError, BackendError) as exc:
        print(f"nbx: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except NbxError as exc:
        print(f"nbx: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_PROBLEMS
    except BrokenPipeError:  # `nbx registry list | head`: the reader left, nothing more to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_PROBLEMS
