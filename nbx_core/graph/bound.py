"""A plan's launches bound to compiled kernels over fixed memory (cuda backend).

Only pointers into the memory a run binds (its inputs and fresh outputs) change between runs: each
launch keeps its compiled kernel and raw arguments, and patches those pointers.
"""

from __future__ import annotations

from typing import Any

from ..runtime.launch import Bound
from ..runtime.trace import TensorArg, Zero, bind, tensor_args


class BoundOps:
    """The plan's ops as compiled launches over one arena; only the pointers into the inputs and
    the fresh outputs change between runs."""

    def __init__(self, plan: Any, storages: list[Any], skip_zero: frozenset[int] | None = None) -> None:
        from ..memory import cuda

        self._cuda = cuda
        fixed = set(plan.slots) | set(plan.const)
        self.steps: list[tuple[Any, Any, list[tuple[int, Any]]]] = []
        for op in plan.ops:
            if type(op) is Zero:
                self.steps.append((None, op.storage, []))
                continue
            bound = Bound(op.kernel, op.grid, bind(op.args, storages.__getitem__), op.kwargs)
            patches = [(pos, a) for pos, a in enumerate(op.args) if any(t.storage not in fixed for t in tensor_args(a))]
            self.steps.append((bound, None, patches))
        # Fresh outputs come zeroed from the allocator where the run asked for it.
        self.skip_zero = plan._fresh_zeroed if skip_zero is None else skip_zero

    def launch(self, st: list[Any]) -> None:
        stream = self._cuda.current_stream()
        driver = self._cuda._driver()
        for bound, zero, patches in self.steps:
            if bound is None:
                if zero not in self.skip_zero:
                    s = st[zero]
                    self._cuda.check(driver.cuMemsetD8Async(s.ptr, 0, s.nbytes, stream), "cuMemsetD8Async")
                continue
            raw = bound.raw
            if patches:
                raw = raw.copy()
                for pos, arg in patches:
                    raw[pos] = _pointers(arg, st)
            bound.launch(raw, stream)


def _pointers(value: Any, st: list[Any]) -> Any:
    """A launch argument's raw form over the storages ``st`` (a TensorArg as its device pointer)."""
    if type(value) is TensorArg:
        return st[value.storage].ptr + value.offset * value.dtype.itemsize
    if type(value) is tuple:
        return tuple(_pointers(v, st) for v in value)
    return value
