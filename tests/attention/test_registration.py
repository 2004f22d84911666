"""nbx-attention registers exactly its family's names, each with a conformance test here."""

from __future__ import annotations

from pathlib import Path

from nbx_attention.plugin import NAMES

from nbx_core.registry import get_registry
from nbx_core.testing import untested_names

OPLIST = Path(__file__).resolve().parents[2] / "nbx_core" / "oplists" / "attention.txt"


def test_registers_the_family_op_list():
    want = {line.strip() for line in OPLIST.read_text().splitlines() if line.strip()}
    assert set(NAMES) == want


def test_every_name_resolves_to_a_callable():
    reg = get_registry()
    for name in NAMES:
        assert callable(reg.lookup(name)), name


def test_every_registered_name_has_a_test():
    assert untested_names(NAMES, Path(__file__).parent) == []
