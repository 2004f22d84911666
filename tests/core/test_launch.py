"""nbx_core.runtime.launch: what a kernel receives is what the caller passed, on every backend."""

from __future__ import annotations

import numpy as np

from nbx_core import dtypes as D
from nbx_core.backend import default_device
from nbx_core.runtime.launch import launch
from nbx_core.tensor import empty_tensor
from nbx_core.testing import numeric, to_torch

# isort: split
import triton
import triton.language as tl


@triton.jit
def _store_scalars(out_ptr, wide: tl.float64, narrow, k: tl.int64):
    tl.store(out_ptr, wide)
    tl.store(out_ptr + 1, wide * 3.0)
    tl.store(out_ptr + 2, narrow)
    tl.store(out_ptr + 3, k)


def test_float64_parameters_keep_every_bit() -> None:
    # A compiled kernel takes a Python float for a tl.float64 parameter at full precision; Triton's
    # interpreter would round it to float32 (0.1 + 1.5e-9 off), so the cpu backend passes it as a
    # float64 scalar. An unannotated float is float32 on both (Triton's rule).
    out = empty_tensor((4,), D.float64, default_device())
    launch(_store_scalars, (1,), out, 0.1, 0.1, 2**40 + 1)
    if not numeric():
        return
    got = to_torch(out).tolist()
    assert got[0] == 0.1 and got[1] == 0.1 * 3.0
    assert got[2] == float(np.float32(0.1))
    assert got[3] == 2**40 + 1
