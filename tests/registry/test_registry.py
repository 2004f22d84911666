"""The Registry with plugins added directly: lookup, lazy targets, strictness, messages."""

from __future__ import annotations

import importlib
import sys
import textwrap

import pytest

from nbx_core import hookimpl
from nbx_core.errors import (
    DuplicateKernelError,
    InvalidOpNameError,
    KernelImportError,
    PluginLoadError,
    RegistryConfigError,
    RegistryError,
    UnresolvedOpError,
)
from nbx_core.registry import PluginInfo, Registry


class Plugin:
    """A plugin object registering ``(name, target)`` pairs."""

    def __init__(self, *registrations):
        self.registrations = registrations

    @hookimpl
    def nbx_register_kernels(self, registry):
        for name, target in self.registrations:
            registry.register(name, target)


def relu(x):
    return ("relu", x)


def other_relu(x):
    return ("other relu", x)


def two_providers(prefer=None) -> Registry:
    registry = Registry(prefer=prefer)
    registry.add_plugin("acme", Plugin(("aten::relu", relu)), "acme-kernels", "0.1.0")
    registry.add_plugin("other", Plugin(("aten::relu", "other_kernels.ops:relu")), "other-kernels", "1.0")
    return registry


def write_module(site, name: str, source: str) -> None:
    site.packages.add(name)
    (site.root / f"{name}.py").write_text(textwrap.dedent(source))


# -- lookup ----------------------------------------------------------------------------------------


def test_lookup_tries_the_exact_overload_then_the_op():
    def add_tensor(*a):
        return "add.Tensor"

    def add(*a):
        return "add"

    registry = Registry()
    registry.add_plugin("p", Plugin(("aten::add.Tensor", add_tensor), ("aten::add", add)))
    assert registry.lookup("aten::add.Tensor") is add_tensor
    assert registry.lookup("aten::add.Scalar") is add
    assert registry.lookup("aten::add") is add
    assert registry.resolve("aten::add.Scalar").name == "aten::add"


def test_an_overload_is_not_found_through_another_overload():
    registry = Registry()
    registry.add_plugin("p", Plugin(("aten::add.Tensor", relu)))
    with pytest.raises(
        UnresolvedOpError,
        match=r"aten::add\.Scalar: not registered; registered overloads of "
        r"aten::add: aten::add\.Tensor",
    ):
        registry.lookup("aten::add.Scalar")


def test_call_passes_positional_and_keyword_arguments():
    def scaled(x, y, alpha=1):
        return x + alpha * y

    registry = Registry()
    registry.add_plugin("p", Plugin(("acme::scaled", scaled)))
    assert registry.call("acme::scaled", 1, 2, alpha=3) == 7


def test_lookup_of_a_malformed_name_is_an_invalid_op_name_error():
    with pytest.raises(InvalidOpNameError, match="'aten:relu' is not a valid op name"):
        Registry().lookup("aten:relu")


def test_string_targets_are_imported_on_first_lookup_and_cached(site):
    write_module(
        site,
        "lazy_kernels",
        """
        IMPORTS = []
        IMPORTS.append(1)

        def relu(x):
            return ("lazy relu", x)
    """,
    )
    registry = Registry()
    registry.add_plugin("lazy", Plugin(("aten::relu", "lazy_kernels:relu")))
    registry.entries(), registry.plugins(), registry.require(["aten::relu"])
    assert "lazy_kernels" not in sys.modules  # listing and resolving import nothing
    kernel = registry.lookup("aten::relu")
    assert kernel(1) == ("lazy relu", 1)
    assert registry.lookup("aten::relu") is kernel
    assert sys.modules["lazy_kernels"].IMPORTS == [1]


# -- lazy target failures --------------------------------------------------------------------------


def kernel_import_error(site, source: str | None, target: str) -> KernelImportError:
    if source is not None:
        write_module(site, "broken_kernels", source)
    registry = Registry()
    registry.add_plugin("acme", Plugin(("aten::relu", target)), "acme-kernels", "0.1.0")
    with pytest.raises(KernelImportError) as info:
        registry.lookup("aten::relu")
    message = str(info.value)
    assert message.startswith("aten::relu: kernel target")
    assert repr(target) in message and "plugin 'acme' (acme-kernels 0.1.0)" in message
    assert message.endswith("; fix or reinstall acme-kernels")  # the only provider: no preference helps
    return info.value


def test_a_target_whose_module_is_missing(site):
    error = kernel_import_error(site, None, "no_such_kernels.ops:relu")
    assert isinstance(error.__cause__, ModuleNotFoundError)
    assert "ModuleNotFoundError: No module named 'no_such_kernels'" in str(error)


