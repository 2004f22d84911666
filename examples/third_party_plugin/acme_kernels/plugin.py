"""Registration only: this module imports no kernel, no numpy and no Triton, so that listing the
registry stays fast. The targets are imported the first time their op is looked up."""

from nbx_core import hookimpl


@hookimpl
def nbx_register_kernels(registry):
    # acme::scaled_add -> acme_kernels.ops:scaled_add
    registry.register_module("acme_kernels.ops", ["acme::scaled_add"])
