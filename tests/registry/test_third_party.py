"""The example third-party plugin, acme-kernels, installed with pip into a private directory."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

import nbx_core
from nbx_core.backend import kernel_device_type
from nbx_core.errors import DuplicateKernelError
from nbx_core.registry import RegistryConfig, load_registry
from nbx_core.testing import numeric

SELECT = ["--no-autoload", "--plugins", "acme,other"]  # ignore any other plugin installed here


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


def test_acme_is_listed_from_its_installed_distribution_without_importing_its_kernels(with_core, acme):
    registry = load(with_core, acme)
    acme_plugin = next(p for p in registry.plugins() if p.name == "acme")
    assert (acme_plugin.distribution, acme_plugin.version, acme_plugin.ops, acme_plugin.status) == (
        "acme-kernels", "0.1.0", 2, "loaded"
    )
    assert [(e.name, e.target) for e in registry.entries() if e.plugin == "acme"] == [
        ("acme::scaled_add", "acme_kernels.ops:scaled_add"), ("aten::relu", "acme_kernels.ops:relu")
    ]
    assert "acme_kernels.plugin" in sys.modules and "acme_kernels.ops" not in sys.modules


def test_acme_kernels_run_on_nbx_tensors(with_core, acme):
    registry = load(with_core, acme)
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
        load(rival, acme)
    message = str(info.value)
    assert "plugin 'acme' (acme-kernels 0.1.0) -> acme_kernels.ops:relu" in message
    assert "plugin 'other' (other-kernels 1.0) -> other_kernels.ops:relu" in message
    assert "NBX_PREFER=aten::relu=<plugin>" in message


def test_a_preference_resolves_the_collision_and_listings_show_it(rival, acme):
    registry = load(rival, acme, RegistryConfig(prefer={"aten::relu": "acme"}))
    assert registry.lookup("aten::relu") is sys.modules["acme_kernels.ops"].relu
    assert [(e.plugin, e.status, e.preferred) for e in registry.entries() if e.name == "aten::relu"] == [
        ("acme", "active", True), ("other", "overridden", False)
    ]


def test_the_cli_refuses_the_collision_and_names_both_providers(rival, acme, run_nbx):
    result = run_nbx("registry", "list", *SELECT, path=[rival.root, acme])
    assert result.returncode == 1
    assert "DuplicateKernelError: aten::relu has 2 providers" in result.stderr
    assert "acme-kernels 0.1.0" in result.stderr and "other-kernels 1.0" in result.stderr
    relu_rows = [line.split() for line in result.stdout.splitlines() if line.startswith("aten::relu ")]
    assert [(row[1], row[-1]) for row in relu_rows] == [("acme", "conflict"), ("other", "conflict")]


@pytest.mark.parametrize(
    ("flags", "env"), [(["--prefer", "aten::relu=acme"], {}), ([], {"NBX_PREFER": "aten::relu=acme"})]
)
def test_the_cli_resolves_the_collision_by_preference_and_reports_it(rival, acme, run_nbx, flags, env):
    result = run_nbx("registry", "list", *SELECT, *flags, "--format=json", path=[rival.root, acme], env=env)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    document = json.loads(result.stdout)
    relu = [op for op in document["ops"] if op["name"] == "aten::relu"]
    assert [(op["plugin"], op["status"], op["preferred"]) for op in relu] == [
        ("acme", "active", True), ("other", "overridden", False)
    ]
    assert document["problems"] == []
