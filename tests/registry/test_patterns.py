"""Fusion patterns in the registry: strict like names, a preference chooses, listings show them."""

from __future__ import annotations

import json

import pytest

from nbx_core import hookimpl
from nbx_core.cli import main
from nbx_core.errors import DuplicatePatternError, InvalidTargetError, RegistryError
from nbx_core.ops import plugin as core_plugin
from nbx_core.registry import Registry
from nbx_core.registry.patterns import Pattern, arg, dtype, op

_x = arg("x")
RELU_OF_NEG = op("aten::relu.default", op("aten::neg.default", _x))


class PatternPlugin:
    def __init__(self, name: str, structure=RELU_OF_NEG) -> None:
        self.name = name
        self.pattern = Pattern(name, structure, call=("x",))

    @hookimpl
    def nbx_register_kernels(self, registry) -> None:
        registry.register(self.name, lambda x: x)
        registry.register_pattern(self.pattern)


def _registry(*plugins: PatternPlugin, prefer: dict[str, str] | None = None) -> Registry:
    registry = Registry(prefer=prefer)
    registry.add_plugin("core", core_plugin)
    for i, plugin in enumerate(plugins):
        registry.add_plugin(f"p{i}", plugin)
    return registry


def test_a_pattern_is_in_force_and_names_its_op():
    registry = _registry(PatternPlugin("acme::relu_neg"))
    (pattern,) = registry.patterns()
    assert pattern.name == "acme::relu_neg" and registry.provides(pattern)
    assert registry.problems() == []


def test_two_patterns_claiming_one_subgraph_are_refused_naming_both_plugins():
    registry = _registry(PatternPlugin("acme::relu_neg"), PatternPlugin("other::relu_neg"))
    assert registry.patterns() == []
    (problem,) = registry.problems()
    assert isinstance(problem, DuplicatePatternError)
    assert "plugin 'p0'" in str(problem) and "plugin 'p1'" in str(problem)
    assert "NBX_PREFER=acme::relu_neg=p0" in str(problem)
    assert [status for _, status in registry.pattern_entries()] == ["refused", "refused"]


def test_a_preference_chooses_among_patterns_claiming_one_subgraph():
    registry = _registry(
        PatternPlugin("acme::relu_neg"), PatternPlugin("other::relu_neg"), prefer={"other::relu_neg": "p1"}
    )
    assert [p.name for p in registry.patterns()] == ["other::relu_neg"]
    assert registry.problems() == []


def test_patterns_of_different_subgraphs_coexist():
    other = op("aten::relu.default", op("aten::abs.default", _x))
    registry = _registry(PatternPlugin("acme::relu_neg"), PatternPlugin("other::relu_abs", other))
    assert sorted(p.name for p in registry.patterns()) == ["acme::relu_neg", "other::relu_abs"]


def test_a_pattern_whose_op_nobody_provides_is_not_used():
    class NoKernel(PatternPlugin):
        @hookimpl
        def nbx_register_kernels(self, registry) -> None:
            registry.register_pattern(self.pattern)

    registry = _registry(NoKernel("acme::relu_neg"))
    (pattern,) = registry.patterns()
    assert not registry.provides(pattern)


def test_bad_patterns_are_refused_when_made_or_registered():
    with pytest.raises(RegistryError, match="call names \\['y'\\]"):
        Pattern("acme::p", RELU_OF_NEG, call=("y",))
    with pytest.raises(RegistryError, match="root must be an op"):
        Pattern("acme::p", _x, call=("x",))

    class NotAPattern(PatternPlugin):
        @hookimpl
        def nbx_register_kernels(self, registry) -> None:
            registry.register_pattern("aten::relu")

    with pytest.raises(RegistryError, match="register_pattern takes a Pattern"):
        _registry(NotAPattern("acme::p"))
    assert issubclass(InvalidTargetError, RegistryError)


def test_structure_spells_the_claimed_subgraph():
    p = Pattern("acme::p", op("aten::to.dtype", _x, dtype("float32")), call=("x",))
    assert p.structure() == "aten::to.dtype($x, float32)" and p.size() == 1
    shared = op("aten::neg.default", _x)
    assert Pattern("acme::q", op("aten::mul.Tensor", shared, shared), call=("x",)).size() == 2


def test_registry_list_shows_the_installed_patterns(capsys):
    assert main(["registry", "list", "--format", "json"]) == 0
    listed = {p["name"]: p for p in json.loads(capsys.readouterr().out)["patterns"]}
    assert listed["nbx::gelu_tanh"]["plugin"] == "elementwise" and listed["nbx::gelu_tanh"]["status"] == "active"
    assert listed["nbx::rms_norm_cast"]["nodes"] == 8
    assert main(["registry", "list"]) == 0
    out = capsys.readouterr().out
    assert "fusion patterns" in out and "nbx::rms_norm_cast  norm" in out
