"""The Registrar a plugin's hook receives: name and target validation, register_module."""

from __future__ import annotations

import pytest

from nbx_core.errors import DuplicateKernelError, InvalidOpNameError, InvalidTargetError
from nbx_core.registry import Provenance, Registrar


@pytest.fixture
def registrar() -> Registrar:
    return Registrar(Provenance("acme", "acme-kernels", "0.1.0"))


def registered(registrar: Registrar) -> dict[str, str]:
    return {name: r.display for name, r in registrar._pending.items()}


def test_registrar_exposes_its_provenance(registrar):
    assert (registrar.plugin, registrar.distribution, registrar.version) == ("acme", "acme-kernels", "0.1.0")


@pytest.mark.parametrize("name", ["aten::add", "aten::add.Tensor", "acme::fused_rope", "aten::__and__.Scalar",
                                  "_ns::_op._ov1"])
def test_valid_names_are_accepted(registrar, name):
    registrar.register(name, "acme_kernels.ops:kernel")
    assert name in registered(registrar)


@pytest.mark.parametrize("name", ["aten:add", "add", "aten::", "::add", "aten::add.", "aten::add.Tensor.out",
                                  "aten::1add", "aten::add-x", "aten ::add", "aten::add ", "", "a.b::c"])
def test_malformed_names_raise_naming_plugin_and_name(registrar, name):
    with pytest.raises(InvalidOpNameError) as info:
        registrar.register(name, "acme_kernels.ops:kernel")
    message = str(info.value)
    assert "plugin 'acme' (acme-kernels 0.1.0)" in message
    assert repr(name) in message
    assert "'namespace::op' or 'namespace::op.overload'" in message


def test_a_name_that_is_not_a_string_is_refused(registrar):
    with pytest.raises(InvalidOpNameError, match="None is not a valid op name"):
        registrar.register(None, "acme_kernels.ops:kernel")


@pytest.mark.parametrize("target", ["acme_kernels.ops", "acme kernels:relu", ":relu", "acme_kernels.ops:",
                                    "acme_kernels..ops:relu", "acme_kernels.ops:relu:x"])
def test_malformed_string_targets_raise_naming_plugin_op_and_target(registrar, target):
    with pytest.raises(InvalidTargetError) as info:
        registrar.register("aten::relu", target)
    message = str(info.value)
    assert "plugin 'acme'" in message and "aten::relu" in message and repr(target) in message
    assert "'package.module:attr'" in message


def test_a_target_that_is_neither_string_nor_callable_is_refused(registrar):
    with pytest.raises(InvalidTargetError, match=r"plugin 'acme'.*aten::relu is a int; pass a callable"):
        registrar.register("aten::relu", 42)


def test_dotted_attribute_targets_and_callables_are_accepted(registrar):
    def relu(x):
        return x

    registrar.register("aten::relu", relu)
    registrar.register("aten::gelu", "acme_kernels.ops:Activations.gelu")
    shown = registered(registrar)
    assert shown["aten::relu"] == f"{__name__}:{relu.__qualname__}"
    assert shown["aten::gelu"] == "acme_kernels.ops:Activations.gelu"


def test_registering_a_name_twice_in_one_plugin_names_both_targets(registrar):
    registrar.register("aten::relu", "acme_kernels.ops:relu")
    with pytest.raises(DuplicateKernelError) as info:
        registrar.register("aten::relu", "acme_kernels.fast:relu")
    message = str(info.value)
    assert "plugin 'acme' (acme-kernels 0.1.0) registers aten::relu twice" in message
    assert "acme_kernels.ops:relu" in message and "acme_kernels.fast:relu" in message


def test_register_module_maps_each_name_to_the_function_named_after_its_op(registrar):
    names = ["aten::abs", "aten::exp", "aten::add.Tensor", "aten::add.Scalar"]
    registrar.register_module("nbx_elementwise.unary", names)
    assert registered(registrar) == {
        "aten::abs": "nbx_elementwise.unary:abs",
        "aten::exp": "nbx_elementwise.unary:exp",
        "aten::add.Tensor": "nbx_elementwise.unary:add",
        "aten::add.Scalar": "nbx_elementwise.unary:add",
    }


def test_register_module_validates_names_and_module(registrar):
    with pytest.raises(InvalidOpNameError, match=r"plugin 'acme'.*'aten:abs'"):
        registrar.register_module("nbx_elementwise.unary", ["aten:abs"])
    with pytest.raises(InvalidTargetError, match="'not a module:abs'"):
        registrar.register_module("not a module", ["aten::abs"])


def test_a_plugin_added_without_distribution_says_so():
    registrar = Registrar(Provenance("embedded"))
    with pytest.raises(InvalidOpNameError, match=r"plugin 'embedded' \(added directly, no distribution\)"):
        registrar.register("bad", "m:f")
