"""Entry-point discovery and selection, with real distributions written into a temporary site."""

from __future__ import annotations

import sys
import threading
from importlib import metadata

import pytest

from nbx_core.errors import (
    DuplicateKernelError,
    InvalidOpNameError,
    PluginLoadError,
    RegistryConfigError,
    RegistryError,
    UnresolvedOpError,
)
from nbx_core.registry import (
    Registry,
    RegistryConfig,
    discover_plugins,
    get_registry,
    load_registry,
    reset_registry,
    set_registry,
)


def load(site, config=None, strict=False) -> Registry:
    return load_registry(config or RegistryConfig(), strict=strict, path=[str(site.root)])


def statuses(registry: Registry) -> dict[str, tuple]:
    return {p.name: (p.status, p.distribution, p.version, p.ops) for p in registry.plugins()}


# -- discovery -------------------------------------------------------------------------------------


def test_plugins_load_with_their_distribution_and_version_and_import_no_kernel(site):
    site.add_core()
    site.add_plugin("acme-kernels", "0.3.0", "acme", ["acme::fused_rope", "aten::gelu"])
    registry = load(site, strict=True)
    assert statuses(registry) == {
        "core": ("loaded", "nbx-core", "0.1.0", 2),
        "acme": ("loaded", "acme-kernels", "0.3.0", 2),
    }
    entry = registry.resolve("acme::fused_rope")
    assert (entry.plugin, entry.distribution, entry.version, entry.target) == (
        "acme",
        "acme-kernels",
        "0.3.0",
        "acme_kernels.ops:fused_rope",
    )
    assert "acme_kernels.plugin" in sys.modules and "acme_kernels.ops" not in sys.modules
    assert registry.call("aten::gelu", 1) == ("aten::gelu", (1,))
    assert registry.plugin_manager.has_plugin("acme")


def test_two_distributions_declaring_one_plugin_name_load_neither(site):
    site.add_core()
    site.add_plugin("acme-kernels", "0.1.0", "acme", ["acme::a"])
    site.add_plugin("acme-fork", "9.9", "acme", ["acme::b"])
    assert len(discover_plugins([str(site.root)])["acme"]) == 2
    registry = load(site)
    problems = registry.problems()
    assert len(problems) == 1 and type(problems[0]) is RegistryError
    message = str(problems[0])
    assert "plugin name 'acme' is declared by 2 distributions" in message
    assert "acme-kernels 0.1.0 (acme_kernels.plugin)" in message
    assert "acme-fork 9.9 (acme_fork.plugin)" in message
    assert [(p.distribution, p.status) for p in registry.plugins() if p.name == "acme"] == [
        ("acme-kernels", "failed"),
        ("acme-fork", "failed"),
    ]
    for name in ("acme::a", "acme::b"):
        with pytest.raises(UnresolvedOpError):
            registry.resolve(name)
    with pytest.raises(RegistryError, match="declared by 2 distributions"):
        load(site, strict=True)


def test_a_clash_of_a_disabled_plugin_name_is_no_problem(site):
    site.add_core()
    site.add_plugin("acme-kernels", "0.1.0", "acme", ["acme::a"])
    site.add_plugin("acme-fork", "9.9", "acme", ["acme::b"])
    registry = load(site, RegistryConfig(disable={"acme"}), strict=True)
    assert [p.status for p in registry.plugins() if p.name == "acme"] == ["disabled", "disabled"]


def test_a_plugin_module_that_fails_to_import(site):
    site.add_core()
    site.add_dist(
        "acme-kernels",
        "0.1.0",
        {"acme": "acme_kernels.plugin"},
        {"acme_kernels.plugin": "import triton_that_is_not_there\n"},
    )
    site.add_plugin("other-kernels", "1.0", "other", ["aten::relu"])
    registry = load(site)
    (problem,) = registry.problems()
    assert isinstance(problem, PluginLoadError)
    message = str(problem)
    assert "plugin 'acme' (acme-kernels 0.1.0) failed to load: importing acme_kernels.plugin" in message
    assert "ModuleNotFoundError: No module named 'triton_that_is_not_there'" in message
    assert "NBX_DISABLE_PLUGINS=acme" in message
    assert isinstance(problem.__cause__, ModuleNotFoundError)
    assert statuses(registry)["other"][0] == "loaded"  # the others still load
    with pytest.raises(PluginLoadError, match="importing acme_kernels.plugin raised") as info:
        load(site, strict=True)
    assert isinstance(info.value.__cause__, ModuleNotFoundError)


