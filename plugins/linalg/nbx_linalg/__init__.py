"""nbx-linalg: matrix products, einsum, distances and LSTM for NBX.

Importing the package imports no Triton; kernels load on first use of an op.
"""

from __future__ import annotations

from .precision import get_float32_matmul_precision, set_float32_matmul_precision

__all__ = ["get_float32_matmul_precision", "set_float32_matmul_precision"]
