"""Every registered spectral name has a test, and the plugin module imports no Triton."""

from __future__ import annotations

import sys
from pathlib import Path

import nbx_spectral.plugin as plugin

from nbx_core.registry import get_registry
from nbx_core.testing import untested_names


def test_every_name_tested():
    assert untested_names(plugin.NAMES, Path(__file__).parent) == []


def test_names_resolve_to_spectral():
    reg = get_registry()
    for name in plugin.NAMES:
        assert callable(reg.lookup(name))
        assert reg.resolve(name).plugin == "spectral"


def test_plugin_module_imports_no_triton():
    assert "import triton" not in Path(plugin.__file__).read_text()
    assert "nbx_spectral.plugin" in sys.modules
