"""The kernel registry: op names to kernels, the plugin hookspec, and the entry-point loader.

- :mod:`nbx_core.registry.registrar`: the :class:`Registrar` a plugin's hook registers names with.
- :mod:`nbx_core.registry.hookspec`: the pluggy hook a plugin implements.
- :mod:`nbx_core.registry.registry`: :class:`Registry`, the strict name → kernel table.
- :mod:`nbx_core.registry.loader`: entry-point discovery, the plugin selection
  (:class:`RegistryConfig`) and the process-wide registry (:func:`get_registry`).

Everything a plugin, an embedder or a test needs is importable from ``nbx_core.registry``.
"""

from .loader import (
    ENTRY_POINT_GROUP,
    DiscoveredPlugin,
    RegistryConfig,
    discover_plugins,
    get_registry,
    load_registry,
    parse_preferences,
    reset_registry,
    set_registry,
    split_names,
)
from .registrar import Provenance, Registrar
from .registry import CORE_PLUGIN, Entry, PluginInfo, Registry, plugin_load_error

__all__ = [
    "CORE_PLUGIN",
    "ENTRY_POINT_GROUP",
    "DiscoveredPlugin",
    "Entry",
    "PluginInfo",
    "Provenance",
    "Registrar",
    "Registry",
    "RegistryConfig",
    "discover_plugins",
    "get_registry",
    "load_registry",
    "parse_preferences",
    "plugin_load_error",
    "reset_registry",
    "set_registry",
    "split_names",
]
