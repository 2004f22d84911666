"""nbx-reduction registers exactly its family's names, each with a conformance test here."""

from __future__ import annotations

from pathlib import Path

from nbx_core.opnames import opset
from nbx_core.registry import get_registry
from nbx_core.testing import untested_names


def _names() -> list[str]:
    return sorted(e.name for e in get_registry().entries() if e.plugin == "reduction")


def test_registers_the_family() -> None:
    assert _names() == sorted(opset("reduction"))
    for name in _names():
        assert get_registry().resolve(name).distribution == "nbx-reduction"


def test_every_name_is_tested() -> None:
    assert untested_names(_names(), Path(__file__).parent) == []
