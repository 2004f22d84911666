"""The pluggy hook specification that NBX plugins implement.

A plugin is a module named by an entry point in group ``nbx.plugins`` (entry name = plugin name)::

    from nbx_core import hookimpl

    @hookimpl
    def nbx_register_kernels(registry):
        registry.register("acme::fused_rope", "acme_kernels.rope:fused_rope")

The module must import no Triton and no kernel module: listing the registry imports plugin modules
only, and string targets are imported on first use of their op.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from .registrar import Registrar

PROJECT = "nbx"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def nbx_register_kernels(registry: Registrar) -> None:
    """Register this plugin's kernels.

    ``registry`` is a :class:`nbx_core.registry.Registrar` bound to this plugin: it records the
    plugin, distribution and version of every name registered through it. Call
    ``registry.register(name, target)`` or ``registry.register_module(module, names)``. If the hook
    raises, the plugin contributes nothing and loading reports a PluginLoadError.
    """
