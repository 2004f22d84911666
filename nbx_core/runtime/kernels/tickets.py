"""Ticket counters: the programs of one launch that share a result decide which of them finishes it.

A kernel whose programs each compute a partial of one output tile (a reduction or a GEMM split
along K, attention's key splits) stores its partial, then takes a ticket from the tile's counter with
:func:`last_to_arrive`; the program that takes the last ticket reads every partial (in a fixed
order, so the result does not depend on which program finished last), finishes the tile and sets
the counter back to zero. No program waits for another, so this is safe on the interpreter (which
runs programs one after another) and needs no co-residency on the GPU; and since every launch
leaves its counters at zero, the launches queued on one stream share one buffer, from
:func:`tickets`.
"""

from __future__ import annotations

from .. import launch as _launch  # noqa: F401  (configures Triton before the kernels below)

# isort: split
import triton
import triton.language as tl

from ... import dtypes as D
from ...device import Device
from ...tensor import NBXTensor, empty_tensor
from ..launch import next_pow2

# Per device and stream (and CUDA-graph capture, whose launches replay on their own).
_counters: dict[tuple, NBXTensor] = {}


def tickets(device: Device, n: int) -> NBXTensor:
    """At least ``n`` int32 counters at zero on ``device``, for a launch on the current stream."""
    key: tuple = (device,)
    if device.type == "cuda":
        from ...memory import cuda

        key = (device, cuda.current_stream(), cuda.capture_id())
    t = _counters.get(key)
    if t is None or t.shape[0] < n:
        # A replaced buffer is freed in stream order, after the launches that use it.
        t = _counters[key] = empty_tensor((max(next_pow2(n), 1024),), D.int32, device, zero=True)
    return t


@triton.jit
def last_to_arrive(cnt_ptr, index, arrivals):
    """Whether this program, having stored its partial, is the last of ``arrivals`` programs to take
    a ticket from counter ``index`` (it then resets the counter for the next launch)."""
    # Every thread's partial is stored before the ticket, whose release publishes them; its
    # acquire makes the other programs' partials visible to the last one.
    tl.debug_barrier()
    ticket = tl.atomic_add(cnt_ptr + index, 1, sem="acq_rel")
    last = ticket == arrivals - 1
    if last:
        tl.store(cnt_ptr + index, 0)
    return last
