"""Plugin acme_relu: acme's own kernel for aten::relu, which nbx-elementwise provides too.

It is declared in the opt-in group (nbx.plugins.opt_in), so installing acme-kernels changes nothing
for aten::relu; ``NBX_PREFER=aten::relu=acme_relu`` (``--prefer aten::relu=acme_relu``) loads it and
chooses its kernel."""

from nbx_core import hookimpl


@hookimpl
def nbx_register_kernels(registry):
    # aten::relu -> acme_kernels.ops:relu
    registry.register_module("acme_kernels.ops", ["aten::relu"])
