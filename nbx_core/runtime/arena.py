"""Placing a run's temporary buffers in one block of memory, from their lifetimes.

Each buffer is alive over op positions ``[start, end)``; two buffers whose lifetimes overlap must
not overlap in memory. Largest buffers are placed first, each at the lowest aligned offset free
over its whole lifetime (the usual greedy for offline static allocation; within a few percent of
the peak of live bytes on real models).
"""

from __future__ import annotations

from collections.abc import Sequence

ALIGN = 512
"""Offsets are multiples of this, so a buffer's alignment is what a fresh allocation would have."""


def place(sizes: Sequence[int], lifetimes: Sequence[tuple[int, int]], align: int = ALIGN) -> tuple[list[int], int]:
    """(offset of each buffer, total bytes) for buffers of ``sizes`` alive over ``lifetimes``."""
    order = sorted(range(len(sizes)), key=lambda i: (-sizes[i], lifetimes[i]))
    offsets = [0] * len(sizes)
    placed: list[int] = []
    total = 0
    for i in order:
        size = -(-sizes[i] // align) * align
        start, end = lifetimes[i]
        busy = sorted(
            (offsets[j], offsets[j] + -(-sizes[j] // align) * align)
            for j in placed
            if lifetimes[j][0] < end and start < lifetimes[j][1]
        )
        offset = 0
        for lo, hi in busy:
            if offset + size <= lo:
                break
            offset = max(offset, hi)
        offsets[i] = offset
        placed.append(i)
        total = max(total, offset + size)
    return offsets, total
