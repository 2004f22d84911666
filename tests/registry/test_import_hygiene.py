"""Listing and auditing import no kernel module and no Triton, and ``nbx registry list`` starts fast.

These run in fresh interpreters on the real environment (whatever nbx plugins are installed here)
plus acme-kernels, so they also hold every installed plugin module to the rule.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

HEAVY = ("triton", "torch", "numpy")

LIST_AND_REPORT = """
import contextlib, io, json, sys
from nbx_core.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    code = main(["registry", "list", "--format", "json"])
targets = sorted({op["target"].split(":")[0] for op in json.loads(out.getvalue())["ops"]})
print(json.dumps({"code": code, "modules": sorted(sys.modules), "targets": targets}))
"""


def python(code: str, path=()) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("NBX_")}
    environ["PYTHONPATH"] = os.pathsep.join([*map(str, path), environ.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environ, check=True)


def test_importing_nbx_core_imports_no_numpy_and_no_triton():
    modules = json.loads(python("import json, sys, nbx_core; print(json.dumps(sorted(sys.modules)))").stdout)
    assert [m for m in modules if m.split(".")[0] in HEAVY] == []


def test_registry_list_imports_no_kernel_module_and_no_triton(acme_dir):
    report = json.loads(python(LIST_AND_REPORT, path=[acme_dir]).stdout)
    modules = set(report["modules"])
    assert "acme_kernels.ops" in report["targets"] and "acme_kernels.plugin" in modules
    assert sorted(m for m in modules if m.split(".")[0] in HEAVY) == []
    assert sorted(modules & set(report["targets"])) == []
