"""The bundled op lists against the installed first-party plugins: ``nbx registry plugins`` (names a
plugin registers) and ``nbx registry coverage --against FAMILY`` (names of the list) must agree."""

from __future__ import annotations

from importlib import metadata

import pytest

from nbx_core import opnames
from nbx_core.registry import RegistryConfig, load_registry


@pytest.fixture(scope="module")
def installed():
    """Every installed plugin, loaded as a user's default selection would."""
    return load_registry(RegistryConfig(), strict=False)


@pytest.mark.parametrize("family", opnames.FAMILIES)
def test_a_family_registers_exactly_the_names_of_its_bundled_list(installed, family):
    distribution = opnames.distribution_of_family(family)
    try:
        metadata.distribution(distribution)
    except metadata.PackageNotFoundError:
        pytest.skip(f"{distribution} is not installed")
    registered = {e.name for e in installed.entries() if e.plugin == family}
    assert registered == set(opnames.opset(family))
    (plugin,) = (p for p in installed.plugins() if p.name == family)
    assert plugin.ops == len(opnames.opset(family)) and plugin.distribution == distribution
