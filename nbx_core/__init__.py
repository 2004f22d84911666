"""NBX: PyTorch ATen graphs run on Triton kernels, with no torch at run time.

Importing ``nbx_core`` stays light (no numpy, no Triton): it holds the error classes, ``hookimpl``
for plugin authors and ``__version__``. The tensor-facing names (``NBXTensor``, ``tensor``,
``from_dlpack``, dtypes such as ``float32``, ``empty``, ``zeros``, ...) come from
:mod:`nbx_core.api` and ``load`` from :mod:`nbx_core.graph`, each imported on first access.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import sys
import types
from typing import Any

from . import backend as _backend
from . import deprecated as _deprecated
from .errors import (
    BackendError,
    BundleError,
    DeviceError,
    DuplicateKernelError,
    DuplicatePatternError,
    ExportError,
    GraphArityError,
    GraphError,
    GraphFormatError,
    GraphInputError,
    GraphReferenceError,
    GraphSymbolError,
    GraphVersionError,
    GraphWeightsError,
    IndexOutOfRangeError,
    InvalidOpNameError,
    InvalidTargetError,
    KernelImportError,
    NbxError,
    NbxTypeError,
    NbxValueError,
    OutOfMemoryError,
    PluginLoadError,
    RegistryConfigError,
    RegistryError,
    ShapeError,
    UnresolvedOpError,
)
from .registry.hookspec import hookimpl
from .version import __version__

_backend.preconfigure()
_deprecated.install()

__all__ = [
    "BackendError",
    "BundleError",
    "DeviceError",
    "DuplicateKernelError",
    "DuplicatePatternError",
    "ExportError",
    "GraphArityError",
    "GraphError",
    "GraphFormatError",
    "GraphInputError",
    "GraphReferenceError",
    "GraphSymbolError",
    "GraphVersionError",
    "GraphWeightsError",
    "IndexOutOfRangeError",
    "InvalidOpNameError",
    "InvalidTargetError",
    "KernelImportError",
    "NbxError",
    "NbxTypeError",
    "NbxValueError",
    "OutOfMemoryError",
    "PluginLoadError",
    "RegistryConfigError",
    "RegistryError",
    "ShapeError",
    "UnresolvedOpError",
    "__version__",
    "hookimpl",
]

_LAZY_MODULES = {"load": "nbx_core.graph"}  # every other public name is looked up in nbx_core.api
_API = "nbx_core.api"
# Public names that are also submodule names: the factory ``nbx_core.tensor(...)`` must not be
# replaced by the module ``nbx_core.tensor`` when the import system binds it on this package.
_NAMES_SHADOWING_SUBMODULES = frozenset({"tensor"})


def __getattr__(name: str) -> Any:
    missing = f"module {__name__!r} has no attribute {name!r}"
    # Private names: introspection (pytest, inspect, copy) must not import the API. Submodules
    # (and moved ones, nbx_core.deprecated): ``from . import dtypes`` probes the attribute before
    # importing the submodule.
    is_submodule = (
        importlib.machinery.PathFinder.find_spec(f"{__name__}.{name}", __path__) is not None
        or _deprecated.new_path(f"{__name__}.{name}") is not None
    )
    if name.startswith("_") or (is_submodule and name not in _NAMES_SHADOWING_SUBMODULES):
        raise AttributeError(missing)
    module_name = _LAZY_MODULES.get(name, _API)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name != module_name:
            raise  # the module exists but something it needs is missing: say so
        raise AttributeError(f"{missing} ({module_name} is missing)") from exc
    try:
        value = getattr(module, name)
    except AttributeError:
        raise AttributeError(missing) from None
    globals()[name] = value
    return value


class _Package(types.ModuleType):
    def __setattr__(self, name: str, value: Any) -> None:
        if name in _NAMES_SHADOWING_SUBMODULES and isinstance(value, types.ModuleType):
            return  # the submodule stays reachable as sys.modules["nbx_core.<name>"]
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