def test_an_entry_point_naming_a_missing_module(site):
    site.add_core()
    site.add_dist("acme-kernels", "0.1.0", {"acme": "acme_kernels.plugn"}, {"acme_kernels.plugin": ""})
    (problem,) = load(site).problems()
    assert "importing acme_kernels.plugn raised ModuleNotFoundError" in str(problem)


def test_a_discovered_plugin_whose_hook_raises(site):
    site.add_core()
    source = "from nbx_core import hookimpl\n\n@hookimpl\ndef nbx_register_kernels(registry):\n    1 / 0\n"
    site.add_dist("acme-kernels", "0.1.0", {"acme": "acme_kernels.plugin"}, {"acme_kernels.plugin": source})
    with pytest.raises(PluginLoadError) as info:
        load(site, strict=True)
    assert "plugin 'acme' (acme-kernels 0.1.0) failed to load" in str(info.value)
    assert "hook raised ZeroDivisionError: division by zero" in str(info.value)
    assert isinstance(info.value.__cause__, ZeroDivisionError)


def test_a_missing_core_plugin_means_nbx_core_is_not_installed(site):
    site.add_plugin("acme-kernels", "0.1.0", "acme", ["acme::a"])
    with pytest.raises(
        PluginLoadError,
        match="plugin 'core' is not among the installed nbx.plugins entry points: nbx-core is not installed",
    ):
        load(site, strict=True)


def test_duplicates_across_distributions_are_refused_and_a_preference_resolves_them(site):
    site.add_core()
    site.add_plugin("acme-kernels", "0.1.0", "acme", ["aten::relu"])
    site.add_plugin("other-kernels", "1.0", "other", ["aten::relu"])
    with pytest.raises(DuplicateKernelError) as info:
        load(site, strict=True)
    assert "plugin 'acme' (acme-kernels 0.1.0) -> acme_kernels.ops:relu" in str(info.value)
    assert "plugin 'other' (other-kernels 1.0) -> other_kernels.ops:relu" in str(info.value)
    registry = load(site, RegistryConfig(prefer={"aten::relu": "other"}), strict=True)
    assert registry.resolve("aten::relu").plugin == "other"


# -- selection -------------------------------------------------------------------------------------


@pytest.fixture
def three(site):
    site.add_core()
    site.add_plugin("acme-kernels", "0.1.0", "acme", ["acme::a"])
    site.add_plugin("nbx-conv", "0.1.0", "conv", ["aten::conv2d"])
    return site


def test_a_disabled_plugin_is_listed_with_its_reason_and_named_when_its_op_is_missing(three):
    sys.modules.pop("nbx_conv.plugin", None)  # the real nbx-conv may have been loaded by another test
    registry = load(three, RegistryConfig(disable={"conv"}), strict=True)
    conv = next(p for p in registry.plugins() if p.name == "conv")
    assert (conv.status, conv.reason) == ("disabled", "disabled by NBX_DISABLE_PLUGINS / --disable-plugin")
    assert "nbx_conv.plugin" not in sys.modules
    with pytest.raises(
        UnresolvedOpError,
        match="aten::conv2d: provided by nbx-conv, whose plugin 'conv' is disabled by NBX_DISABLE_PLUGINS",
    ):
        registry.require(["aten::conv2d"])


def test_autoload_off_loads_core_and_the_allow_list_only(three):
    registry = load(three, RegistryConfig(autoload=False, plugins={"acme"}), strict=True)
    assert {n: s[0] for n, s in statuses(registry).items()} == {"core": "loaded", "acme": "loaded", "conv": "disabled"}
    assert "not in NBX_PLUGINS / --plugins" in next(p.reason for p in registry.plugins() if p.name == "conv")
    registry = load(three, RegistryConfig(autoload=False), strict=True)
    assert [p.name for p in registry.plugins() if p.status == "loaded"] == ["core"]


@pytest.mark.parametrize(
    ("config", "source"),
    [
        (RegistryConfig(disable={"acmee"}), "NBX_DISABLE_PLUGINS / --disable-plugin names 'acmee'"),
        (RegistryConfig(autoload=False, plugins={"acme", "cnov"}), "NBX_PLUGINS / --plugins names 'cnov'"),
    ],
)
def test_a_selection_naming_an_unknown_plugin_is_refused(three, config, source):
    with pytest.raises(RegistryConfigError) as info:
        load(three, config)
    assert source in str(info.value)
    assert "which no installed distribution provides; installed plugins: acme, conv, core" in str(info.value)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"disable": {"core"}}, "plugin 'core' cannot be disabled"),
        ({"plugins": {"acme"}}, "an allow-list of plugins (acme) needs autoload off"),
        ({"autoload": False, "plugins": {"a"}, "disable": {"a"}}, "plugins both allowed and disabled: a"),
    ],
)
def test_contradictory_configs_are_refused(kwargs, message):
    with pytest.raises(RegistryConfigError) as info:
        RegistryConfig(**kwargs)
    assert message in str(info.value)