def test_a_target_whose_module_raises_at_import(site):
    error = kernel_import_error(site, "raise RuntimeError('no GPU today')", "broken_kernels:relu")
    assert isinstance(error.__cause__, RuntimeError)
    assert "RuntimeError: no GPU today" in str(error)


def test_a_target_whose_attribute_is_missing(site):
    error = kernel_import_error(site, "def gelu(x):\n    return x\n", "broken_kernels:relu")
    assert isinstance(error.__cause__, AttributeError)
    assert "'relu'" in str(error)


def test_a_target_that_is_not_callable(site):
    error = kernel_import_error(site, "relu = 42\n", "broken_kernels:relu")
    assert "is a int, not a callable" in str(error)


def test_a_failed_target_is_retried_rather_than_cached(site):
    registry = Registry()
    registry.add_plugin("acme", Plugin(("aten::relu", "late_kernels:relu")))
    with pytest.raises(KernelImportError):
        registry.lookup("aten::relu")
    write_module(site, "late_kernels", "def relu(x):\n    return x\n")
    importlib.invalidate_caches()  # the directory changed within the finder's mtime resolution
    assert registry.call("aten::relu", 5) == 5


def test_a_failed_target_with_another_provider_suggests_choosing_the_other():
    registry = two_providers(prefer={"aten::relu": "other"})
    with pytest.raises(KernelImportError) as info:
        registry.lookup("aten::relu")
    message = str(info.value)
    assert "fix or reinstall other-kernels, or choose one with NBX_PREFER=aten::relu=<plugin>" in message


def test_the_op_level_fallback_names_the_registered_key(site):
    registry = Registry()
    registry.add_plugin("acme", Plugin(("aten::add", "no_such_kernels:add")))
    with pytest.raises(KernelImportError, match=r"aten::add\.Tensor \(registered as aten::add\)"):
        registry.lookup("aten::add.Tensor")


# -- duplicates and preferences --------------------------------------------------------------------


def test_two_providers_of_one_name_are_refused_naming_every_provider():
    registry = two_providers()
    with pytest.raises(DuplicateKernelError) as info:
        registry.lookup("aten::relu")
    message = str(info.value)
    assert "aten::relu has 2 providers" in message
    assert f"plugin 'acme' (acme-kernels 0.1.0) -> {__name__}:relu" in message
    assert "plugin 'other' (other-kernels 1.0) -> other_kernels.ops:relu" in message
    assert "NBX_PREFER=aten::relu=<plugin>" in message and "--prefer aten::relu=<plugin>" in message
    assert "NBX_DISABLE_PLUGINS=<plugin>" in message and "--disable-plugin <plugin>" in message
    assert registry.problems() == [info.value]
    assert [(e.plugin, e.status, e.preferred) for e in registry.entries()] == [
        ("acme", "conflict", False),
        ("other", "conflict", False),
    ]
    with pytest.raises(DuplicateKernelError):
        registry.check()


def test_neither_the_first_nor_the_last_provider_wins_through_the_op_fallback():
    registry = two_providers()
    with pytest.raises(DuplicateKernelError):
        registry.lookup("aten::relu.default")


def test_a_preference_chooses_among_providers_and_is_reported():
    registry = two_providers(prefer={"aten::relu": "acme"})
    assert registry.lookup("aten::relu") is relu
    assert registry.problems() == []
    assert [(e.plugin, e.status, e.preferred) for e in registry.entries()] == [
        ("acme", "active", True),
        ("other", "overridden", False),
    ]
    registry.check()


def test_a_preference_for_the_only_provider_is_reported_as_preferred():
    registry = Registry(prefer={"aten::relu": "acme"})
    registry.add_plugin("acme", Plugin(("aten::relu", relu)))
    assert [(e.status, e.preferred) for e in registry.entries()] == [("active", True)]


def test_a_preference_naming_a_plugin_that_does_not_provide_the_op_is_a_problem():
    registry = two_providers(prefer={"aten::relu": "acmee"})
    problems = registry.problems()
    assert [type(p) for p in problems] == [RegistryConfigError, DuplicateKernelError]
    message = str(problems[0])
    assert "preference aten::relu=acmee" in message and "plugin 'acmee' (not installed)" in message
    assert "plugin 'acme' (acme-kernels 0.1.0)" in message and "plugin 'other' (other-kernels 1.0)" in message


def test_a_preference_for_an_op_nobody_registers_is_a_problem():
    registry = Registry(prefer={"aten::gelu": "acme"})
    registry.add_plugin("acme", Plugin(("aten::relu", relu)))
    (problem,) = registry.problems()
    assert isinstance(problem, RegistryConfigError)
    expected = "plugin 'acme' (loaded), which does not provide aten::gelu; providers of aten::gelu: none"
    assert expected in str(problem)


