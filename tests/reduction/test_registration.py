"""nbx-reduction registers exactly the names of its op list, and each has a conformance test here."""

from __future__ import annotations

from pathlib import Path

from nbx_core.opnames import opset
from nbx_core.testing import registered_by, untested_names

FAMILY = "reduction"


def test_registers_exactly_its_op_list():
    assert registered_by(FAMILY) == sorted(opset(FAMILY))


def test_every_registered_name_has_a_test():
    assert untested_names(opset(FAMILY), Path(__file__).parent) == []