def test_core_is_loaded_even_when_autoload_is_off_and_not_allowed(three):
    registry = load(three, RegistryConfig(autoload=False, plugins={"conv"}), strict=True)
    assert statuses(registry)["core"][0] == "loaded"


# -- opt-in plugins --------------------------------------------------------------------------------


@pytest.fixture
def opt_in(site):
    """core, other (aten::relu) and acme_relu, an opt-in plugin replacing aten::relu."""
    site.add_core()
    site.add_plugin("other-kernels", "1.0", "other", ["aten::relu"])
    site.add_plugin("acme-kernels", "0.1.0", "acme_relu", ["aten::relu"], opt_in=True)
    return site


def test_an_opt_in_plugin_is_discovered_listed_and_not_loaded(opt_in):
    (acme,) = discover_plugins([str(opt_in.root)])["acme_relu"]
    assert (acme.opt_in, acme.distribution, acme.entry_point.value) == (True, "acme-kernels", "acme_kernels.plugin")
    registry = load(opt_in, strict=True)  # no DuplicateKernelError: acme_relu is not loaded
    info = next(p for p in registry.plugins() if p.name == "acme_relu")
    assert (info.status, info.reason) == (
        "disabled",
        "opt-in: a preference loads it (NBX_PREFER=OP=acme_relu / --prefer OP=acme_relu)",
    )
    assert registry.resolve("aten::relu").plugin == "other"
    assert "acme_kernels.plugin" not in sys.modules


def test_a_preference_naming_an_opt_in_plugin_loads_it_and_chooses_its_kernel(opt_in):
    registry = load(opt_in, RegistryConfig(prefer={"aten::relu": "acme_relu"}), strict=True)
    assert [(e.plugin, e.status) for e in registry.entries() if e.name == "aten::relu"] == [
        ("acme_relu", "active"),
        ("other", "overridden"),
    ]


def test_an_opt_in_plugin_in_the_allow_list_loads_and_collides_like_any_other(opt_in):
    config = RegistryConfig(autoload=False, plugins={"acme_relu", "other"})
    with pytest.raises(DuplicateKernelError, match="aten::relu has 2 providers"):
        load(opt_in, config, strict=True)
    config = RegistryConfig(autoload=False, plugins={"acme_relu"}, prefer={"aten::gelu": "other"})
    assert statuses(load(opt_in, config))["acme_relu"][0] == "loaded"


def test_disabling_an_opt_in_plugin_wins_over_a_preference(opt_in):
    registry = load(opt_in, RegistryConfig(disable={"acme_relu"}, prefer={"aten::relu": "acme_relu"}))
    assert statuses(registry)["acme_relu"][0] == "disabled"
    (problem,) = registry.problems()
    assert "names plugin 'acme_relu' (disabled), which does not provide aten::relu" in str(problem)


# -- the environment -------------------------------------------------------------------------------


def test_from_env_reads_every_variable():
    config = RegistryConfig.from_env(
        {
            "NBX_DISABLE_PLUGINS": "a, b,,",
            "NBX_DISABLE_PLUGIN_AUTOLOAD": "1",
            "NBX_PLUGINS": "c",
            "NBX_PREFER": "aten::gelu=acme, aten::relu.default=other",
        }
    )
    assert config == RegistryConfig(
        disable={"a", "b"}, autoload=False, plugins={"c"}, prefer={"aten::gelu": "acme", "aten::relu.default": "other"}
    )
    assert RegistryConfig.from_env({}) == RegistryConfig()


def test_from_env_defaults_to_os_environ(monkeypatch):
    monkeypatch.setenv("NBX_DISABLE_PLUGINS", "acme")
    assert RegistryConfig.from_env().disable == {"acme"}


