"""Op names: their syntax, and the bundled op lists that say which NBX distribution owns a name.

A name is ``namespace::op`` or ``namespace::op.overload``, each part a Python identifier
(``aten::add``, ``aten::add.Tensor``, ``acme::fused_rope``). The op lists in ``nbx_core/oplists/``
hold op-level names: ``<family>.txt`` for each first-party family and ``core-aten.txt`` for PyTorch's
Core ATen forward opset. A family's list also holds each overload its plugin registers apart from
the op (``aten::stft.center``), so that the list is exactly what the plugin registers. Family
``core`` ships in nbx-core; family F ships as distribution nbx-F.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources
from pathlib import Path

from .errors import InvalidOpNameError, RegistryConfigError

IDENTIFIER = r"[A-Za-z_][A-Za-z0-9_]*"
_NAME = re.compile(rf"({IDENTIFIER})::({IDENTIFIER})(?:\.({IDENTIFIER}))?")

FAMILIES = ("core", "elementwise", "linalg", "reduction", "norm", "index", "conv", "attention", "spectral")
CORE_ATEN = "core-aten"
OPSETS = (CORE_ATEN, *FAMILIES)


def split_op_name(name: object, where: str) -> tuple[str, str, str]:
    """Split ``name`` into ``(namespace, op, overload)``; ``overload`` is ``""`` when absent.

    ``where`` says who supplied the name (a plugin, a file and line, a preference) and prefixes
    the :class:`InvalidOpNameError` raised for a malformed name.
    """
    match = _NAME.fullmatch(name) if isinstance(name, str) else None
    if match is None:
        raise InvalidOpNameError(
            f"{where}: {name!r} is not a valid op name: expected 'namespace::op' or "
            "'namespace::op.overload' made of identifiers, e.g. 'aten::add' or 'aten::add.Tensor'"
        )
    namespace, op, overload = match.groups()
    return namespace, op, overload or ""


def base_name(name: str) -> str:
    """``ns::op`` of a valid ``ns::op[.overload]`` (namespaces and ops hold no dots)."""
    return name.split(".", 1)[0]


def distribution_of_family(family: str) -> str:
    """The distribution that ships a first-party family: nbx-core for ``core``, else nbx-<family>."""
    return f"nbx-{family}"


def normalize_distribution(name: str) -> str:
    """A distribution name compared the way installers compare it (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def parse_op_lines(text: str, source: str) -> tuple[str, ...]:
    """Names of an op list, one per line; blank lines and ``#`` comments are skipped, duplicates
    dropped. A malformed name raises InvalidOpNameError naming ``source`` and the line."""
    names: dict[str, None] = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        name = line.split("#", 1)[0].strip()
        if name:
            split_op_name(name, f"{source}:{lineno}")
            names[name] = None
    return tuple(names)


@cache
def opset(name: str) -> tuple[str, ...]:
    """The names of a bundled op list: ``core-aten`` or a family from :data:`FAMILIES`."""
    if name not in OPSETS:
        raise RegistryConfigError(f"{name!r} is not a bundled op list; choose one of: {', '.join(OPSETS)}")
    text = resources.files("nbx_core").joinpath("oplists", f"{name}.txt").read_text(encoding="utf-8")
    return parse_op_lines(text, f"oplists/{name}.txt")


def read_op_file(path: str | Path) -> tuple[str, ...]:
    """The names in a user's op list file (same format as the bundled lists)."""
    return parse_op_lines(Path(path).read_text(encoding="utf-8"), str(path))


@cache
def _families_by_op() -> dict[str, str]:
    return {name: family for family in FAMILIES for name in opset(family)}


def family_of(name: str) -> str | None:
    """The first-party family that owns ``name`` (overloads map to their op), or None."""
    return _families_by_op().get(base_name(name))