def test_a_malformed_preference_is_refused():
    with pytest.raises(InvalidOpNameError, match="preference .*'relu' is not a valid op name"):
        Registry(prefer={"relu": "acme"})


# -- require and missing names ---------------------------------------------------------------------


def test_require_lists_every_missing_name_in_one_error():
    registry = two_providers()
    registry.add_plugin("third", Plugin(("aten::abs", relu)), "third-kernels", "2.0")
    with pytest.raises(UnresolvedOpError) as info:
        registry.require(
            ["aten::abs", "aten::conv2d", "acme::fused_rope", "aten::relu", "aten::no_such_op", "aten::conv2d"]
        )
    message = str(info.value)
    assert message.startswith("4 of 5 required ops cannot be resolved:")
    assert "aten::conv2d: provided by nbx-conv, which is not installed\n" in message
    assert "acme::fused_rope: no installed plugin registers it; namespace 'acme' is not NBX's" in message
    assert "aten::relu has 2 providers" in message
    assert "aten::no_such_op: no installed plugin registers it, and no NBX distribution provides" in message
    assert "aten::abs" not in message
    assert message.endswith("\nInstall the missing distributions: pip install nbx-conv")


def test_require_sorts_the_missing_names_and_ends_with_one_install_line():
    registry = Registry()
    with pytest.raises(UnresolvedOpError) as info:
        registry.require(["aten::relu", "aten::mm", "aten::layer_norm", "aten::gelu", "aten::linear", "aten::add"])
    first, *rows, last = str(info.value).split("\n")
    assert first == "6 of 6 required ops cannot be resolved:"
    assert [row.split(":", 3)[2].strip() for row in rows] == ["add", "gelu", "layer_norm", "linear", "mm", "relu"]
    assert all(row.endswith("which is not installed") for row in rows)  # no pip install per row
    assert last == "Install the missing distributions: pip install nbx-elementwise nbx-linalg nbx-norm"


def test_require_adds_no_install_line_when_installing_would_not_help():
    registry = Registry()
    registry.record_plugin(PluginInfo("conv", "nbx-conv", "0.1.0", 0, "disabled", "disabled by NBX_DISABLE_PLUGINS"))
    with pytest.raises(UnresolvedOpError) as info:
        registry.require(["aten::conv2d", "acme::fused_rope"])
    assert "pip install" not in str(info.value)


def test_require_returns_the_entries_it_resolved():
    registry = two_providers(prefer={"aten::relu": "other"})
    (entry,) = registry.require(["aten::relu.default"]).values()
    assert (entry.name, entry.plugin, entry.target, entry.preferred) == (
        "aten::relu",
        "other",
        "other_kernels.ops:relu",
        True,
    )


@pytest.mark.parametrize(
    ("info", "expected"),
    [
        (
            PluginInfo("conv", "nbx-conv", "0.1.0", 0, "disabled", "disabled by NBX_DISABLE_PLUGINS"),
            "aten::conv2d: provided by nbx-conv, whose plugin 'conv' is disabled by NBX_DISABLE_PLUGINS",
        ),
        (
            PluginInfo("conv", "nbx_conv", "0.1.0", 0, "failed", error=PluginLoadError("boom")),
            "aten::conv2d: provided by nbx-conv, whose plugin 'conv' failed to load",
        ),
        (
            PluginInfo("conv", "nbx-conv", "0.1.0", 3, "loaded"),
            "provided by nbx-conv, but the installed nbx-conv 0.1.0 does not register it: upgrade nbx-conv",
        ),
    ],
)
def test_a_missing_first_party_name_says_what_became_of_its_distribution(info, expected):
    registry = Registry()
    registry.record_plugin(info)
    with pytest.raises(UnresolvedOpError) as error:
        registry.require(["aten::conv2d"])
    assert expected in str(error.value)


def test_a_missing_core_name_names_nbx_core():
    assert Registry().explain_missing("aten::view") == (
        "aten::view: provided by nbx-core, which is not installed (pip install nbx-core)"
    )


# -- plugins that fail -----------------------------------------------------------------------------


def test_a_plugin_whose_hook_raises_contributes_nothing():
    class Failing:
        @hookimpl
        def nbx_register_kernels(self, registry):
            registry.register("acme::first", relu)
            raise ValueError("out of coffee")

    registry = Registry()
    with pytest.raises(PluginLoadError) as info:
        registry.add_plugin("acme", Failing(), "acme-kernels", "0.1.0")
    message = str(info.value)
    assert "plugin 'acme' (acme-kernels 0.1.0) failed to load" in message
    assert "its nbx_register_kernels hook raised ValueError: out of coffee" in message
    assert "NBX_DISABLE_PLUGINS=acme" in message and "--disable-plugin acme" in message
    assert isinstance(info.value.__cause__, ValueError)
    assert registry.entries() == []
    assert not registry.plugin_manager.has_plugin("acme")
    (plugin,) = registry.plugins()
    assert (plugin.name, plugin.status, plugin.ops, plugin.error) == ("acme", "failed", 0, info.value)
    assert registry.problems() == [info.value]
    with pytest.raises(UnresolvedOpError):
        registry.lookup("acme::first")


