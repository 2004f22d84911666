"""Registers nbx-core's ops under their ATen names as plugin ``core``."""

from __future__ import annotations

from ..registry.hookspec import hookimpl

_VIEWS = [
    "alias",
    "detach",
    "lift_fresh",
    "view",
    "_unsafe_view",
    "view_as",
    "reshape",
    "reshape_as",
    "flatten",
    "permute",
    "transpose",
    "t",
    "movedim",
    "expand",
    "expand_as",
    "broadcast_tensors",
    "squeeze",
    "unsqueeze",
    "narrow",
    "slice",
    "select",
    "as_strided",
    "unfold",
    "diagonal",
    "unbind",
    "split",
    "split_with_sizes",
    "chunk",
    "tensor_split",
    "atleast_1d",
    "atleast_2d",
    "atleast_3d",
    "view_as_real",
    "view_as_complex",
    "real",
    "imag",
    "size",
    "stride",
    "dim",
    "numel",
    "is_contiguous",
]
_COPY = ["copy_", "copy", "clone", "contiguous", "_to_copy", "to", "type_as", "fill_", "fill"]
_CREATION = [
    "empty",
    "empty_like",
    "empty_strided",
    "zeros",
    "zeros_like",
    "ones",
    "ones_like",
    "full",
    "full_like",
    "new_empty",
    "new_zeros",
    "new_ones",
    "arange",
    "linspace",
    "scalar_tensor",
]
_JOIN = ["cat", "concat", "stack", "repeat", "select_scatter", "slice_scatter"]
_SCALAR = ["item", "_local_scalar_dense", "is_nonzero", "equal", "resize_", "set"]


@hookimpl
def nbx_register_kernels(registry) -> None:
    groups = {
        "views": _VIEWS,
        "copy": _COPY,
        "creation": _CREATION,
        "join": _JOIN,
        "scalar": _SCALAR,
        "sequence": ["_pack_padded_sequence"],
    }
    registry.register_modules({f"nbx_core.ops.{m}": [f"aten::{n}" for n in names] for m, names in groups.items()})
    registry.register("nbx::channels_last", "nbx_core.ops.copy:channels_last")
