"""nbx-elementwise: ATen's elementwise ops as Triton kernels on nbx-core's pointwise launcher.

Importing the package imports no Triton; kernel modules load on first use of an op.
"""

__version__ = "0.1.0"
