"""The kernel runtime: the launch seam, device-side checks, launch plans, generated pointwise kernels
and nbx-core's own Triton kernels (:mod:`nbx_core.runtime.kernels`).

Importing :mod:`nbx_core.runtime.launch` configures Triton for the backend, so a kernel module
imports it before its ``@triton.jit`` definitions. This package module imports nothing, so that
reading :mod:`nbx_core.runtime.checks` does not pull in Triton.
"""
