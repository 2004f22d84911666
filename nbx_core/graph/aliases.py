"""ATen names an export may hold that no family owns under that name.

:data:`ALIASES` maps an alias op to its canonical op: the two share one schema (overloads
keep their names, except in :data:`OVERLOAD_ALIASES`), so the importer only renames the node.
:data:`DROPPED` are runtime assertions torch.export leaves behind; the importer drops them, since
shapes and dtypes are checked at the graph's boundary and values were checked when traced.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .format import Graph

ALIASES: dict[str, str] = {
    "aten::__and__": "aten::bitwise_and",
    "aten::__or__": "aten::bitwise_or",
    "aten::__xor__": "aten::bitwise_xor",
    "aten::__lshift__": "aten::bitwise_left_shift",
    "aten::__rshift__": "aten::bitwise_right_shift",
    "aten::multiply": "aten::mul",
    "aten::divide": "aten::div",
    "aten::true_divide": "aten::div",
    "aten::subtract": "aten::sub",
    "aten::negative": "aten::neg",
    "aten::absolute": "aten::abs",
    "aten::greater": "aten::gt",
    "aten::greater_equal": "aten::ge",
    "aten::less": "aten::lt",
    "aten::less_equal": "aten::le",
    "aten::not_equal": "aten::ne",
    "aten::concatenate": "aten::cat",
    "aten::fix": "aten::trunc",
    "aten::clip": "aten::clamp",
    "aten::arccos": "aten::acos",
    "aten::arcsin": "aten::asin",
    "aten::arctan": "aten::atan",
    "aten::arccosh": "aten::acosh",
    "aten::arcsinh": "aten::asinh",
    "aten::arctanh": "aten::atanh",
    "aten::arctan2": "aten::atan2",
    "aten::special_expit": "aten::sigmoid",
    "aten::special_erf": "aten::erf",
    "aten::special_exp2": "aten::exp2",
    "aten::special_expm1": "aten::expm1",
    "aten::special_log1p": "aten::log1p",
    "aten::moveaxis": "aten::movedim",
}
# Aliases whose overload names differ from the canonical op's, mapped name for name.
OVERLOAD_ALIASES: dict[str, str] = {
    "aten::swapaxes.default": "aten::transpose.int",
    "aten::swapdims.default": "aten::transpose.int",
    # torch.tensor(value) inside forward: a copy of a constant; clone's other argument is optional.
    "aten::lift_fresh_copy.default": "aten::clone.default",
    # transformers' MoE experts export this custom op in place of aten::_grouped_mm for weights other
    # than bfloat16: its (input, weight, offs) are _grouped_mm's (self, mat2, offs), it returns
    # input's dtype, and rows past offs[-1] are zeros in both (offs is int32 in transformers' calls).
    "transformers::grouped_mm_fallback.default": "aten::_grouped_mm.default",
}

DROPPED: frozenset[str] = frozenset(
    {
        "aten::_assert_tensor_metadata",
        "aten::_assert_async",
        "aten::_assert_scalar",
        "aten::_functional_assert_async",
        "aten::_functional_assert_scalar",
        "aten::sym_constrain_range",
        "aten::sym_constrain_range_for_size",
        "aten::_functional_sym_constrain_range",
        "aten::_functional_sym_constrain_range_for_size",
        "aten::_print",
        "aten::_make_dep_token",
    }
)


# Ops whose results may share memory with their first argument (ATen's view ops, and those that
# return their input as it is when they can).
VIEW_OPS: frozenset[str] = frozenset(
    f"aten::{n}"
    for n in (
        "alias",
        "as_strided",
        "chunk",
        "contiguous",
        "detach",
        "diagonal",
        "expand",
        "expand_as",
        "flatten",
        "imag",
        "movedim",
        "narrow",
        "permute",
        "real",
        "reshape",
        "reshape_as",
        "select",
        "slice",
        "split",
        "split_with_sizes",
        "squeeze",
        "t",
        "tensor_split",
        "transpose",
        "unbind",
        "unflatten",
        "unfold",
        "unsqueeze",
        "view",
        "view_as",
        "view_as_complex",
        "view_as_real",
        "_unsafe_view",
        "_reshape_alias",
        "hsplit",
        "vsplit",
        "dsplit",
        "swapaxes",
        "swapdims",
        "moveaxis",
        "lift_fresh",
        "numpy_T",
        "mT",
        "mH",
        "adjoint",
        "conj",
        "resolve_conj",
        "resolve_neg",
        "to",
        "type_as",
    )
)


def is_in_place(op: str) -> bool:
    """``aten::add_.Tensor``, ``aten::copy_.default``, ``aten::__iand__.Tensor``: ops that write into
    their first argument."""
    return op.partition("::")[2].partition(".")[0].endswith("_")


def writes_in_place(graph: Graph) -> bool:
    """Whether a node of ``graph`` writes into its first argument or the graph updates a buffer or
    input: the values of a graph that does neither never change once made."""
    return bool(graph.mutations) or any(is_in_place(n.op) for n in graph.nodes)


def canonical(name: str) -> str:
    """``aten::multiply.Tensor`` -> ``aten::mul.Tensor``; other names unchanged."""
    if name in OVERLOAD_ALIASES:
        return OVERLOAD_ALIASES[name]
    op, dot, overload = name.partition(".")
    target = ALIASES.get(op)
    return name if target is None else f"{target}{dot}{overload}"
