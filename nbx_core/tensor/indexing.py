"""Python indexing on NBXTensor: ``x[...]`` and ``x[...] = v``.

Ints, slices, None and Ellipsis become views (select, slice, unsqueeze) in core. Tensor, list or
bool indices are advanced indexing, which is ``aten::index`` / ``aten::index_put_`` from the
registry (nbx-index provides them).
"""

from __future__ import annotations

import builtins
from typing import Any

from .. import dtypes as D
from ..errors import IndexOutOfRangeError, NbxTypeError
from ..ops import views
from .core import NBXTensor, tensor


def _expand_key(self: NBXTensor, key: Any) -> list[Any]:
    items = list(key) if isinstance(key, tuple) else [key]
    consumed = sum(
        0 if (k is None or k is Ellipsis) else (k.ndim if isinstance(k, NBXTensor) and k.dtype is D.bool_ else 1)
        for k in items
    )
    if sum(1 for k in items if k is Ellipsis) > 1:
        raise IndexOutOfRangeError("an index can only have a single ellipsis ('...')")
    if consumed > self.ndim:
        raise IndexOutOfRangeError(f"too many indices for a tensor of dimension {self.ndim}")
    if Ellipsis in [k for k in items if not isinstance(k, NBXTensor)]:
        i = next(i for i, k in enumerate(items) if k is Ellipsis)
        items[i:i + 1] = [builtins.slice(None)] * (self.ndim - consumed)
    else:
        items += [builtins.slice(None)] * (self.ndim - consumed)
    return items


def _basic(self: NBXTensor, key: Any) -> tuple[NBXTensor, list[Any] | None]:
    """Apply the view part of ``key``; return the view and the advanced indices per dim (or None)."""
    out = self
    dim = 0
    advanced: list[Any] = []
    has_adv = False
    for k in _expand_key(self, key):
        if k is None:
            out = views.unsqueeze(out, dim)
            advanced.append(None)
            dim += 1
        elif isinstance(k, builtins.slice):
            out = views.slice(out, dim, k.start, k.stop, 1 if k.step is None else k.step)
            advanced.append(None)
            dim += 1
        elif isinstance(k, bool):
            out = views.unsqueeze(out, dim)
            advanced.append(tensor([k], device=self.device))
            has_adv = True
            dim += 1
        elif isinstance(k, int) or (isinstance(k, NBXTensor) and k.ndim == 0 and k.dtype.kind in "iu"
                                    and k.device.type == "cpu"):
            out = views.select(out, dim, int(k))
        elif isinstance(k, NBXTensor | list | tuple):
            t = k if isinstance(k, NBXTensor) else tensor(k, device=self.device)
            if t.dtype is D.bool_:
                advanced.append(t)
                advanced.extend([None] * (t.ndim - 1))
                dim += t.ndim
            else:
                if t.dtype.kind not in "iu":
                    raise NbxTypeError(f"tensors used as indices must be long, int or bool, got {t.dtype}")
                advanced.append(t)
                dim += 1
            has_adv = True
        else:
            raise NbxTypeError(f"cannot index a tensor with {type(k).__name__}: use ints, slices, None, "
                               "Ellipsis, lists or tensors")
    return out, (advanced if has_adv else None)


def _index_list(advanced: list[Any]) -> list[Any]:
    # A bool mask spans several dims in the key; aten::index takes it in its first dim's slot.
    out, skip = [], 0
    for a in advanced:
        if skip:
            skip -= 1
            continue
        out.append(a)
        if isinstance(a, NBXTensor) and a.dtype is D.bool_:
            skip = a.ndim - 1
    while out and out[-1] is None:
        out.pop()
    return out


def getitem(self: NBXTensor, key: Any) -> NBXTensor:
    view, advanced = _basic(self, key)
    if advanced is None:
        return view if view is not self else views.alias(self)
    from ..registry import get_registry

    return get_registry().call("aten::index", view, _index_list(advanced))


def setitem(self: NBXTensor, key: Any, value: Any) -> None:
    from ..ops.copy import copy_, fill_

    view, advanced = _basic(self, key)
    if advanced is None:
        if isinstance(value, NBXTensor):
            copy_(view, value)
        else:
            fill_(view, value)
        return
    from ..registry import get_registry

    if not isinstance(value, NBXTensor):
        value = tensor(value, dtype=self.dtype, device=self.device)
    get_registry().call("aten::index_put_", view, _index_list(advanced), value)
