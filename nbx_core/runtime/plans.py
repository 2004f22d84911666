"""A bounded cache of launch plans keyed by operand geometry.

An op's checks, promotion, broadcasting and dim coalescing depend only on its operands' metadata
(dtype, shape, strides, device), so a launcher computes them once per geometry and keeps the
outcome here; a repeated call then only allocates and launches.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

from ..tensor import NBXTensor

P = TypeVar("P")


def geometry(value: Any) -> tuple[Any, ...] | type:
    """What a plan may depend on of an operand: a tensor's dtype, shape, strides and device;
    a number's type."""
    if type(value) is NBXTensor:
        return (value.dtype, value._shape, value._strides, value._storage.device)
    return type(value)


class PlanCache(Generic[P]):
    """``cache.get(key, make)``: the plan for ``key``, made by ``make()`` the first time. The cache
    is cleared when it holds ``limit`` plans (a process that sees endless shapes stays bounded)."""

    def __init__(self, limit: int = 4096) -> None:
        self.limit = limit
        self._plans: dict[Hashable, P] = {}

    def get(self, key: Hashable, make: Callable[[], P]) -> P:
        plan = self._plans.get(key)
        if plan is None:
            plan = make()
            if len(self._plans) >= self.limit:
                self._plans.clear()
            self._plans[key] = plan
        return plan

    def items(self) -> Any:
        return self._plans.items()

    def __len__(self) -> int:
        return len(self._plans)
