"""The example third-party plugin, acme-kernels: its declaration, read from the checkout, and the
distribution pip installs into a private directory.

acme-kernels has two plugins: acme (acme::scaled_add) and acme_relu, an opt-in plugin whose
aten::relu replaces the one of nbx-elementwise. The tests stand "other" in for nbx-elementwise."""

from __future__ import annotations

import json
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

import nbx_core
from nbx_core.backend import kernel_device_type
from nbx_core.errors import DuplicateKernelError
from nbx_core.registry import RegistryConfig, load_registry
from nbx_core.testing import numeric

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "third_party_plugin"
SELECT = ["--no-autoload", "--plugins", "acme,acme_relu,other"]  # ignore any other plugin installed here
PREFER_ACME = {"aten::relu": "acme_relu"}


def load(site, acme, config=None):
    return load_registry(config or RegistryConfig(), path=[str(site.root), str(acme)])


@pytest.fixture
def with_core(site):
    site.add_core()
    return site


@pytest.fixture
def rival(with_core):
    """other-kernels 1.0, a second real distribution registering aten::relu."""
    with_core.add_plugin("other-kernels", "1.0", "other", ["aten::relu"])
    return with_core


def test_the_example_declares_scaled_add_by_default_and_its_relu_opt_in():
    declared = tomllib.loads((EXAMPLE / "pyproject.toml").read_text())["project"]["entry-points"]
    assert declared == {
        "nbx.plugins": {"acme": "acme_kernels.plugin"},
        "nbx.plugins.opt_in": {"acme_relu": "acme_kernels.relu_plugin"},
    }


@pytest.fixture
def example_source(monkeypatch):
    """The example's package importable from the checkout, nothing installed."""
    monkeypatch.syspath_prepend(str(EXAMPLE))
    yield
    for module in [m for m in sys.modules if m.split(".")[0] == "acme_kernels"]:
        del sys.modules[module]


def test_the_example_beside_another_relu_provider_loads_without_a_collision(rival, example_source):
    """What docs/plugins.md has a user do: install acme-kernels where aten::relu is already provided."""
    declared = tomllib.loads((EXAMPLE / "pyproject.toml").read_text())["project"]["entry-points"]
    rival.add_dist("acme-kernels", "0.1.0", declared["nbx.plugins"], {}, opt_in=declared["nbx.plugins.opt_in"])
    registry = load_registry(RegistryConfig(), path=[str(rival.root)])  # strict: raises on any problem
    assert registry.resolve("acme::scaled_add").plugin == "acme"
    assert registry.resolve("aten::relu").plugin == "other"
    assert {p.name: p.status for p in registry.plugins()}["acme_relu"] == "disabled"
    preferred = load_registry(RegistryConfig(prefer=PREFER_ACME), path=[str(rival.root)])
    assert preferred.resolve("aten::relu").target == "acme_kernels.ops:relu"


def test_acme_is_listed_from_its_installed_distribution_without_importing_its_kernels(with_core, acme):
    registry = load(with_core, acme, RegistryConfig(prefer=PREFER_ACME))
    plugins = {p.name: (p.distribution, p.version, p.ops, p.status) for p in registry.plugins()}
    assert plugins["acme"] == plugins["acme_relu"] == ("acme-kernels", "0.1.0", 1, "loaded")
    assert [(e.name, e.plugin, e.target) for e in registry.entries() if e.plugin.startswith("acme")] == [
        ("acme::scaled_add", "acme", "acme_kernels.ops:scaled_add"),
        ("aten::relu", "acme_relu", "acme_kernels.ops:relu"),
    ]
    assert "acme_kernels.plugin" in sys.modules and "acme_kernels.ops" not in sys.modules


def test_acme_kernels_run_on_nbx_tensors(with_core, acme):
    registry = load(with_core, acme, RegistryConfig(prefer=PREFER_ACME))
    device = kernel_device_type()
    x = nbx_core.tensor([1.0, -2.0, 3.0], device=device)
    y = nbx_core.tensor([0.5, 0.5, -4.0], device=device)
    out = registry.call("acme::scaled_add", x, y, alpha=2.0)
    relu = registry.call("aten::relu", x)
    assert isinstance(out, nbx_core.NBXTensor) and out.dtype is nbx_core.float32
    if numeric():  # the aot backend compiles the kernels and runs nothing
        np.testing.assert_array_equal(out.numpy(), np.array([2.0, -1.0, -5.0], np.float32))
        np.testing.assert_array_equal(relu.numpy(), np.array([1.0, 0.0, 3.0], np.float32))


def test_a_collision_between_two_real_distributions_is_refused_naming_both(rival, acme):
    with pytest.raises(DuplicateKernelError) as info:
        load(rival, acme, RegistryConfig(autoload=False, plugins={"acme_relu", "other"}))
    message = str(info.value)
    assert "plugin 'acme_relu' (acme-kernels 0.1.0) -> acme_kernels.ops:relu" in message
    assert "plugin 'other' (other-kernels 1.0) -> other_kernels.ops:relu" in message
    assert "NBX_PREFER=aten::relu=<plugin>" in message


def test_a_preference_resolves_the_collision_and_listings_show_it(rival, acme):
    registry = load(rival, acme, RegistryConfig(prefer=PREFER_ACME))
    assert registry.lookup("aten::relu") is sys.modules["acme_kernels.ops"].relu
    assert [(e.plugin, e.status, e.preferred) for e in registry.entries() if e.name == "aten::relu"] == [
        ("acme_relu", "active", True),
        ("other", "overridden", False),
    ]


def test_the_cli_refuses_the_collision_and_names_both_providers(rival, acme, run_nbx):
    result = run_nbx("registry", "list", *SELECT, path=[rival.root, acme])
    assert result.returncode == 1
    assert "DuplicateKernelError: aten::relu has 2 providers" in result.stderr
    assert "acme-kernels 0.1.0" in result.stderr and "other-kernels 1.0" in result.stderr
    relu_rows = [line.split() for line in result.stdout.splitlines() if line.startswith("aten::relu ")]
    assert [(row[1], row[2]) for row in relu_rows] == [("acme_relu", "conflict"), ("other", "conflict")]


@pytest.mark.parametrize(
    ("flags", "env"), [(["--prefer", "aten::relu=acme_relu"], {}), ([], {"NBX_PREFER": "aten::relu=acme_relu"})]
)
def test_the_cli_resolves_the_collision_by_preference_and_reports_it(rival, acme, run_nbx, flags, env):
    result = run_nbx("registry", "list", *SELECT, *flags, "--format=json", path=[rival.root, acme], env=env)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    document = json.loads(result.stdout)
    relu = [op for op in document["ops"] if op["name"] == "aten::relu"]
    assert [(op["plugin"], op["status"], op["preferred"]) for op in relu] == [
        ("acme_relu", "active", True),
        ("other", "overridden", False),
    ]
    assert document["problems"] == []
