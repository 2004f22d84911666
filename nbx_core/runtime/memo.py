"""Values an op may reuse within one Program run, derived from tensors the run never writes again.

Every layer of a transformer passes the same attention mask to attention, which summarises it into
block lists (nbx-attention's ``mask_blocks``) before its kernel runs: the summary is the same at
every layer. A Program whose graph writes nothing in place runs its nodes within
:func:`run_memo`, where :func:`memoized` computes such a value once per run and hands it out again;
outside a run, or in a graph that writes in place, it computes it every time. A plan records the
one computation, so its replays launch it once too.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

T = TypeVar("T")

_memo: ContextVar[dict[Hashable, tuple[Any, Any]] | None] = ContextVar("nbx_run_memo", default=None)


@contextmanager
def run_memo() -> Iterator[None]:
    """Run the ops within as one Program run whose values are never written after they are made."""
    token = _memo.set({})
    try:
        yield
    finally:
        _memo.reset(token)


def memoized(key: Hashable, keep: Any, make: Callable[[], T]) -> T:
    """``make()``, or within :func:`run_memo` the value an earlier call of this run made for ``key``.
    ``keep`` is held as long as the value (the storages whose ``id`` the key names, so that no other
    storage takes their ``id`` during the run)."""
    memo = _memo.get()
    if memo is None:
        return make()
    hit = memo.get(key)
    if hit is None:
        hit = memo[key] = (keep, make())
    return hit[1]
