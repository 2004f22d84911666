"""A kernel that keeps the GPU busy for a given time, so that launches queued behind it run back to back.

Timing a kernel shorter than its launch on the host clock measures the launch. Queued behind this
sleep, the host enqueues every timed call before the GPU reaches the first, and CUDA events around
the calls bracket only the GPU's work (as ``triton.testing.do_bench`` does with torch's sleep).
"""

from __future__ import annotations

import triton
import triton.language as tl

from ..launch import launch


@triton.jit
def _globaltimer():
    return tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64, is_pure=False, pack=1)


@triton.jit
def _sleep_kernel(ns):
    # One program polls the GPU's nanosecond timer until ns have passed.
    start = _globaltimer()
    now = start
    while now - start < ns:
        now = _globaltimer()


def gpu_sleep(seconds: float) -> None:
    """Queue a kernel that keeps the GPU busy for ``seconds`` (cuda and aot backends only: the
    interpreter has no GPU timer)."""
    launch(_sleep_kernel, (1,), int(seconds * 1e9), num_warps=1)
