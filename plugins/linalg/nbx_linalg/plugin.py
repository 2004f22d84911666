"""Registers nbx-linalg's kernels under their ATen names (no Triton imported here)."""

from __future__ import annotations

from nbx_core import hookimpl

_MATMUL = ["mm", "bmm", "addmm", "baddbmm", "matmul", "linear", "mv", "addmv", "dot", "addr"]


@hookimpl
def nbx_register_kernels(registry) -> None:
    registry.register_modules(
        {
            "nbx_linalg.matmul": [f"aten::{n}" for n in _MATMUL],
            "nbx_linalg.einsum": ["aten::einsum"],
            "nbx_linalg.distance": ["aten::_cdist_forward", "aten::_pdist_forward"],
            "nbx_linalg.lstm": ["aten::lstm"],
            "nbx_linalg.grouped_mm": ["aten::_grouped_mm"],
        }
    )
