"""Generated pointwise kernels' launch as data (nbx_core.runtime.pointwise.POINTWISE): today's
choices on each backend, and config=."""

from __future__ import annotations

import numpy as np
import pytest

from nbx_core import dtypes as D
from nbx_core.errors import NbxError
from nbx_core.runtime import pointwise as P
from nbx_core.runtime import tuning
from nbx_core.runtime.tuner import randn

# The launch before the choice moved onto nbx_core.runtime.tuning: (BLOCK, num_warps) by dtype,
# for 1000 elements.
SM90 = {"bool": (4096, 4), "bfloat16": (2048, 4), "float32": (1024, 4), "int64": (512, 4)}
INTERPRETER = {"bool": (1024, 1), "bfloat16": (1024, 1), "float32": (1024, 1), "int64": (1024, 1)}


pytestmark = pytest.mark.usefixtures("tuning_cache")


def _plan(fn, *operands, config=None):
    from nbx_core.runtime.plans import geometry

    P.pointwise("test", fn, *operands, config=config)
    return next(
        p
        for k, p in P._plans.items()
        if k[:2] == ("test", fn) and k[-1] == tuning.frozen(config) and k[6] == tuple(map(geometry, operands))
    )


@pytest.mark.parametrize("dtype", list(SM90))
def test_same_launch_as_before(dtype):
    from nbx_core.ops.tuning import _add

    itemsize = D.as_dtype(dtype).itemsize
    for target, expected in (("sm_90", SM90), (None, INTERPRETER)):
        assert P.POINTWISE.resolve(itemsize, target=target)[0] == {"THREAD_BYTES": 32, "num_warps": expected[dtype][1]}
    x = randn((1000,), "float32", np.random.default_rng(0))
    x = P.pointwise("cast", _add, x, x, dtype=D.as_dtype(dtype))
    run = _plan(_add, x, x).run
    expected = SM90 if tuning.arch() == "sm_90" else INTERPRETER
    assert (run.kwargs["BLOCK"], run.kwargs["num_warps"]) == expected[dtype]


def test_config_argument_replaces_the_lookup():
    from nbx_core.ops.tuning import _mul

    x = randn((1000,), "float32", np.random.default_rng(0))
    run = _plan(_mul, x, x, config={"THREAD_BYTES": 16, "num_warps": 2}).run
    assert run.kwargs["num_warps"] == 2 and run.kwargs["BLOCK"] == (256 if tuning.arch() else 1024)
    with pytest.raises(NbxError, match=r"passed as config= to pointwise: missing \['num_warps'\]"):
        P.pointwise("test", _mul, x, x, config={"THREAD_BYTES": 16, "warps": 2})
