"""Registers nbx-index's kernels under their ATen names (no Triton imported here)."""

from __future__ import annotations

from nbx_core import hookimpl

_MODULES = {
    "nbx_index.gather": ["index_select", "gather"],
    "nbx_index.scatter": ["scatter", "scatter_add", "scatter_reduce", "index_add"],
    "nbx_index.advanced": ["index", "index_put", "index_put_"],
    "nbx_index.masked": ["masked_scatter", "masked_select"],
    "nbx_index.embedding": ["embedding", "_embedding_bag"],
    "nbx_index.sort": ["sort", "topk"],
    "nbx_index.unique": ["_unique2", "unique_consecutive"],
    "nbx_index.search": ["nonzero", "bucketize", "searchsorted", "isin"],
    "nbx_index.random": ["multinomial", "randperm"],
    "nbx_index.pad": [
        "constant_pad_nd",
        "pad",
        "reflection_pad1d",
        "reflection_pad2d",
        "reflection_pad3d",
        "replication_pad1d",
        "replication_pad2d",
        "replication_pad3d",
    ],
    "nbx_index.layout": [
        "flip",
        "roll",
        "tril",
        "triu",
        "tril_indices",
        "triu_indices",
        "pixel_shuffle",
        "pixel_unshuffle",
        "repeat_interleave",
    ],
}

NAMES = [f"aten::{op}" for ops in _MODULES.values() for op in ops]


@hookimpl
def nbx_register_kernels(registry) -> None:
    """Register every index op, each to the function of its name in its module."""
    registry.register_modules({m: [f"aten::{op}" for op in ops] for m, ops in _MODULES.items()})
