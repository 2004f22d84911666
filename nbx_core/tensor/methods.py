"""NBXTensor's op methods and operators, each a call of the registry by ATen name.

``x.view(2, 3)`` is ``get_registry().call("aten::view", x, 2, 3)``: the method passes its arguments
on as they are, so it takes what the op's function takes. The tensor layer thereby imports no op
module; whichever plugin provides a name serves its method (``core`` for the metadata and copy ops,
nbx-elementwise for the arithmetic operators, nbx-index for advanced indexing).

:class:`TensorMethods` is NBXTensor's base class; Python indexing, which also builds tensors from
Python data, lives with the class in :mod:`nbx_core.tensor.core`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..registry import get_registry


def call(name: str, /, *args: Any, **kwargs: Any) -> Any:
    """Run the kernel the process-wide registry has for ``name``."""
    return get_registry().call(name, *args, **kwargs)


def _method(name: str) -> Callable[..., Any]:
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        return get_registry().lookup(name)(self, *args, **kwargs)

    method.__name__ = method.__qualname__ = name.partition("::")[2]
    method.__doc__ = f"``{name}`` on this tensor and the arguments given, from the registry."
    return method


def _operator(name: str, dunder: str, reflected: bool = False) -> Callable[[Any, Any], Any]:
    def operator(self: Any, other: Any) -> Any:
        return get_registry().call(name, other, self) if reflected else get_registry().call(name, self, other)

    operator.__name__ = operator.__qualname__ = dunder
    operator.__doc__ = f"``{name}({'other, self' if reflected else 'self, other'})`` from the registry."
    return operator


def _unary(name: str, dunder: str) -> Callable[[Any], Any]:
    def operator(self: Any) -> Any:
        return get_registry().call(name, self)

    operator.__name__ = operator.__qualname__ = dunder
    operator.__doc__ = f"``{name}(self)`` from the registry."
    return operator


class TensorMethods:
    """The ops NBXTensor offers as methods, properties and operators."""

    __slots__ = ()

    if TYPE_CHECKING:  # NBXTensor's; declared for the methods below that read it

        @property
        def ndim(self) -> int: ...

    # -- views (nbx-core: nbx_core.ops.views) --------------------------------------------------------
    view = _method("aten::view")
    view_as = _method("aten::view_as")
    reshape = _method("aten::reshape")
    reshape_as = _method("aten::reshape_as")
    flatten = _method("aten::flatten")
    permute = _method("aten::permute")
    transpose = _method("aten::transpose")
    t = _method("aten::t")
    movedim = _method("aten::movedim")
    expand = _method("aten::expand")
    expand_as = _method("aten::expand_as")
    squeeze = _method("aten::squeeze")
    unsqueeze = _method("aten::unsqueeze")
    narrow = _method("aten::narrow")
    select = _method("aten::select")
    as_strided = _method("aten::as_strided")
    unfold = _method("aten::unfold")
    diagonal = _method("aten::diagonal")
    unbind = _method("aten::unbind")
    split = _method("aten::split")
    split_with_sizes = _method("aten::split_with_sizes")
    chunk = _method("aten::chunk")
    tensor_split = _method("aten::tensor_split")
    detach = _method("aten::detach")
    alias = _method("aten::alias")

    def broadcast_to(self, size: Any) -> Any:
        """``aten::expand``: ATen's broadcast_to is expand under another name and registers none."""
        return call("aten::expand", self, size)

    @property
    def T(self) -> Any:
        """The dims in reverse order (``aten::permute``)."""
        return call("aten::permute", self, list(range(self.ndim))[::-1])

    @property
    def mT(self) -> Any:
        """The last two dims swapped (``aten::transpose``)."""
        return call("aten::transpose", self, -2, -1)

    @property
    def real(self) -> Any:
        """``aten::real``: a view of the real parts (self when not complex)."""
        return call("aten::real", self)

    @property
    def imag(self) -> Any:
        """``aten::imag``: a view of the imaginary parts of a complex tensor."""
        return call("aten::imag", self)

    # -- data (nbx-core: nbx_core.ops.copy, join, scalar) ------------------------------------------------
    contiguous = _method("aten::contiguous")
    clone = _method("aten::clone")
    copy_ = _method("aten::copy_")
    fill_ = _method("aten::fill_")
    type_as = _method("aten::type_as")
    repeat = _method("aten::repeat")
    equal = _method("aten::equal")
    resize_ = _method("aten::resize_")

    # -- operators (nbx-elementwise, nbx-linalg) -----------------------------------------------------
    __add__ = _operator("aten::add", "__add__")
    __radd__ = _operator("aten::add", "__radd__", reflected=True)
    __sub__ = _operator("aten::sub", "__sub__")
    __rsub__ = _operator("aten::sub", "__rsub__", reflected=True)
    __mul__ = _operator("aten::mul", "__mul__")
    __rmul__ = _operator("aten::mul", "__rmul__", reflected=True)
    __truediv__ = _operator("aten::div", "__truediv__")
    __rtruediv__ = _operator("aten::div", "__rtruediv__", reflected=True)
    __floordiv__ = _operator("aten::floor_divide", "__floordiv__")
    __rfloordiv__ = _operator("aten::floor_divide", "__rfloordiv__", reflected=True)
    __mod__ = _operator("aten::remainder", "__mod__")
    __rmod__ = _operator("aten::remainder", "__rmod__", reflected=True)
    __pow__ = _operator("aten::pow", "__pow__")
    __rpow__ = _operator("aten::pow", "__rpow__", reflected=True)
    __matmul__ = _operator("aten::matmul", "__matmul__")
    __rmatmul__ = _operator("aten::matmul", "__rmatmul__", reflected=True)
    __and__ = _operator("aten::bitwise_and", "__and__")
    __rand__ = _operator("aten::bitwise_and", "__rand__", reflected=True)
    __or__ = _operator("aten::bitwise_or", "__or__")
    __ror__ = _operator("aten::bitwise_or", "__ror__", reflected=True)
    __xor__ = _operator("aten::bitwise_xor", "__xor__")
    __rxor__ = _operator("aten::bitwise_xor", "__rxor__", reflected=True)
    __lshift__ = _operator("aten::bitwise_left_shift", "__lshift__")
    __rshift__ = _operator("aten::bitwise_right_shift", "__rshift__")
    __eq__ = _operator("aten::eq", "__eq__")
    __ne__ = _operator("aten::ne", "__ne__")
    __lt__ = _operator("aten::lt", "__lt__")
    __le__ = _operator("aten::le", "__le__")
    __gt__ = _operator("aten::gt", "__gt__")
    __ge__ = _operator("aten::ge", "__ge__")
    __hash__ = object.__hash__  # defining __eq__ would otherwise make tensors unhashable
    __neg__ = _unary("aten::neg", "__neg__")
    __abs__ = _unary("aten::abs", "__abs__")
    __invert__ = _unary("aten::bitwise_not", "__invert__")
