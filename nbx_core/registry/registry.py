"""The kernel registry: op names to kernels, with the provenance of every provider.

Strict by design:

- a name registered by two plugins is a :class:`DuplicateKernelError` unless the user prefers one
  provider for that op (``NBX_PREFER`` / ``--prefer``); nothing is first-wins or last-wins;
- a plugin whose hook raises contributes nothing (:class:`PluginLoadError`);
- a missing name is an :class:`UnresolvedOpError` that says which NBX distribution would provide it.

Lookup tries the exact ``ns::op.overload`` key, then ``ns::op``. String targets
(``"pkg.module:attr"``) are imported on first lookup and cached, so listing imports no kernel.
Plugins are discovered and loaded by :mod:`nbx_core.registry.loader`, which also holds the
process-wide registry (:func:`~nbx_core.registry.loader.get_registry`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, NoReturn

import pluggy

from .. import opnames
from ..errors import (
    BackendError,
    DuplicateKernelError,
    DuplicatePatternError,
    KernelImportError,
    PluginLoadError,
    RegistryConfigError,
    RegistryError,
    UnresolvedOpError,
)
from . import hookspec
from .patterns import Pattern
from .registrar import PatternRegistration, Provenance, Registrar, Registration

CORE_PLUGIN = "core"
_CHOOSE_HINT = (
    "choose one with NBX_PREFER={name}=<plugin> (CLI: --prefer {name}=<plugin>) or disable one with "
    "NBX_DISABLE_PLUGINS=<plugin> (CLI: --disable-plugin <plugin>)"
)

EntryStatus = Literal["active", "overridden", "conflict"]
PluginStatus = Literal["loaded", "disabled", "failed"]


@dataclass(frozen=True)
class Entry:
    """One registration as listings show it.

    ``status`` is ``active`` (lookup returns it), ``overridden`` (a preference chose another
    provider) or ``conflict`` (several providers, no preference). ``preferred`` is true when a user
    preference chose this provider.
    """

    name: str
    plugin: str
    distribution: str | None
    version: str | None
    target: str
    preferred: bool
    status: EntryStatus

    @property
    def namespace(self) -> str:
        return self.name.split("::", 1)[0]

    @property
    def op(self) -> str:
        """``ns::op``, the name without its overload."""
        return opnames.base_name(self.name)

    @property
    def overload(self) -> str | None:
        _, dot, overload = self.name.partition(".")
        return overload if dot else None


@dataclass(frozen=True)
class PluginInfo:
    """A plugin as ``plugins()`` reports it.

    ``reason`` says why a disabled plugin is disabled; ``error`` is why a failed one failed.
    """

    name: str
    distribution: str | None
    version: str | None
    ops: int
    status: PluginStatus
    reason: str | None = None
    error: RegistryError | None = None


def plugin_load_error(provenance: Provenance, reason: str, cause: BaseException | None) -> PluginLoadError:
    """The PluginLoadError for a plugin that failed for ``reason``, chained to ``cause``."""
    fix = (
        "nbx-core is broken: reinstall it"
        if provenance.plugin == CORE_PLUGIN
        else f"fix or update {provenance.distribution or 'the plugin'}, or disable it with "
        f"NBX_DISABLE_PLUGINS={provenance.plugin} (CLI: --disable-plugin {provenance.plugin})"
    )
    error = PluginLoadError(f"{provenance} failed to load: {reason}. It contributes no kernels; {fix}")
    error.__cause__ = cause
    return error


@dataclass(frozen=True)
class _Resolution:
    active: dict[str, Registration]
    conflicts: dict[str, DuplicateKernelError]
    preferred: frozenset[str]  # names whose active provider a preference chose
    problems: tuple[RegistryError, ...]
    patterns: tuple[PatternRegistration, ...] = ()  # the patterns in force
    refused: frozenset[int] = frozenset()  # ids of patterns refused for claiming another's subgraph


class Registry:
    """Op names to kernels, loaded from plugins.

    Build one with :func:`nbx_core.registry.loader.load_registry` (discovery through entry points) or
    directly, adding plugin objects with :meth:`add_plugin`. ``prefer`` maps an op name to the
    plugin chosen among its providers.
    """

    def __init__(self, *, prefer: Mapping[str, str] | None = None) -> None:
        self._prefer = dict(prefer or {})
        for name in self._prefer:
            opnames.split_op_name(name, "preference (NBX_PREFER / --prefer)")
        self._pm = pluggy.PluginManager(hookspec.PROJECT)
        self._pm.add_hookspecs(hookspec)
        self._plugins: list[PluginInfo] = []
        self._registrations: dict[str, list[Registration]] = {}
        self._patterns: list[PatternRegistration] = []
        self._resolution: _Resolution | None = None
        self._kernels: dict[str, Callable[..., Any]] = {}

    @property
    def plugin_manager(self) -> pluggy.PluginManager:
        """The pluggy manager holding every loaded plugin."""
        return self._pm

    # -- loading ---------------------------------------------------------------------------------

    def add_plugin(
        self, name: str, plugin: object, distribution: str | None = None, version: str | None = None
    ) -> PluginInfo:
        """Register ``plugin`` (a module or object with an ``nbx_register_kernels`` hookimpl) under
        ``name`` and run its hook.

        On failure the plugin is recorded as failed, contributes nothing, and the
        :class:`PluginLoadError` is raised.
        """
        taken = next((p for p in self._plugins if p.name == name), None)
        if taken is not None:
            owner = Provenance(name, taken.distribution, taken.version)
            raise RegistryError(f"plugin name {name!r} is already taken by {owner}; names must be unique")
        provenance = Provenance(name, distribution, version)
        try:
            self._pm.register(plugin, name=name)
            self._pm.check_pending()  # catches hookimpls of unknown hooks, e.g. a misspelt name
        except Exception as exc:
            self._fail(provenance, "it does not fit the nbx hookspec: " + str(exc).replace("\n", "; "), exc)
        impls = self._pm.hook.nbx_register_kernels.get_hookimpls()
        if not any(impl.plugin_name == name for impl in impls):
            self._fail(provenance, "it defines no nbx_register_kernels hook marked with @nbx_core.hookimpl")
        others = [p for n, p in self._pm.list_name_plugin() if n != name]
        registrar = Registrar(provenance)
        try:
            self._pm.subset_hook_caller("nbx_register_kernels", remove_plugins=others)(registry=registrar)
        except Exception as exc:
            self._fail(provenance, f"its nbx_register_kernels hook raised {type(exc).__name__}: {exc}", exc)
        for registration in registrar.pending():
            self._registrations.setdefault(registration.name, []).append(registration)
        self._patterns += registrar.pending_patterns()
        self._invalidate()
        info = PluginInfo(name, distribution, version, len(registrar.pending()), "loaded")
        self._plugins.append(info)
        return info

    def _fail(self, provenance: Provenance, reason: str, cause: BaseException | None = None) -> NoReturn:
        if self._pm.has_plugin(provenance.plugin):
            self._pm.unregister(name=provenance.plugin)
        error = plugin_load_error(provenance, reason, cause)
        plugin, distribution, version = provenance.plugin, provenance.distribution, provenance.version
        self.record_plugin(PluginInfo(plugin, distribution, version, 0, "failed", error=error))
        raise error

    def record_plugin(self, info: PluginInfo) -> None:
        """Record a plugin that was not added (disabled, or refused before import) for listings."""
        self._plugins.append(info)
        self._invalidate()

    def _invalidate(self) -> None:
        self._resolution = None
        self._kernels.clear()

    # -- resolution ------------------------------------------------------------------------------

    def _resolved(self) -> _Resolution:
        resolution = self._resolution
        if resolution is None:
            resolution = self._resolution = self._resolve()
        return resolution

    def _resolve(self) -> _Resolution:
        active: dict[str, Registration] = {}
        conflicts: dict[str, DuplicateKernelError] = {}
        preferred: set[str] = set()
        problems: list[RegistryError] = []
        for name, registrations in sorted(self._registrations.items()):
            choice = self._prefer.get(name)
            chosen = [r for r in registrations if r.provenance.plugin == choice]
            if choice is not None and not chosen:
                problems.append(self._bad_preference(name, choice, registrations))
            if chosen:
                active[name] = chosen[0]
                preferred.add(name)
            elif len(registrations) == 1:
                active[name] = registrations[0]
            else:
                providers = "; ".join(r.describe() for r in registrations)
                conflicts[name] = DuplicateKernelError(
                    f"{name} has {len(registrations)} providers and no preference chooses one: {providers}. "
                    f"NBX never picks one silently: {_CHOOSE_HINT.format(name=name)}"
                )
                problems.append(conflicts[name])
        for name, choice in sorted(self._prefer.items()):
            if name not in self._registrations:
                problems.append(self._bad_preference(name, choice, []))
        patterns, refused = self._resolve_patterns(problems)
        return _Resolution(active, conflicts, frozenset(preferred), tuple(problems), patterns, refused)

    def _resolve_patterns(
        self,
        problems: list[RegistryError],
    ) -> tuple[tuple[PatternRegistration, ...], frozenset[int]]:
        """The patterns in force: of those claiming one subgraph, the one a preference names (by its
        op and plugin), else none of them and a DuplicatePatternError among the problems."""
        by_structure: dict[str, list[PatternRegistration]] = {}
        for p in self._patterns:
            by_structure.setdefault(p.pattern.structure(), []).append(p)
        active: list[PatternRegistration] = []
        refused: set[int] = set()
        for claims in by_structure.values():
            chosen = [p for p in claims if self._prefer.get(p.pattern.name) == p.provenance.plugin]
            if len(claims) == 1 or len(chosen) == 1:
                active.append(claims[0] if len(claims) == 1 else chosen[0])
                refused |= {id(p) for p in claims if p is not active[-1]}
                continue
            refused |= {id(p) for p in claims}
            listed = "; ".join(p.describe() for p in claims)
            problems.append(
                DuplicatePatternError(
                    f"{len(claims)} fusion patterns claim the same subgraph ({claims[0].pattern.structure()}) and no "
                    f"preference chooses one: {listed}. NBX never picks one silently: prefer one by its op and plugin "
                    f"(NBX_PREFER={claims[0].pattern.name}={claims[0].provenance.plugin} or --prefer), or disable a "
                    "plugin"
                )
            )
        return tuple(active), frozenset(refused)

    def patterns(self) -> list[Pattern]:
        """The fusion patterns in force (those refused for a shared subgraph are left out)."""
        return [p.pattern for p in self._resolved().patterns]

    def pattern_entries(self) -> list[tuple[PatternRegistration, str]]:
        """Every registered pattern with its status, "active" or "refused"; imports nothing."""
        refused = self._resolved().refused
        return [
            (p, "refused" if id(p) in refused else "active")
            for p in sorted(self._patterns, key=lambda p: (p.pattern.name, p.provenance.plugin))
        ]

    def provides(self, pattern: Pattern) -> bool:
        """Whether ``pattern``'s op resolves to one kernel here (a pattern whose op does not is
        left unused)."""
        try:
            self._active(pattern.name)
        except RegistryError:
            return False
        return True

    def _bad_preference(self, name: str, choice: str, registrations: list[Registration]) -> RegistryError:
        status = next((p.status for p in self._plugins if p.name == choice), "not installed")
        providers = "; ".join(r.describe() for r in registrations) or "none"
        return RegistryConfigError(
            f"preference {name}={choice} (NBX_PREFER / --prefer) names plugin {choice!r} "
            f"({status}), which does not provide {name}; providers of {name}: {providers}. "
            "Fix or drop the preference"
        )

    def _active(self, name: str) -> Registration:
        _, _, overload = opnames.split_op_name(name, "lookup")
        resolution = self._resolved()
        for key in (name, opnames.base_name(name)) if overload else (name,):
            if key in resolution.active:
                return resolution.active[key]
            if key in resolution.conflicts:
                raise resolution.conflicts[key]
        raise UnresolvedOpError(self.explain_missing(name))

    def resolve(self, name: str) -> Entry:
        """The entry lookup would use for ``name``, without importing it.

        Raises UnresolvedOpError when no plugin provides it, DuplicateKernelError when several do
        and no preference chooses.
        """
        return self._entry(self._active(name), self._resolved())

    def explain_missing(self, name: str) -> str:
        """Why ``name`` has no provider, and what would provide it: ``"<name>: <reason>"``."""
        reason, to_install = self._why_missing(name)
        return reason if to_install is None else f"{reason} (pip install {to_install})"

    def _why_missing(self, name: str) -> tuple[str, str | None]:
        """``"<name>: <reason>"``, and the distribution to install when that is the fix."""
        namespace, _, _ = opnames.split_op_name(name, "lookup")
        base = opnames.base_name(name)
        overloads = [key for key in sorted(self._registrations) if key.startswith(base + ".")]
        if overloads:
            return f"{name}: not registered; registered overloads of {base}: {', '.join(overloads)}", None
        family = opnames.family_of(name)
        if family is None:
            if namespace == "aten":
                return f"{name}: no installed plugin registers it, and no NBX distribution provides it", None
            return (
                f"{name}: no installed plugin registers it; namespace {namespace!r} is not NBX's: "
                "install the plugin that defines it"
            ), None
        distribution = opnames.distribution_of_family(family)
        wanted = opnames.normalize_distribution(distribution)
        shipped = (p for p in self._plugins if opnames.normalize_distribution(p.distribution or "") == wanted)
        info = next(shipped, None)
        if info is None:
            return f"{name}: provided by {distribution}, which is not installed", distribution
        if info.status == "disabled":
            return f"{name}: provided by {distribution}, whose plugin {info.name!r} is {info.reason}", None
        if info.status == "failed":
            return f"{name}: provided by {distribution}, whose plugin {info.name!r} failed to load", None
        return (
            f"{name}: provided by {distribution}, but the installed {distribution} {info.version or ''} "
            f"does not register it: upgrade {distribution}"
        ), None

    def require(self, names: Iterable[str]) -> dict[str, Entry]:
        """Resolve every name (without importing), or raise one UnresolvedOpError listing each
        name that has no provider or has several and no preference, sorted, and ending with one
        ``pip install`` line for every distribution that would provide a missing name."""
        found: dict[str, Entry] = {}
        unresolved: dict[str, str] = {}
        to_install: set[str] = set()
        for name in dict.fromkeys(names):
            try:
                found[name] = self.resolve(name)
            except DuplicateKernelError as exc:
                unresolved[name] = str(exc)
            except UnresolvedOpError:
                unresolved[name], distribution = self._why_missing(name)
                to_install.update([distribution] if distribution else [])
        if unresolved:
            lines = [unresolved[name] for name in sorted(unresolved)]
            install = ""
            if to_install:
                install = f"\nInstall the missing distributions: pip install {' '.join(sorted(to_install))}"
            raise UnresolvedOpError(
                f"{len(unresolved)} of {len(found) + len(unresolved)} required ops cannot be resolved:\n  "
                + "\n  ".join(lines)
                + install
            )
        return found

    # -- calling ---------------------------------------------------------------------------------

    def lookup(self, name: str) -> Callable[..., Any]:
        """The kernel for ``name`` (exact overload, then the op), importing its target on first use."""
        kernel = self._kernels.get(name)
        if kernel is None:
            kernel = self._kernels[name] = self._load(name, self._active(name))
        return kernel

    def call(self, name: str, /, *args: Any, **kwargs: Any) -> Any:
        """Run the kernel for ``name`` on the op's ATen-schema arguments."""
        return self.lookup(name)(*args, **kwargs)

    def _load(self, name: str, registration: Registration) -> Callable[..., Any]:
        target = registration.target
        if not isinstance(target, str):
            return target
        shown = name if registration.name == name else f"{name} (registered as {registration.name})"
        where = f"{shown}: kernel target {target!r} of {registration.provenance}"
        fix = f"fix or reinstall {registration.provenance.distribution or 'the plugin'}"
        if len(self._registrations[registration.name]) > 1:  # another provider could serve it instead
            fix += f", or {_CHOOSE_HINT.format(name=registration.name)}"
        module, _, attribute = target.partition(":")
        try:
            kernel: Any = importlib.import_module(module)
            for part in attribute.split("."):
                kernel = getattr(kernel, part)
        except BackendError:
            raise  # NBX_BACKEND names no usable backend: no plugin is at fault
        except Exception as exc:  # any failure of a third party's import is the plugin's fault
            raise KernelImportError(f"{where} cannot be loaded: {type(exc).__name__}: {exc}; {fix}") from exc
        if not callable(kernel):
            raise KernelImportError(f"{where} is a {type(kernel).__name__}, not a callable; {fix}")
        return kernel

    # -- listing ---------------------------------------------------------------------------------

    def _entry(self, registration: Registration, resolution: _Resolution) -> Entry:
        name = registration.name
        status: EntryStatus
        if name in resolution.conflicts:
            status = "conflict"
        elif resolution.active.get(name) is registration:
            status = "active"
        else:
            status = "overridden"
        provenance = registration.provenance
        return Entry(
            name=name,
            plugin=provenance.plugin,
            distribution=provenance.distribution,
            version=provenance.version,
            target=registration.display,
            preferred=status == "active" and name in resolution.preferred,
            status=status,
        )

    def entries(self) -> list[Entry]:
        """Every registration, sorted by name then plugin; imports nothing."""
        resolution = self._resolved()
        return [
            self._entry(registration, resolution)
            for name in sorted(self._registrations)
            for registration in sorted(self._registrations[name], key=lambda r: r.provenance.plugin)
        ]

    def plugins(self) -> list[PluginInfo]:
        """Every plugin seen: loaded, disabled or failed, in loading order."""
        return list(self._plugins)

    def problems(self) -> list[RegistryError]:
        """What makes this registry unusable as is: failed plugins, then duplicate names and
        preferences that choose nothing."""
        failed = [p.error for p in self._plugins if p.error is not None]
        return [*dict.fromkeys(failed), *self._resolved().problems]  # distribution clashes share an error

    def check(self) -> None:
        """Raise if :meth:`problems` is not empty: the one problem, or one error listing all of them
        (of their common class, else RegistryError)."""
        problems = self.problems()
        if len(problems) == 1:
            raise problems[0]
        if problems:
            kinds = {type(p) for p in problems}
            cls = kinds.pop() if len(kinds) == 1 else RegistryError
            listed = "\n  ".join(str(p) for p in problems)
            raise cls(f"{len(problems)} registry problems:\n  {listed}") from problems[0]
