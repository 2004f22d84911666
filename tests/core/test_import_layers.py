"""nbx_core's imports point one way: no cycle, no import of a higher layer, no deprecated path.

Every import statement counts: at module level, inside functions and under ``TYPE_CHECKING`` (a
type-only import is still an edge; where a hint needs no import, write none). The layers are those
of docs/architecture.md; a module a layer below may be imported, one above may not.
"""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from nbx_core.deprecated import MOVED, new_path

ROOT = Path(__file__).resolve().parents[2]

LAYERS = [
    (
        "foundation",
        [
            "nbx_core.errors",
            "nbx_core.device",
            "nbx_core.dtypes",
            "nbx_core.shape",
            "nbx_core.opnames",
            "nbx_core.version",
            "nbx_core.deprecated",
        ],
    ),
    ("memory, backend, registry", ["nbx_core.memory", "nbx_core.backend", "nbx_core.registry"]),
    ("tensor", ["nbx_core.tensor", "nbx_core.tensor.args"]),
    ("runtime", ["nbx_core.runtime", "nbx_core.runtime.traits", "nbx_core.runtime.kernels.index_range"]),
    ("ops", ["nbx_core.ops"]),
    ("graph", ["nbx_core.graph"]),
    ("cli", ["nbx_core.cli"]),
    ("api", ["nbx_core", "nbx_core.api", "nbx_core.testing"]),
]
"""Bottom to top. An entry covers the module of that name and every module below it, unless a
longer entry covers that module; ``nbx_core`` alone is the package module."""

# Directories outside nbx_core whose imports must not name a deprecated path either.
USERS = ["plugins", "tests", "benchmarks", "scripts", "examples"]


def layer_of(module: str) -> int | None:
    """The layer index of ``module``, or None when no entry covers it."""
    best: tuple[int, int] | None = None  # (length of the entry, layer)
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            covers = module == prefix or (prefix != "nbx_core" and module.startswith(prefix + "."))
            if covers and (best is None or len(prefix) > best[0]):
                best = (len(prefix), index)
    return None if best is None else best[1]


def modules(root: Path, package: str = "nbx_core") -> dict[str, Path]:
    """Dotted name -> file of every module of ``package`` under ``root``."""
    found = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imported(name: str, path: Path, known: set[str]) -> Iterator[tuple[str, int]]:
    """(target, line) for each nbx_core module or deprecated path the file of module ``name``
    imports. A name imported from a package is the submodule of that name when there is one."""
    base = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                module = ".".join(base[: len(base) - node.level + 1] + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if new_path(module) is not None:
                targets = [module]
            else:
                targets = [f"{module}.{alias.name}" for alias in node.names]
                targets = [t if t in known or new_path(t) else module for t in targets]
        else:
            continue
        for target in targets:
            if target.split(".")[0] != "nbx_core":
                continue
            if new_path(target) is None:
                while target not in known and "." in target:
                    target = target.rsplit(".", 1)[0]
            yield target, node.lineno


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for succ in edges:
                if succ not in index:
                    index[succ] = low[succ] = len(index)
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(sorted(graph[succ]))))
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def problems(root: Path) -> list[str]:
    """Everything wrong with the imports of the nbx_core under ``root``, one line each."""
    found = modules(root)
    known = set(found)
    graph: dict[str, set[str]] = {name: set() for name in found}
    out = []
    for name, path in found.items():
        mine = layer_of(name)
        if mine is None:
            out.append(f"{name} is in no layer: add it to LAYERS here and to docs/architecture.md")
            continue
        for target, line in imported(name, path, known):
            where = f"{path.relative_to(root)}:{line}"
            if new_path(target) is not None:
                out.append(f"{where}: {name} imports the deprecated {target}; import {new_path(target)}")
                continue
            if target == name:
                continue
            graph[name].add(target)
            theirs = layer_of(target)
            if theirs is not None and theirs > mine:
                out.append(
                    f"{where}: {name} ({LAYERS[mine][0]}) imports {target} from the higher layer {LAYERS[theirs][0]}"
                )
    out += [f"import cycle: {' <-> '.join(cycle)}" for cycle in cycles(graph)]
    return out


