"""Fixtures of the reduction tests."""

from __future__ import annotations

from collections.abc import Callable

import pytest


@pytest.fixture
def force_tiles(monkeypatch) -> Callable[..., None]:
    """``force_tiles(rows, columns)``: the engine's row and column kernels launch with these tiles
    (``engine.Tiles`` fields as tuples) whatever the lookup says, K split as the lookup says, or
    into slices of ``slice_k`` elements when it is given; ``force_tiles(gpu=True)``: with the GPU's
    rules and K splits, on any backend."""
    from nbx_reduction import engine as E

    names = ("BLOCK", "BLOCK_K", "num_warps", "UNROLL", "STAGES", "MAXNREG")

    def force(rows: tuple[int, ...] = (), columns: tuple[int, ...] = (), gpu: bool = False, slice_k: int = 0) -> None:
        for tunable, tiles in ((E.ROWS, rows), (E.COLUMNS, columns)):
            if gpu:
                monkeypatch.setattr(tunable, "lookup", lambda *a, tunable=tunable, **kw: tunable.rule(*a))
                continue
            forced = dict(zip(names, E.Tiles(*tiles), strict=True)) | ({"SLICE": slice_k} if slice_k else {})
            monkeypatch.setattr(
                tunable, "lookup", lambda *a, lookup=tunable.lookup, forced=forced, **kw: lookup(*a, **kw) | forced
            )

    return force
