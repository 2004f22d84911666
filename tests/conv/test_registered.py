"""Every name nbx-conv registers is exactly its op list, and each has a conformance test here."""

from __future__ import annotations

from pathlib import Path

from nbx_conv.plugin import NAMES

from nbx_core.testing import untested_names

OPLIST = Path(__file__).parents[2] / "nbx_core" / "oplists" / "conv.txt"


def test_registers_the_op_list():
    listed = {line.strip() for line in OPLIST.read_text().splitlines() if line.strip()}
    assert set(NAMES) == listed and len(NAMES) == len(listed)


def test_every_name_is_tested():
    assert untested_names(NAMES, Path(__file__).parent) == []


def test_plugin_module_imports_no_triton():
    import subprocess
    import sys

    code = "import sys, nbx_conv.plugin; assert 'triton' not in sys.modules, 'plugin imported triton'"
    subprocess.run([sys.executable, "-c", code], check=True)
