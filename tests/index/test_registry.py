"""Every name nbx-index registers has a conformance test, and the plugin registers exactly them."""

from pathlib import Path

from nbx_index.plugin import NAMES

from nbx_core.registry import get_registry
from nbx_core.testing import untested_names


def test_every_name_tested():
    assert len(NAMES) == 34
    assert untested_names(NAMES, Path(__file__).parent) == []


def test_names_registered():
    reg = get_registry()
    for name in NAMES:
        assert callable(reg.lookup(name)), name


def test_oplist_matches():
    oplist = Path(__file__).parents[2] / "nbx_core" / "oplists" / "index.txt"
    assert sorted(NAMES) == sorted(oplist.read_text().split())
