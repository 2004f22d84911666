"""nbx_core.runtime.kernels.tickets: the last program of a group to store its partial finishes the result."""

from __future__ import annotations

import numpy as np

from nbx_core import dtypes as D
from nbx_core.backend import default_device
from nbx_core.runtime.kernels import tickets as T
from nbx_core.runtime.launch import launch
from nbx_core.tensor import empty_tensor
from nbx_core.testing import from_torch, make, numeric, to_torch

# isort: split
import triton
import triton.language as tl


@triton.jit
def _sum_in_parts(x_ptr, part_ptr, out_ptr, cnt_ptr, GROUPS: tl.constexpr, PARTS: tl.constexpr, BLOCK: tl.constexpr):
    # Program (g, p) sums block p of group g's row; the group's last program adds the parts in order.
    g = tl.program_id(0)
    p = tl.program_id(1)
    v = tl.sum(tl.load(x_ptr + (g * PARTS + p) * BLOCK + tl.arange(0, BLOCK)))
    tl.store(part_ptr + g * PARTS + p, v)
    if T.last_to_arrive(cnt_ptr, g, PARTS):
        total = tl.sum(tl.load(part_ptr + g * PARTS + tl.arange(0, PARTS)))
        tl.store(out_ptr + g, total)


def test_last_program_finishes_and_counters_return_to_zero() -> None:
    groups, parts, block = 3, 4, 16
    device = default_device()
    out = empty_tensor((groups,), D.float32, device)
    part = empty_tensor((groups * parts,), D.float32, device)
    for seed in range(3):  # each launch finds the counters the one before left at zero
        x = make((groups, parts * block), "float32", seed=seed)
        X = from_torch(x)
        cnt = T.tickets(device, groups)
        launch(_sum_in_parts, (groups, parts), X, part, out, cnt, GROUPS=groups, PARTS=parts, BLOCK=block)
        if numeric():
            np.testing.assert_allclose(to_torch(out).numpy(), x.double().sum(1).numpy(), rtol=1e-5)
            assert not to_torch(cnt).any()


def test_counters_grow_and_are_shared_per_device() -> None:
    device = default_device()
    small = T.tickets(device, 10)
    assert small.shape[0] >= 10 and small.dtype is D.int32
    assert T.tickets(device, 10) is small  # one buffer for the launches queued on a stream
    big = T.tickets(device, small.shape[0] + 1)
    assert big.shape[0] > small.shape[0]
    if numeric():
        assert not to_torch(big).any()
