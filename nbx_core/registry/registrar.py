"""What a plugin's hook receives: the :class:`Registrar`, and the provenance of what it registers.

A registration names an op (``ns::op`` or ``ns::op.overload``) and a target: a callable or a lazy
``"package.module:attr"`` string, imported on first use of the op so that listing imports no kernel.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .. import opnames
from ..errors import DuplicateKernelError, InvalidTargetError
from .patterns import Pattern

_DOTTED = rf"{opnames.IDENTIFIER}(?:\.{opnames.IDENTIFIER})*"
_TARGET = re.compile(rf"{_DOTTED}:{_DOTTED}")

Target = str | Callable[..., Any]


@dataclass(frozen=True)
class Provenance:
    """Who provides a name: the plugin and the distribution (and version) that ships it."""

    plugin: str
    distribution: str | None = None
    version: str | None = None

    def __str__(self) -> str:
        if self.distribution is None:
            return f"plugin {self.plugin!r} (added directly, no distribution)"
        return f"plugin {self.plugin!r} ({self.distribution} {self.version or '?'})"


@dataclass(frozen=True)
class Registration:
    """One name registered by one plugin, as the registry stores it."""

    name: str
    provenance: Provenance
    target: Target
    display: str  # the target as listings show it

    def describe(self) -> str:
        return f"{self.provenance} -> {self.display}"


@dataclass(frozen=True)
class PatternRegistration:
    """One fusion pattern registered by one plugin."""

    pattern: Pattern
    provenance: Provenance

    def describe(self) -> str:
        return f"{self.provenance} -> pattern {self.pattern.name} ({self.pattern.size()} nodes)"


def _describe_callable(target: Callable[..., Any]) -> str:
    module, qualname = getattr(target, "__module__", None), getattr(target, "__qualname__", None)
    return f"{module}:{qualname}" if module and qualname else repr(target)


class Registrar:
    """What a plugin's ``nbx_register_kernels`` hook receives: registers names for one plugin.

    Registrations are held until the hook returns; the registry commits them only if it returned
    without raising, so a failing plugin contributes nothing.
    """

    def __init__(self, provenance: Provenance) -> None:
        self._provenance = provenance
        self._pending: dict[str, Registration] = {}
        self._patterns: list[PatternRegistration] = []

    @property
    def plugin(self) -> str:
        return self._provenance.plugin

    @property
    def distribution(self) -> str | None:
        return self._provenance.distribution

    @property
    def version(self) -> str | None:
        return self._provenance.version

    def register(self, name: str, target: Target) -> None:
        """Register ``name`` (``ns::op`` or ``ns::op.overload``) to ``target``.

        ``target`` is ``"package.module:attr"`` (imported on first use of the op: keep kernels
        and Triton out of the plugin module) or a callable.
        """
        where = str(self._provenance)
        opnames.split_op_name(name, where)
        if isinstance(target, str):
            if not _TARGET.fullmatch(target):
                raise InvalidTargetError(
                    f"{where}: target {target!r} for {name} is not of the form 'package.module:attr'"
                )
            display = target
        elif callable(target):
            display = _describe_callable(target)
        else:
            raise InvalidTargetError(
                f"{where}: target for {name} is a {type(target).__name__}; pass a callable or a "
                "'package.module:attr' string"
            )
        previous = self._pending.get(name)
        if previous is not None:
            raise DuplicateKernelError(
                f"{where} registers {name} twice: -> {previous.display} and -> {display}; register each name once"
            )
        self._pending[name] = Registration(name, self._provenance, target, display)

    def pending(self) -> list[Registration]:
        """The registrations made so far, in order (the registry commits them after the hook)."""
        return list(self._pending.values())

    def register_pattern(self, pattern: Pattern) -> None:
        """Register a fusion pattern (:mod:`nbx_core.registry.patterns`): where it matches a graph,
        the matched nodes become one call of ``pattern.name``, an op this plugin (or another)
        registers with :meth:`register`."""
        if not isinstance(pattern, Pattern):
            raise InvalidTargetError(
                f"{self._provenance}: register_pattern takes a Pattern "
                f"(nbx_core.registry.patterns), got {type(pattern).__name__}"
            )
        if any(p.pattern.structure() == pattern.structure() for p in self._patterns):
            raise DuplicateKernelError(
                f"{self._provenance} registers the subgraph of pattern {pattern.name} twice; register each pattern once"
            )
        self._patterns.append(PatternRegistration(pattern, self._provenance))

    def pending_patterns(self) -> list[PatternRegistration]:
        """The patterns registered so far, in order."""
        return list(self._patterns)

    def register_module(self, module: str, names: Iterable[str]) -> None:
        """Register each name to ``module:<op>``, the function named after the op.

        ``register_module("nbx_elementwise.unary", ["aten::abs", "aten::exp.default"])`` maps
        ``aten::abs`` to ``nbx_elementwise.unary:abs`` and ``aten::exp.default`` to
        ``nbx_elementwise.unary:exp``.
        """
        for name in names:
            _, op, _ = opnames.split_op_name(name, str(self._provenance))
            self.register(name, f"{module}:{op}")

    def register_modules(self, modules: Mapping[str, Iterable[str]]) -> None:
        """``register_module`` for each module -> names pair: a plugin's whole registration.

        ``register_modules({"nbx_norm.rms_norm": ["aten::rms_norm"], ...})``.
        """
        for module, names in modules.items():
            self.register_module(module, names)
