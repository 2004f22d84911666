"""Module paths from before nbx_core was laid out by subsystem, still importable, with a warning.

``import nbx_core.launch`` gives :mod:`nbx_core.runtime.launch` and a DeprecationWarning naming
that path; so does every path in :data:`MOVED`, and the submodules under it
(``nbx_core.kernels.copy`` is ``nbx_core.runtime.kernels.copy``). The old name is an alias of the
module at its new path, not a copy, so module state (launch caches, compiled kernels) exists once.

No file stays at an old path: an import finder that ``nbx_core`` installs answers for these names.
Nothing in this repository imports them (tests/core/test_import_layers.py checks it).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from collections.abc import Sequence
from types import ModuleType
from typing import Any

MOVED: dict[str, str] = {
    "nbx_core.hookspec": "nbx_core.registry.hookspec",
    "nbx_core.plugins": "nbx_core.registry.loader",
    "nbx_core.launch": "nbx_core.runtime.launch",
    "nbx_core.checks": "nbx_core.runtime.checks",
    "nbx_core.plans": "nbx_core.runtime.plans",
    "nbx_core.pointwise": "nbx_core.runtime.pointwise",
    "nbx_core.kernels": "nbx_core.runtime.kernels",
}
"""Old module path -> new module path; submodules of an old path move with it."""


def new_path(name: str) -> str | None:
    """Where the module once named ``name`` lives now, or None if ``name`` did not move."""
    for old, new in MOVED.items():
        if name == old or name.startswith(old + "."):
            return new + name[len(old) :]
    return None


class _Alias(importlib.abc.Loader):
    """Loads an old name as the module at its new path."""

    def __init__(self, old: str, new: str) -> None:
        self.old, self.new = old, new
        self.spec: Any = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = importlib.import_module(self.new)
        self.spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        # The import system has just set the alias's spec on the module: give it back its own.
        module.__spec__ = self.spec
        warnings.warn(f"{self.old} is deprecated: import {self.new} instead", DeprecationWarning, stacklevel=2)


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(
        self, name: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        new = new_path(name)
        return None if new is None else importlib.machinery.ModuleSpec(name, _Alias(name, new))


def install() -> None:
    """Answer imports of the old paths (idempotent). It goes first in ``sys.meta_path``: otherwise
    ``nbx_core.kernels.copy`` would be found as a file below the alias package and loaded twice."""
    if not any(isinstance(finder, _Finder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
