"""Registration of nbx-elementwise's ATen names (no Triton, no kernel imports)."""

from __future__ import annotations

from typing import Any

from nbx_core import hookimpl

from .patterns import PATTERNS

_MODULES: dict[str, list[str]] = {
    "nbx_elementwise.unary": [
        "aten::abs", "aten::neg", "aten::exp", "aten::exp2", "aten::expm1", "aten::log", "aten::log2",
        "aten::log10", "aten::log1p", "aten::sqrt", "aten::rsqrt", "aten::reciprocal", "aten::sin", "aten::cos",
        "aten::tan", "aten::sinh", "aten::cosh", "aten::tanh", "aten::asin", "aten::acos", "aten::atan",
        "aten::asinh", "aten::acosh", "aten::atanh", "aten::erf", "aten::sigmoid", "aten::ceil", "aten::floor",
        "aten::trunc", "aten::round", "aten::sign", "aten::isnan", "aten::isinf", "aten::isfinite",
        "aten::nan_to_num",
    ],
    "nbx_elementwise.binary": [
        "aten::add", "aten::sub", "aten::rsub", "aten::mul", "aten::div", "aten::floor_divide",
        "aten::remainder", "aten::fmod", "aten::pow", "aten::atan2", "aten::lerp", "aten::addcmul",
        "aten::addcdiv",
    ],
    "nbx_elementwise.comparison": [
        "aten::eq", "aten::ne", "aten::lt", "aten::le", "aten::gt", "aten::ge", "aten::maximum",
        "aten::minimum", "aten::clamp", "aten::clamp_min", "aten::clip", "aten::where", "aten::masked_fill",
    ],
    "nbx_elementwise.logical": [
        "aten::logical_and", "aten::logical_or", "aten::logical_xor", "aten::logical_not", "aten::bitwise_and",
        "aten::bitwise_or", "aten::bitwise_xor", "aten::bitwise_not", "aten::bitwise_left_shift",
        "aten::bitwise_right_shift",
    ],
    "nbx_elementwise.activation": [
        "aten::relu", "aten::gelu", "aten::silu", "aten::mish", "aten::hardsigmoid", "aten::hardswish",
        "aten::hardtanh", "aten::leaky_relu", "aten::elu", "aten::celu", "aten::selu", "aten::softplus",
        "aten::log_sigmoid", "aten::threshold", "aten::glu", "nbx::gelu_tanh",
    ],
    "nbx_elementwise.complex_ops": ["aten::complex", "aten::polar", "aten::angle"],
    "nbx_elementwise.rotary": ["nbx::rotary"],
    "nbx_elementwise.random": [
        "aten::rand", "aten::randn", "aten::rand_like", "aten::randn_like", "aten::uniform", "aten::normal",
        "aten::bernoulli", "aten::dropout", "aten::native_dropout",
    ],
}

NAMES: tuple[str, ...] = tuple(n for names in _MODULES.values() for n in names)


@hookimpl
def nbx_register_kernels(registry: Any) -> None:
    """Register every elementwise op to its lazily imported wrapper (``clip`` is torch's alias of clamp)."""
    registry.register_modules(_MODULES)
    for pattern in PATTERNS:
        registry.register_pattern(pattern)
