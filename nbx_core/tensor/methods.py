"""Binds the core ops onto NBXTensor as methods, and operators onto the registry's kernels.

Core ops become methods on first attribute miss (see bind_ops). Arithmetic operators and advanced
indexing call the registry, so they work once the plugin providing the op (nbx-elementwise,
nbx-index) is installed.
"""

from __future__ import annotations

from typing import Any

from .core import NBXTensor

_bound = False


def bind_ops() -> bool:
    """Bind the core ops as NBXTensor methods; True the first time (NBXTensor.__getattr__ calls it).

    Deferred to first use because the op modules themselves import nbx_core.tensor.
    """
    global _bound
    if _bound:
        return False
    _bound = True
    from ..ops import copy as _copy
    from ..ops import join as _join
    from ..ops import scalar as _scalar
    from ..ops import views as _views

    methods = {
        "view": _views.view, "view_as": _views.view_as, "reshape": _views.reshape,
        "reshape_as": _views.reshape_as, "flatten": _views.flatten, "permute": _views.permute,
        "transpose": _views.transpose, "t": _views.t, "movedim": _views.movedim, "expand": _views.expand,
        "expand_as": _views.expand_as, "broadcast_to": _views.broadcast_to, "squeeze": _views.squeeze,
        "unsqueeze": _views.unsqueeze, "narrow": _views.narrow, "select": _views.select,
        "as_strided": _views.as_strided, "unfold": _views.unfold, "diagonal": _views.diagonal,
        "unbind": _views.unbind, "split": _views.split, "split_with_sizes": _views.split_with_sizes,
        "chunk": _views.chunk, "tensor_split": _views.tensor_split, "detach": _views.detach,
        "alias": _views.alias, "contiguous": _copy.contiguous, "clone": _copy.clone, "copy_": _copy.copy_,
        "fill_": _copy.fill_, "type_as": _copy.type_as, "repeat": _join.repeat, "equal": _scalar.equal,
        "resize_": _scalar.resize_,
    }
    for name, fn in methods.items():
        setattr(NBXTensor, name, fn)
    NBXTensor.T = property(lambda self: _views.permute(self, list(range(self.ndim))[::-1]))
    NBXTensor.mT = property(lambda self: _views.transpose(self, -2, -1))
    NBXTensor.real = property(_views.real)
    NBXTensor.imag = property(_views.imag)
    return True


def _call(name: str, *args: Any, **kwargs: Any) -> Any:
    from ..registry import get_registry

    return get_registry().call(name, *args, **kwargs)


def _binary(name: str, reflected: bool = False):
    def method(self: NBXTensor, other: Any) -> Any:
        return _call(name, other, self) if reflected else _call(name, self, other)

    method.__name__ = name.split("::")[1]
    return method


_OPERATORS = {
    "__add__": ("aten::add", False), "__radd__": ("aten::add", True),
    "__sub__": ("aten::sub", False), "__rsub__": ("aten::sub", True),
    "__mul__": ("aten::mul", False), "__rmul__": ("aten::mul", True),
    "__truediv__": ("aten::div", False), "__rtruediv__": ("aten::div", True),
    "__floordiv__": ("aten::floor_divide", False), "__rfloordiv__": ("aten::floor_divide", True),
    "__mod__": ("aten::remainder", False), "__rmod__": ("aten::remainder", True),
    "__pow__": ("aten::pow", False), "__rpow__": ("aten::pow", True),
    "__matmul__": ("aten::matmul", False), "__rmatmul__": ("aten::matmul", True),
    "__and__": ("aten::bitwise_and", False), "__rand__": ("aten::bitwise_and", True),
    "__or__": ("aten::bitwise_or", False), "__ror__": ("aten::bitwise_or", True),
    "__xor__": ("aten::bitwise_xor", False), "__rxor__": ("aten::bitwise_xor", True),
    "__lshift__": ("aten::bitwise_left_shift", False), "__rshift__": ("aten::bitwise_right_shift", False),
    "__eq__": ("aten::eq", False), "__ne__": ("aten::ne", False),
    "__lt__": ("aten::lt", False), "__le__": ("aten::le", False),
    "__gt__": ("aten::gt", False), "__ge__": ("aten::ge", False),
}

for _name, (_op, _refl) in _OPERATORS.items():
    setattr(NBXTensor, _name, _binary(_op, _refl))

NBXTensor.__hash__ = object.__hash__
NBXTensor.__neg__ = lambda self: _call("aten::neg", self)
NBXTensor.__abs__ = lambda self: _call("aten::abs", self)
NBXTensor.__invert__ = lambda self: _call("aten::bitwise_not", self)


def __getitem__(self: NBXTensor, key: Any) -> NBXTensor:
    """Basic indexing (ints, slices, None, Ellipsis) as views; tensor or list indices via aten::index."""
    from .indexing import getitem

    return getitem(self, key)


def __setitem__(self: NBXTensor, key: Any, value: Any) -> None:
    from .indexing import setitem

    setitem(self, key, value)


NBXTensor.__getitem__ = __getitem__
NBXTensor.__setitem__ = __setitem__
