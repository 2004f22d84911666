"""scripts/sass_loops.py: the loops it finds in SASS, and one run on a real op (aot, no GPU)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).parents[2] / "scripts" / "sass_loops.py"

SASS = """
        /*0100*/                   MOV R1, c[0x0][0x28] ;
        /*0110*/                   HGMMA.64x64x16.F32.BF16 R24, gdesc[UR4], R24 ;
        /*0120*/                   LDGSTS.E.BYPASS.128 [R2], desc[UR6][R4.64] ;
        /*0130*/               @P0 BRA 0x110 ;
        /*0140*/                   BRA 0x160 ;
        /*0150*/                   NOP ;
        /*0160*/                   EXIT ;
"""


def test_loops_are_backward_branches():
    # Imported (not run), the script leaves this process's backend setting alone.
    before = os.environ.get("NBX_BACKEND")
    spec = importlib.util.spec_from_file_location("sass_loops", SCRIPT)
    sass_loops = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sass_loops)
    assert os.environ.get("NBX_BACKEND") == before
    found = sass_loops.loops(SASS)
    assert [(start, end, len(body)) for start, end, body in found] == [(0x110, 0x130, 3)]


def test_reports_the_loops_of_a_matrix_product():
    # Called from a cpu-backend process (TRITON_INTERPRET=1 in its environment), it still compiles.
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "aten::mm", "T(256, 128)", "T(128, 256)"],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    ).stdout
    assert out.startswith("_gemm_kernel: shared ")
    assert "registers" in out
    # The K loop of a bf16 GEMM on sm_90a issues wgmma.
    assert any("loop" in line and " 0 tensor-core" not in line for line in out.splitlines()), out