def deprecated_imports(root: Path, folders: list[str]) -> list[str]:
    """``file:line: path`` for each import of a deprecated nbx_core path in ``folders``."""
    out = []
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            rel = path.relative_to(root)
            name = ".".join(rel.with_suffix("").parts)
            for target, line in imported(name, path, set()):
                if new_path(target) is not None:
                    out.append(f"{rel}:{line}: {target}")
    return out


def test_nbx_core_imports_point_one_way():
    found = problems(ROOT)
    assert not found, "\n".join(found)


def test_nothing_in_the_repository_imports_a_deprecated_path():
    found = deprecated_imports(ROOT, USERS)
    assert not found, "\n".join(found)


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_the_check_finds_cycles_upward_imports_deprecated_paths_and_stray_modules(tmp_path):
    _write(
        tmp_path,
        {
            "nbx_core/__init__.py": "",
            "nbx_core/errors.py": "",
            "nbx_core/tensor/__init__.py": "from .core import T\n",
            # A late import of an op module, under TYPE_CHECKING it would count the same.
            "nbx_core/tensor/core.py": "def to(x):\n    from ..ops.copy import _to_copy\n    return _to_copy(x)\n",
            "nbx_core/ops/__init__.py": "",
            "nbx_core/ops/copy.py": "from ..tensor import T\nfrom .. import errors\n",
            "nbx_core/runtime/__init__.py": "",
            "nbx_core/runtime/kernels/__init__.py": "",
            "nbx_core/runtime/kernels/fill.py": "from nbx_core.launch import launch\n",
            "nbx_core/stray.py": "",
        },
    )
    assert problems(tmp_path) == [
        "nbx_core/runtime/kernels/fill.py:1: nbx_core.runtime.kernels.fill imports the deprecated "
        "nbx_core.launch; import nbx_core.runtime.launch",
        "nbx_core.stray is in no layer: add it to LAYERS here and to docs/architecture.md",
        "nbx_core/tensor/core.py:2: nbx_core.tensor.core (tensor) imports nbx_core.ops.copy from the higher layer ops",
        "import cycle: nbx_core.ops.copy <-> nbx_core.tensor <-> nbx_core.tensor.core",
    ]


def test_imports_resolve_relative_names_and_submodules(tmp_path):
    _write(
        tmp_path,
        {
            "nbx_core/__init__.py": "from . import errors, hookimpl\n",
            "nbx_core/errors.py": "",
            "nbx_core/graph/__init__.py": "",
            "nbx_core/graph/runner.py": "import nbx_core.graph\nfrom .. import errors as E\nfrom . import capture\n",
            "nbx_core/graph/capture.py": "",
            "user.py": "from nbx_core import checks\nimport nbx_core.kernels.copy\nfrom nbx_core.plugins import x\n",
        },
    )
    found = modules(tmp_path)
    assert sorted(imported("nbx_core", found["nbx_core"], set(found))) == [("nbx_core", 1), ("nbx_core.errors", 1)]
    assert sorted(imported("nbx_core.graph.runner", found["nbx_core.graph.runner"], set(found))) == [
        ("nbx_core.errors", 2),
        ("nbx_core.graph", 1),
        ("nbx_core.graph.capture", 3),
    ]
    assert deprecated_imports(tmp_path, ["."]) == [
        "user.py:1: nbx_core.checks",
        "user.py:2: nbx_core.kernels.copy",
        "user.py:3: nbx_core.plugins",
    ]


@pytest.mark.parametrize("old", [*MOVED, "nbx_core.kernels.copy"])
def test_a_deprecated_path_is_the_module_at_its_new_path_with_a_warning(old):
    new = new_path(old)
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=f"{old} is deprecated: import {new} instead"):
        module = importlib.import_module(old)
    assert module is importlib.import_module(new) and module.__spec__.name == new


def test_the_warning_names_the_importing_line():
    shown = subprocess.run(
        [sys.executable, "-c", "import nbx_core\nimport nbx_core.hookspec"], capture_output=True, text=True, check=True
    ).stderr
    assert "<string>:2: DeprecationWarning: nbx_core.hookspec is deprecated: import nbx_core.registry.hookspec" in shown
