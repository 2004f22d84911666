"""Fusion patterns: a small ATen subgraph and the registered op that replaces it.

A plugin registers a pattern next to its kernels, in plain data (no torch, no Triton)::

    from nbx_core.registry.patterns import Pattern, arg, op

    x = arg("x")
    GELU_TANH = Pattern(
        "nbx::gelu_tanh",
        op("aten::mul.Tensor",
           op("aten::mul.Tensor", x, 0.5),
           op("aten::add.Tensor",
              op("aten::tanh.default", op("aten::mul.Tensor", ...)), 1.0)),
        call=("x",),
    )

    @hookimpl
    def nbx_register_kernels(registry):
        registry.register("nbx::gelu_tanh", "my_plugin.gelu:gelu_tanh")
        registry.register_pattern(GELU_TANH)

Two patterns that claim the same subgraph (equal :meth:`Pattern.structure`) are refused, as two
providers of one name are, unless a preference names one of them by its op and its plugin
(``NBX_PREFER=nbx::gelu_tanh=my_plugin``).

``op(name, *args, **kwargs)`` matches a node calling exactly ``name`` (overload included) with
those arguments; ``arg(n)`` matches any value and binds it to ``n`` (a name used twice must bind
the same value); ``dtype(n)`` matches the dtype named ``n``; any other Python value matches an
equal constant. ``call`` lists the bound names
the replacing op takes, in order; ``kwargs`` gives constant keyword arguments for it. The values
a match consumes inside the subgraph must have no other reader, so the graph can lose them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import RegistryError


@dataclass(frozen=True)
class Arg:
    """Matches any argument value and binds it to ``name``."""

    name: str


@dataclass(frozen=True)
class Op:
    """Matches a node calling ``name`` with ``args`` and ``kwargs`` (patterns, or constants)."""

    name: str
    args: tuple[Any, ...]
    kwargs: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True)
class DTypeConst:
    """Matches the dtype named ``name`` (patterns stay free of the dtype module, which needs numpy)."""

    name: str


def dtype(name: str) -> DTypeConst:
    """A pattern constant matching the NBX dtype ``name`` ("float32", "bfloat16", …)."""
    return DTypeConst(name)


def arg(name: str) -> Arg:
    """A pattern argument that matches any value and binds it to ``name``."""
    return Arg(name)


def op(name: str, *args: Any, **kwargs: Any) -> Op:
    """A pattern node: a call of the ATen op ``name`` (with its overload) on ``args``."""
    return Op(name, tuple(args), tuple(sorted(kwargs.items())))


@dataclass(frozen=True)
class Pattern:
    """``root`` (an :func:`op` tree) is replaced by a call of ``name`` on the values bound to ``call``."""

    name: str
    root: Op
    call: tuple[str, ...]
    kwargs: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.root, Op):
            raise RegistryError(f"pattern {self.name!r}: the root must be an op(...), got {type(self.root).__name__}")
        bound = set(_names(self.root))
        missing = [n for n in self.call if n not in bound]
        if missing:
            raise RegistryError(f"pattern {self.name!r}: call names {missing}, which no arg(...) in the pattern binds")

    def structure(self) -> str:
        """A canonical spelling of the subgraph the pattern claims (equal for equal claims)."""
        return _spell(self.root)

    def size(self) -> int:
        """How many nodes the pattern covers (a sub-pattern used twice is one node)."""
        seen: set[int] = set()
        _collect(self.root, seen)
        return len(seen)


def _names(node: Any) -> list[str]:
    if isinstance(node, Arg):
        return [node.name]
    if isinstance(node, Op):
        out = []
        for a in (*node.args, *(v for _, v in node.kwargs)):
            out += _names(a)
        return out
    if isinstance(node, list | tuple):
        return [n for a in node for n in _names(a)]
    return []


def _spell(node: Any) -> str:
    if isinstance(node, Arg):
        return f"${node.name}"
    if isinstance(node, DTypeConst):
        return node.name
    if isinstance(node, Op):
        inner = [_spell(a) for a in node.args] + [f"{k}={_spell(v)}" for k, v in node.kwargs]
        return f"{node.name}({', '.join(inner)})"
    if isinstance(node, list | tuple):
        return "[" + ", ".join(_spell(a) for a in node) + "]"
    return repr(node)


def _collect(node: Any, seen: set[int]) -> None:
    if isinstance(node, Op):
        seen.add(id(node))
        for a in (*node.args, *(v for _, v in node.kwargs)):
            _collect(a, seen)
    elif isinstance(node, list | tuple):
        for a in node:
            _collect(a, seen)


def conflicts(patterns: Sequence[Pattern]) -> list[list[Pattern]]:
    """Groups of two or more patterns that claim the same subgraph."""
    by_structure: dict[str, list[Pattern]] = {}
    for p in patterns:
        by_structure.setdefault(p.structure(), []).append(p)
    return [group for group in by_structure.values() if len(group) > 1]
