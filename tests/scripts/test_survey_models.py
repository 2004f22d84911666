"""scripts/survey_models.py: two of its fastest entries end to end, and its listing. The whole
survey takes tens of minutes on the cpu backend and is run by hand (docs/models.md)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from nbx_core.testing import numeric

SCRIPT = Path(__file__).parents[2] / "scripts" / "survey_models.py"


@pytest.fixture(scope="module")
def survey():
    spec = importlib.util.spec_from_file_location("survey_models", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        del sys.modules[spec.name]


@pytest.mark.skipif(not numeric(), reason="the aot backend runs no program: nothing to compare")
def test_a_decoder_and_an_nn_block_match_torch(survey, tmp_path, capsys):
    out = tmp_path / "survey.json"
    assert survey.main(["--only", "opt,gru", "--out", str(out)]) == 0
    results = {r["name"]: r for r in json.loads(out.read_text())}
    assert {name: r["status"] for name, r in results.items()} == {"opt": "OK", "gru": "OK"}
    assert results["opt"]["group"] == "decoders" and results["gru"]["group"] == "nn"
    printed = capsys.readouterr().out
    assert "opt" in printed and "gru" in printed  # the table row of each model


def test_list_names_every_group(survey, capsys):
    assert survey.main(["--list"]) == 0
    groups = {line.split()[1] for line in capsys.readouterr().out.splitlines()}
    assert groups == set(survey.GROUPS) == {"decoders", "encoders", "vision", "torchvision", "nn"}


@pytest.mark.skipif(not numeric(), reason="the survey refuses the aot backend, which runs no program")
def test_a_failure_is_one_status_with_its_cause(survey, monkeypatch):
    # A model torch.export cannot export (a data-dependent branch) fails in torch, not in NBX.
    class Branchy(survey.nn.Module):
        def forward(self, x):
            return x + 1 if x.sum() > 0 else x - 1

    entry = survey.Entry("branchy", "nn", lambda: survey.Case(Branchy(), {"x": survey.torch.ones(2)}))
    result = survey.survey(entry)
    assert result.status == survey.EXPORT_FAILED and result.cause.count("\n") == 0 and result.cause
    monkeypatch.setitem(survey.REGISTRY, "branchy", entry)
    assert survey.main(["--only", "branchy"]) == 0  # a torch failure does not fail the survey
