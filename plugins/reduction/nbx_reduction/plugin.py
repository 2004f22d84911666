"""Registers nbx-reduction's kernels under their ATen names (no Triton imported here)."""

from __future__ import annotations

from nbx_core import hookimpl

_MODULES = {
    "nbx_reduction.basic": [
        "sum",
        "mean",
        "prod",
        "amax",
        "amin",
        "all",
        "any",
        "max",
        "min",
        "argmax",
        "argmin",
        "logsumexp",
        "trace",
    ],
    "nbx_reduction.moments": ["var", "std"],
    "nbx_reduction.norms": ["norm", "linalg_vector_norm"],
    "nbx_reduction.scan": ["cumsum", "cumprod", "logcumsumexp"],
    "nbx_reduction.losses": ["cross_entropy_loss", "nll_loss", "mse_loss"],
    "nbx_reduction.histogram": ["bincount", "histc"],
}


@hookimpl
def nbx_register_kernels(registry) -> None:
    """Register every reduction op, each to the function of its name in its module."""
    registry.register_modules({m: [f"aten::{op}" for op in ops] for m, ops in _MODULES.items()})
