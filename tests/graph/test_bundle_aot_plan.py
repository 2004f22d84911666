"""A plan recorded on the aot backend is the plan the cuda backend records, so that a bundle
compiled on aot (``nbx compile``) holds the kernels a GPU's plan launches, fused ones included.

The aot backend zeroes new memory (nothing computes it); a recorder must not take that for a
zero-fill the run asked for, or the plan would zero-fill every temporary and fuse nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from .conftest import base_doc, write

_DESCRIBE = """
import json, sys
import numpy as np
import nbx_core
prog = nbx_core.load(sys.argv[1])
about = prog.describe(x=np.linspace(-1.0, 1.0, 8, dtype=np.float32).reshape(2, 4))
print(json.dumps({k: about[k] for k in ("launches", "zero_fills", "kernels", "fused")}))
"""


def _describe(path, backend: str) -> dict:
    """prog.describe(...) in a fresh process on ``backend`` (this one's backend is fixed)."""
    env = dict(os.environ, NBX_BACKEND=backend)
    done = subprocess.run(
        [sys.executable, "-c", _DESCRIBE, str(path)], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_aot_plan_fuses_and_zero_fills_nothing_unasked(tmp_path):
    path = write(tmp_path / "chain.nbx", base_doc())  # relu(x * w + b): one elementwise chain
    about = _describe(path, "aot")
    assert about["zero_fills"] == 0
    assert about["fused"] == {"launches_removed": 2, "elementwise_kernels": 1, "epilogues": 0}
    assert about["kernels"] == {"fused": 1} and about["launches"] == 1
