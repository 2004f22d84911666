"""benchmarks/sweep.py: a kernel and its shapes are named for one family."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_kernel_and_shapes_need_one_family(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.sweep", "--out", str(tmp_path), "--only", "linalg,norm", "--kernel", "gemm"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2
    assert "--kernel and --shapes name one family's kernel: give one family in --only" in done.stderr