@pytest.mark.parametrize(
    ("environ", "error", "message"),
    [
        ({"NBX_DISABLE_PLUGIN_AUTOLOAD": "maybe"}, RegistryConfigError, "AUTOLOAD='maybe': use 1 or 0"),
        ({"NBX_PLUGINS": "acme"}, RegistryConfigError, "NBX_DISABLE_PLUGIN_AUTOLOAD=1 with NBX_PLUGINS"),
        ({"NBX_DISABLE_PLUGINS": "core"}, RegistryConfigError, "plugin 'core' cannot be disabled"),
        ({"NBX_PREFER": "aten::relu"}, RegistryConfigError, "NBX_PREFER: 'aten::relu' is not of the form"),
        ({"NBX_PREFER": "aten::relu="}, RegistryConfigError, "NBX_PREFER: 'aten::relu=' is not of the form"),
        ({"NBX_PREFER": "relu=acme"}, InvalidOpNameError, "NBX_PREFER: 'relu' is not a valid op name"),
        (
            {"NBX_PREFER": "aten::relu=a,aten::relu=b"},
            RegistryConfigError,
            "NBX_PREFER: aten::relu is preferred from both 'a' and 'b'",
        ),
    ],
)
def test_bad_environment_values_are_refused(environ, error, message):
    with pytest.raises(error) as info:
        RegistryConfig.from_env(environ)
    assert message in str(info.value)


def test_with_overrides_layers_flags_on_the_environment():
    base = RegistryConfig(disable={"a"}, prefer={"aten::relu": "x", "aten::gelu": "y"})
    config = base.with_overrides(disable=["b"], plugins=["c"], prefer={"aten::relu": "z"})
    assert config == RegistryConfig(
        disable={"a", "b"}, autoload=False, plugins={"c"}, prefer={"aten::relu": "z", "aten::gelu": "y"}
    )
    assert base.with_overrides(autoload=False).autoload is False
    assert base.with_overrides() == base


# -- the default registry --------------------------------------------------------------------------


def test_the_default_registry_loads_core_through_its_entry_point(site, monkeypatch):
    site.add_core()  # shadows the installed nbx-core's metadata: first on sys.path
    monkeypatch.setenv("NBX_DISABLE_PLUGIN_AUTOLOAD", "1")
    registry = get_registry()
    assert registry is get_registry()
    (core,) = (p for p in registry.plugins() if p.status == "loaded")  # others installed here are disabled
    assert (core.name, core.distribution, core.version) == ("core", "nbx-core", "0.1.0")
    assert registry.resolve("aten::view").target == "fake_core.ops:view"
    reset_registry()
    assert get_registry() is not registry


def test_the_default_registry_is_strict_and_retried_after_a_failure(site, monkeypatch):
    site.add_core()
    site.add_plugin("acme-kernels", "0.1.0", "acme", ["aten::view"])
    monkeypatch.setenv("NBX_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.setenv("NBX_PLUGINS", "acme")
    with pytest.raises(DuplicateKernelError, match="aten::view has 2 providers"):
        get_registry()
    monkeypatch.setenv("NBX_PREFER", "aten::view=acme")
    assert get_registry().resolve("aten::view").plugin == "acme"


def test_reset_registry_takes_a_config_and_set_registry_installs_one(site):
    site.add_core()
    site.add_plugin("acme-kernels", "0.1.0", "acme", ["acme::a"])
    reset_registry(RegistryConfig(autoload=False))
    assert [p.name for p in get_registry().plugins() if p.status == "loaded"] == ["core"]
    mine = Registry()
    set_registry(mine)
    assert get_registry() is mine


def test_the_installed_nbx_core_declares_core_as_nbx_core_ops_plugin():
    try:
        dist = metadata.distribution("nbx-core")
    except metadata.PackageNotFoundError:
        pytest.skip("nbx-core is not installed (pip install --no-deps -e .): no entry point to check")
    (entry_point,) = dist.entry_points.select(group="nbx.plugins")
    assert (entry_point.name, entry_point.value) == ("core", "nbx_core.ops.plugin")


EAGER_PLUGIN_SOURCE = """
import nbx_core
from nbx_core import hookimpl

@hookimpl
def nbx_register_kernels(registry):
    nbx_core.zeros(2, 3).view(3, 2)  # a tensor method calls get_registry(), which is loading
"""


def test_a_plugin_using_the_registry_while_it_loads_fails_to_load_instead_of_hanging(site):
    site.add_core()
    site.add_dist("nbx-eager", "1.0", {"eager": "eager_plugin.plugin"}, {"eager_plugin.plugin": EAGER_PLUGIN_SOURCE})
    outcome: list[BaseException] = []

    def load() -> None:
        try:
            get_registry()
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=load, daemon=True)
    thread.start()
    thread.join(timeout=30)
    assert not thread.is_alive(), "get_registry() deadlocked on its own lock"
    (error,) = outcome
    assert isinstance(error, PluginLoadError)
    assert "plugin 'eager' (nbx-eager 1.0) failed to load: its nbx_register_kernels hook raised" in str(error)
    assert "RegistryError: the process-wide registry was used while it loads" in str(error)
