"""Every elementwise name is registered by this plugin, tested, and refuses mixed devices."""

from __future__ import annotations

from pathlib import Path

import pytest
from nbx_elementwise.plugin import NAMES

from nbx_core.errors import DeviceError
from nbx_core.registry import get_registry
from nbx_core.testing import from_torch, make, on_other_device, untested_names

OPLIST = Path(__file__).resolve().parents[2] / "nbx_core" / "oplists" / "elementwise.txt"


def test_names_match_the_family_list():
    assert sorted(NAMES) == sorted(OPLIST.read_text().split())
    assert len(set(NAMES)) == 98


def test_every_name_resolves_to_this_plugin():
    reg = get_registry()
    for name in NAMES:
        entry = reg.resolve(name)
        assert "elementwise" in str(entry), (name, entry)
        assert callable(reg.lookup(name))


def test_every_name_has_a_test():
    assert untested_names(NAMES, Path(__file__).parent) == []


def test_clip_is_clamp():
    from nbx_elementwise import comparison

    assert comparison.clip is comparison.clamp


def test_mixed_devices_are_refused():
    a = from_torch(make((3,)))
    b = on_other_device(from_torch(make((3,))))
    with pytest.raises(DeviceError, match="aten::add"):
        get_registry().call("aten::add", a, b)
