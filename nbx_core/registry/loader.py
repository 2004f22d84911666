"""Entry-point discovery and strict loading of NBX plugins.

A plugin is an entry point in group ``nbx.plugins``: its name is the plugin's name, its value the
module holding the hook implementations. Discovery is done here, not by pluggy's loader, which
silently skips a second plugin of one name: two distributions declaring one plugin name load
neither and report a RegistryError naming both.

A plugin in group ``nbx.plugins.opt_in`` is an *opt-in* plugin: it is listed but loads only when a
preference names it (``NBX_PREFER=aten::relu=acme_relu``) or, with autoload off, the allow-list
does. A distribution ships there the kernels that replace another plugin's names, so that
installing it never makes two providers of one name until the user asks for its kernel.

Which plugins load (:class:`RegistryConfig`, mirrored by the CLI flags):

- ``NBX_DISABLE_PLUGINS=a,b`` (``--disable-plugin NAME``): skip these.
- ``NBX_DISABLE_PLUGIN_AUTOLOAD=1`` (``--no-autoload``): load only ``core`` and the allow-list
  ``NBX_PLUGINS=a,b`` (``--plugins a,b``, which implies ``--no-autoload``).
- ``NBX_PREFER=aten::gelu=acme,...`` (``--prefer OP=PLUGIN``): choose among duplicate providers;
  a preference naming an opt-in plugin also loads it.

``core`` (nbx-core's own ops) always loads. A name in these lists that no installed plugin has, a
plugin both allowed and disabled, or an allow-list with autoload on, is a RegistryConfigError: a
typo must not silently leave a plugin active.

:func:`get_registry` is the process-wide registry, loaded with this selection on first use.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from importlib import metadata

from .. import opnames
from ..errors import PluginLoadError, RegistryConfigError, RegistryError
from .registry import CORE_PLUGIN, PluginInfo, PluginStatus, Provenance, Registry, plugin_load_error

ENTRY_POINT_GROUP = "nbx.plugins"
OPT_IN_GROUP = "nbx.plugins.opt_in"
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"", "0", "false", "no", "off"}
_DISABLED = "disabled by NBX_DISABLE_PLUGINS / --disable-plugin"
_NOT_ALLOWED = "disabled: autoload is off and it is not in NBX_PLUGINS / --plugins"
_OPT_IN = "opt-in: a preference loads it (NBX_PREFER=OP={name} / --prefer OP={name})"


def _items(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


def split_names(text: str) -> frozenset[str]:
    """``"a, b,,c"`` → ``{"a", "b", "c"}``."""
    return frozenset(_items(text))


def parse_preferences(items: Iterable[str], source: str) -> dict[str, str]:
    """Parse ``op=plugin`` items (each may hold several, comma-separated) from ``source``
    (``NBX_PREFER`` or ``--prefer``), for messages)."""
    prefer: dict[str, str] = {}
    for item in (part for chunk in items for part in _items(chunk)):
        name, sep, plugin = (s.strip() for s in item.partition("="))
        if not sep or not plugin:
            raise RegistryConfigError(f"{source}: {item!r} is not of the form 'namespace::op=plugin'")
        opnames.split_op_name(name, source)
        if prefer.get(name, plugin) != plugin:
            raise RegistryConfigError(
                f"{source}: {name} is preferred from both {prefer[name]!r} and {plugin!r}; keep one"
            )
        prefer[name] = plugin
    return prefer


@dataclass(frozen=True)
class RegistryConfig:
    """Which plugins load and which provider wins a duplicated name.

    ``RegistryConfig()`` loads every installed plugin and ignores the environment;
    :meth:`from_env` reads the NBX_* variables; :meth:`with_overrides` layers CLI flags on top.
    """

    disable: frozenset[str] = frozenset()
    autoload: bool = True
    plugins: frozenset[str] = frozenset()
    prefer: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "disable", frozenset(self.disable))
        object.__setattr__(self, "plugins", frozenset(self.plugins))
        object.__setattr__(self, "prefer", dict(self.prefer))
        if CORE_PLUGIN in self.disable:
            raise RegistryConfigError(
                f"plugin {CORE_PLUGIN!r} cannot be disabled: it provides nbx-core's own ops (views, "
                f"creation, copies); remove it from NBX_DISABLE_PLUGINS / --disable-plugin"
            )
        if self.autoload and self.plugins:
            raise RegistryConfigError(
                f"an allow-list of plugins ({', '.join(sorted(self.plugins))}) needs autoload off: set "
                "NBX_DISABLE_PLUGIN_AUTOLOAD=1 with NBX_PLUGINS, or use --plugins (it implies --no-autoload)"
            )
        both = self.disable & self.plugins
        if both:
            raise RegistryConfigError(
                f"plugins both allowed and disabled: {', '.join(sorted(both))}; keep each in one list"
            )

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> RegistryConfig:
        """The selection the NBX_* variables of ``environ`` (default: os.environ) ask for."""
        env = os.environ if environ is None else environ
        flag = env.get("NBX_DISABLE_PLUGIN_AUTOLOAD", "").strip().lower()
        if flag not in _TRUE | _FALSE:
            raise RegistryConfigError(f"NBX_DISABLE_PLUGIN_AUTOLOAD={flag!r}: use 1 or 0")
        return cls(
            disable=split_names(env.get("NBX_DISABLE_PLUGINS", "")),
            autoload=flag not in _TRUE,
            plugins=split_names(env.get("NBX_PLUGINS", "")),
            prefer=parse_preferences([env.get("NBX_PREFER", "")], "NBX_PREFER"),
        )

    def with_overrides(
        self,
        *,
        disable: Iterable[str] = (),
        autoload: bool | None = None,
        plugins: Iterable[str] | None = None,
        prefer: Mapping[str, str] | None = None,
    ) -> RegistryConfig:
        """This config with more plugins disabled, autoload changed, the allow-list replaced (which
        turns autoload off) and preferences added (overriding ones for the same op)."""
        if plugins is not None:
            autoload = False
        return replace(
            self,
            disable=self.disable | frozenset(disable),
            autoload=self.autoload if autoload is None else autoload,
            plugins=self.plugins if plugins is None else frozenset(plugins),
            prefer={**self.prefer, **(prefer or {})},
        )

    def disabled_reason(self, name: str, opt_in: bool = False) -> str | None:
        """Why plugin ``name`` (an opt-in plugin if ``opt_in``) is not loaded under this config, or
        None if it is."""
        if name == CORE_PLUGIN:
            return None
        if name in self.disable:
            return _DISABLED
        if not self.autoload:
            return None if name in self.plugins else _NOT_ALLOWED
        if opt_in and name not in self.prefer.values():
            return _OPT_IN.format(name=name)
        return None


@dataclass(frozen=True)
class DiscoveredPlugin:
    """An ``nbx.plugins`` (or ``nbx.plugins.opt_in``) entry point and the distribution that declares it."""

    entry_point: metadata.EntryPoint
    distribution: str | None
    version: str | None
    opt_in: bool = False

    @property
    def name(self) -> str:
        return self.entry_point.name

    @property
    def provenance(self) -> Provenance:
        return Provenance(self.name, self.distribution, self.version)


def discover_plugins(path: Sequence[str] | None = None) -> dict[str, list[DiscoveredPlugin]]:
    """Plugin name → every entry point declaring it (in either group), from the distributions on
    ``path`` (default ``sys.path``). A list longer than one is a clash."""
    found: dict[str, list[DiscoveredPlugin]] = {}
    seen: set[str] = set()
    for dist in metadata.distributions() if path is None else metadata.distributions(path=list(path)):
        name = dist.metadata["Name"]
        key = opnames.normalize_distribution(name or "")
        if key in seen:  # the same distribution further down the path is shadowed, as importlib does
            continue
        seen.add(key)
        for group, opt_in in ((ENTRY_POINT_GROUP, False), (OPT_IN_GROUP, True)):
            for entry_point in dist.entry_points.select(group=group):
                plugin = DiscoveredPlugin(entry_point, name, dist.version, opt_in)
                found.setdefault(entry_point.name, []).append(plugin)
    return found


def load_registry(
    config: RegistryConfig | None = None, *, strict: bool = True, path: Sequence[str] | None = None
) -> Registry:
    """Discover, select and load the installed plugins into a new :class:`Registry`.

    ``config`` defaults to :meth:`RegistryConfig.from_env`; ``path`` restricts discovery to those
    directories. With ``strict`` (the default) any problem raises (:meth:`Registry.check`);
    without it problems are recorded for listings to report.
    """
    config = RegistryConfig.from_env() if config is None else config
    found = discover_plugins(path)
    _check_names(config, found.keys())
    registry = Registry(prefer=config.prefer)
    if CORE_PLUGIN not in found:
        registry.record_plugin(_core_missing())
    for name in sorted(found, key=lambda n: (n != CORE_PLUGIN, n)):
        candidates = found[name]
        reason = config.disabled_reason(name, opt_in=all(c.opt_in for c in candidates))
        if len(candidates) > 1:
            _record_clash(registry, candidates, reason)
        elif reason is not None:
            plugin = candidates[0]
            info = PluginInfo(name, plugin.distribution, plugin.version, 0, "disabled", reason)
            registry.record_plugin(info)
        else:
            _load_one(registry, candidates[0])
    if strict:
        registry.check()
    return registry


def _check_names(config: RegistryConfig, known: Iterable[str]) -> None:
    known = set(known)
    for names, source in (
        (config.disable, "NBX_DISABLE_PLUGINS / --disable-plugin"),
        (config.plugins, "NBX_PLUGINS / --plugins"),
    ):
        unknown = sorted(names - known)
        if unknown:
            raise RegistryConfigError(
                f"{source} names {', '.join(map(repr, unknown))}, which no installed distribution "
                f"provides; installed plugins: {', '.join(sorted(known)) or 'none'}"
            )


def _core_missing() -> PluginInfo:
    error = PluginLoadError(
        f"plugin {CORE_PLUGIN!r} is not among the installed {ENTRY_POINT_GROUP} entry points: nbx-core is "
        "not installed (in a source checkout: pip install --no-deps -e .)"
    )
    return PluginInfo(CORE_PLUGIN, "nbx-core", None, 0, "failed", error=error)


def _record_clash(registry: Registry, candidates: list[DiscoveredPlugin], reason: str | None) -> None:
    """Several distributions declare one plugin name: load none of them (no first-wins)."""
    names = "; ".join(f"{c.distribution} {c.version} ({c.entry_point.value})" for c in candidates)
    error = RegistryError(
        f"plugin name {candidates[0].name!r} is declared by {len(candidates)} distributions: {names}. "
        "NBX loads neither; uninstall one of them"
    )
    for plugin in candidates:
        # A disabled clash is harmless: the user has already chosen to load neither.
        status: PluginStatus = "disabled" if reason else "failed"
        registry.record_plugin(
            PluginInfo(plugin.name, plugin.distribution, plugin.version, 0, status, reason, None if reason else error)
        )


def _load_one(registry: Registry, plugin: DiscoveredPlugin) -> None:
    try:
        module = plugin.entry_point.load()
    except Exception as exc:  # a broken third-party module can raise anything at import
        reason = f"importing {plugin.entry_point.value} raised {type(exc).__name__}: {exc}"
        error = plugin_load_error(plugin.provenance, reason, exc)
        registry.record_plugin(PluginInfo(plugin.name, plugin.distribution, plugin.version, 0, "failed", error=error))
        return
    try:
        registry.add_plugin(plugin.name, module, plugin.distribution, plugin.version)
    except PluginLoadError:
        pass  # recorded by the registry; load_registry reports it with the other problems


_default: Registry | None = None
_default_config: RegistryConfig | None = None
# Reentrant: a plugin that reaches get_registry() while it loads (an NBXTensor method calls it)
# gets an error instead of waiting on its own thread.
_default_lock = threading.RLock()
_loading = False


def get_registry() -> Registry:
    """The process-wide registry, loaded strictly from the installed plugins on first use.

    The selection comes from the NBX_* environment variables, or from the config given to
    :func:`reset_registry`. A failed load raises and is retried on the next call.
    """
    global _default, _loading
    registry = _default
    if registry is None:
        with _default_lock:
            if _default is None:
                if _loading:
                    raise RegistryError(
                        "the process-wide registry was used while it loads: a plugin module or hook called "
                        "get_registry() or an NBXTensor op method (view, clone, +, indexing ...), which run "
                        "through the registry; a hook may only register names: use tensors in kernels"
                    )
                _loading = True
                try:
                    _default = load_registry(_default_config)
                finally:
                    _loading = False
            registry = _default
    return registry


def set_registry(registry: Registry) -> None:
    """Make ``registry`` the process-wide registry (embedding, tests)."""
    global _default
    with _default_lock:
        _default = registry


def reset_registry(config: RegistryConfig | None = None) -> None:
    """Forget the process-wide registry; the next :func:`get_registry` loads it anew with
    ``config`` (None: from the environment)."""
    global _default, _default_config
    with _default_lock:
        _default, _default_config = None, config
