"""scripts/compile_catalogue.py: every failing call is reported and the run goes on."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

SCRIPT = Path(__file__).parents[2] / "scripts" / "compile_catalogue.py"


def test_reports_each_failed_call(monkeypatch):
    before = os.environ.get("NBX_BACKEND")
    spec = importlib.util.spec_from_file_location("compile_catalogue", SCRIPT)
    cat = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cat)
    assert os.environ.get("NBX_BACKEND") == before  # imported, it leaves the backend alone

    def calls():
        yield "aten::sum.dim_IntList", lambda: ((cat.T(4, 8), [1]), {})
        yield "aten::softmax.int", lambda: ((cat.T(4, 8), 5), {})  # dim out of range
        yield "aten::sum.dim_IntList", lambda: ((cat.T(4, 8), [0]), {})

    monkeypatch.setitem(cat.CATALOGUE, "probe", calls)
    failed = cat.run(["probe"])
    assert failed == [
        "aten::softmax.int [[4, 8], 5]  ['bfloat16']: IndexOutOfRangeError: softmax: dim=5 is out of "
        "range: expected a value in -2..1"
    ]
    assert cat.main(["x", "nothing"]) == 2
