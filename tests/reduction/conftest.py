"""Fixtures of the reduction tests."""

from __future__ import annotations

from collections.abc import Callable

import pytest


@pytest.fixture
def force_tiles(monkeypatch) -> Callable[..., None]:
    """``force_tiles(rows, columns)``: the engine's row and column kernels launch with these tiles
    (``engine.Tiles`` fields as tuples), whatever the lookup says; ``force_tiles(gpu=True)``: with
    the GPU's rules and K splits, on any backend."""
    from nbx_reduction import engine as E

    def config(tiles: tuple[int, ...]) -> dict[str, int]:
        names = ("BLOCK", "BLOCK_K", "num_warps", "UNROLL", "STAGES", "MAXNREG")
        return {**dict(zip(names, E.Tiles(*tiles), strict=True)), "PROGRAMS": 1056, "SPLIT_BLOCKS": 4}

    def force(rows: tuple[int, ...] = (), columns: tuple[int, ...] = (), gpu: bool = False) -> None:
        if gpu:
            monkeypatch.setattr(E, "BACKEND", "cuda")
            monkeypatch.setattr(E.ROWS, "lookup", lambda *a, **kw: E.ROWS.rule(*a))
            monkeypatch.setattr(E.COLUMNS, "lookup", lambda *a, **kw: E.COLUMNS.rule(*a))
        else:
            monkeypatch.setattr(E.ROWS, "lookup", lambda *a, **kw: config(rows))
            monkeypatch.setattr(E.COLUMNS, "lookup", lambda *a, **kw: config(columns))

    return force