def test_an_invalid_name_fails_the_plugin_and_is_its_cause():
    registry = Registry()
    with pytest.raises(PluginLoadError) as info:
        registry.add_plugin("acme", Plugin(("aten:relu", relu)), "acme-kernels", "0.1.0")
    assert isinstance(info.value.__cause__, InvalidOpNameError)
    assert "InvalidOpNameError" in str(info.value) and "'aten:relu'" in str(info.value)


class _Unmarked:
    def nbx_register_kernels(self, registry):
        registry.register("aten::relu", relu)


class _WrongArgument:
    @hookimpl
    def nbx_register_kernels(self, reg):
        pass


class _Misspelt:
    @hookimpl
    def nbx_register_kernel(self, registry):
        pass


@pytest.mark.parametrize(
    ("plugin", "match"),
    [
        pytest.param(_Unmarked, "defines no nbx_register_kernels hook marked with @nbx_core.hookimpl", id="unmarked"),
        pytest.param(_WrongArgument, "does not fit the nbx hookspec.*'reg'", id="wrong-argument-name"),
        pytest.param(_Misspelt, "does not fit the nbx hookspec.*nbx_register_kernel", id="misspelt"),
    ],
)
def test_a_hook_that_does_not_fit_the_hookspec_is_refused(plugin, match):
    registry = Registry()
    with pytest.raises(PluginLoadError, match=match):
        registry.add_plugin("acme", plugin())
    registry.add_plugin("other", Plugin(("aten::relu", relu)))  # the failure left nothing behind
    assert registry.problems() != [] and registry.lookup("aten::relu") is relu


def test_a_failing_core_plugin_asks_for_a_reinstall_not_a_disable():
    class Failing:
        @hookimpl
        def nbx_register_kernels(self, registry):
            raise ImportError("half installed")

    with pytest.raises(PluginLoadError, match="nbx-core is broken: reinstall it") as info:
        Registry().add_plugin("core", Failing(), "nbx-core", "0.1.0")
    assert "NBX_DISABLE_PLUGINS" not in str(info.value)


def test_a_plugin_name_can_be_used_once():
    registry = Registry()
    registry.add_plugin("acme", Plugin(("aten::relu", relu)), "acme-kernels", "0.1.0")
    with pytest.raises(RegistryError, match=r"plugin name 'acme' is already taken by plugin 'acme' \(acme-"):
        registry.add_plugin("acme", Plugin(("aten::gelu", relu)))


# -- listing ---------------------------------------------------------------------------------------


def test_entries_carry_provenance_and_split_names():
    registry = Registry()
    plugin = Plugin(("aten::add.Tensor", "pkg.mod:add"), ("acme::rope", relu))
    registry.add_plugin("p", plugin, "p-dist", "3.1")
    entries = registry.entries()
    assert [(e.name, e.namespace, e.op, e.overload) for e in entries] == [
        ("acme::rope", "acme", "acme::rope", None),
        ("aten::add.Tensor", "aten", "aten::add", "Tensor"),
    ]
    assert {(e.plugin, e.distribution, e.version) for e in entries} == {("p", "p-dist", "3.1")}
    assert entries[1].target == "pkg.mod:add"
    (plugin,) = registry.plugins()
    assert (plugin.name, plugin.ops, plugin.status) == ("p", 2, "loaded")


def test_check_lists_several_problems_in_one_error_of_their_common_class():
    registry = two_providers()
    registry.add_plugin("third", Plugin(("aten::gelu", relu)))
    registry.add_plugin("fourth", Plugin(("aten::gelu", other_relu)))
    with pytest.raises(DuplicateKernelError) as info:
        registry.check()
    assert str(info.value).startswith("2 registry problems:")
    assert "aten::gelu has 2 providers" in str(info.value) and "aten::relu has 2 providers" in str(info.value)


def test_check_of_mixed_problems_raises_a_registry_error():
    registry = two_providers()
    with pytest.raises(PluginLoadError):
        registry.add_plugin("broken", Plugin(("bad", relu)))
    with pytest.raises(RegistryError) as info:
        registry.check()
    assert type(info.value) is RegistryError
    assert "plugin 'broken'" in str(info.value) and "aten::relu has 2 providers" in str(info.value)
