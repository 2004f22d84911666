"""acme's kernels: each is its math as a ``@triton.jit`` function plus one call of nbx-core's
elementwise launcher, which does broadcasting, strides, type promotion and the launch."""

import triton
import triton.language as tl

import nbx_core.runtime.launch  # noqa: F401  (chooses the backend before any kernel is defined)
from nbx_core.runtime.pointwise import pointwise


@triton.jit
def _scaled_add(x, y, sc):
    return x + sc[0] * y


@triton.jit
def _relu(x, sc):
    return tl.where(x > 0, x, 0)


def scaled_add(x, y, alpha=1.0):
    """``acme::scaled_add(Tensor x, Tensor y, Scalar alpha=1) -> Tensor``: x + alpha * y."""
    return pointwise("acme::scaled_add", _scaled_add, x, y, sc=(float(alpha),))


def relu(self):
    """``aten::relu(Tensor self) -> Tensor``: max(self, 0), same dtype."""
    return pointwise("aten::relu", _relu, self)
