"""NBXTensor itself: construction, numpy and torch interop, DLPack, repr, item, errors, dtypes."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

import nbx_core
from nbx_core import dtypes as D
from nbx_core.errors import DeviceError, NbxError, NbxTypeError
from nbx_core.testing import make, numeric, to_torch


def test_construction_and_default_dtypes():
    assert nbx_core.tensor([1.5, 2]).dtype is D.float32
    assert nbx_core.tensor([1, 2]).dtype is D.int64
    assert nbx_core.tensor([True]).dtype is D.bool_
    assert nbx_core.tensor(3).shape == ()
    assert nbx_core.tensor(np.zeros((2, 3), np.float16)).dtype is D.float16
    x = nbx_core.tensor([[1, 2], [3, 4]], dtype="bfloat16")
    assert x.dtype is D.bfloat16 and x.shape == (2, 2) and x.stride() == (2, 1)
    np.testing.assert_array_equal(x.numpy().astype(np.float32), [[1, 2], [3, 4]])
    with pytest.raises(NbxTypeError, match="unknown dtype"):
        nbx_core.tensor([1], dtype="float128")
    with pytest.raises(NbxTypeError, match="from_dlpack"):
        nbx_core.tensor(torch.ones(2))


def test_tensor_copies_but_from_numpy_shares():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = nbx_core.tensor(a)
    s = nbx_core.from_numpy(a)
    a[0, 0] = 42
    assert t.numpy()[0, 0] == 0
    assert s.numpy()[0, 0] == 42
    strided = nbx_core.from_numpy(a.T)
    assert strided.shape == (3, 2) and strided.stride() == (1, 3)
    np.testing.assert_array_equal(strided.numpy(), a.T)


def test_item_bool_len_iter():
    assert nbx_core.tensor([2.5]).item() == 2.5
    assert isinstance(nbx_core.tensor(3).item(), int)
    assert bool(nbx_core.tensor([1])) is True
    with pytest.raises(NbxError, match="ambiguous"):
        bool(nbx_core.tensor([1, 2]))
    x = nbx_core.tensor([[1, 2], [3, 4]])
    assert len(x) == 2
    assert [r.tolist() for r in x] == [[1, 2], [3, 4]]


def test_int_and_float_of_a_complex_tensor_name_the_dtype():
    z = nbx_core.tensor([1.5 + 2j])
    assert int(nbx_core.tensor([2.5])) == 2 and float(nbx_core.tensor([3])) == 3.0
    for convert, target in ((int, "int"), (float, "float")):
        with pytest.raises(NbxTypeError, match=f"complex64 tensor cannot be converted to {target}: take its real"):
            convert(z)


def test_repr_like_torch():
    assert repr(nbx_core.tensor([1.0, 2.0])) == "tensor([1., 2.])"
    assert repr(nbx_core.tensor([1, 2], dtype="int32")) == "tensor([1, 2], dtype=int32)"
    assert repr(nbx_core.tensor([0.25, 1.5])) == "tensor([0.2500, 1.5000])"
    assert repr(nbx_core.tensor([True, False])) == "tensor([ True, False])"
    assert "size=(0, 3)" in repr(nbx_core.zeros(0, 3))
    assert repr(nbx_core.tensor(3.5)) == "tensor(3.5000)"


@pytest.mark.parametrize(
    "dtype", ["float32", "bfloat16", "float16", "int64", "bool", "uint8", "float64", "complex64", "float8_e4m3fn"]
)
def test_dlpack_with_torch_is_zero_copy(dtype):
    t = make((3, 4), dtype).t()
    n = nbx_core.from_dlpack(t)
    assert n.data_ptr() == t.data_ptr()
    assert n.shape == tuple(t.shape) and n.stride() == tuple(t.stride()) and n.dtype.name == dtype
    back = torch.from_dlpack(n)
    assert back.data_ptr() == t.data_ptr()
    assert torch.equal(back.contiguous().view(torch.uint8), t.contiguous().view(torch.uint8))


def test_dlpack_with_numpy():
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    n = nbx_core.from_dlpack(a)
    assert n.data_ptr() == a.ctypes.data
    back = np.from_dlpack(nbx_core.tensor([[1.0, 2.0]]))
    np.testing.assert_array_equal(back, [[1.0, 2.0]])
    assert nbx_core.tensor([1]).__dlpack_device__() == (1, 0)
    with pytest.raises(NbxTypeError, match="__dlpack__"):
        nbx_core.from_dlpack([1, 2])


def test_dlpack_keeps_producer_alive():
    n = nbx_core.from_dlpack(torch.arange(5.0))
    import gc

    gc.collect()
    np.testing.assert_array_equal(n.numpy(), [0, 1, 2, 3, 4])


_EXCHANGE_UNTIL_EXIT = """
import gc, os, sys
import numpy as np
import torch
import nbx_core
from nbx_core.tensor import from_dlpack

class Cycle:
    pass

gc.disable()  # every cycle lives until the last collection at exit, after the modules are cleared
kept = []
for i in range(300):
    x = nbx_core.tensor(np.arange(6, dtype=np.float32) + i)
    to_torch = torch.from_dlpack(x)
    unconsumed = x.__dlpack__()
    from_torch = from_dlpack(torch.randn(3, 4).t())
    round_trip = torch.from_dlpack(from_dlpack(to_torch))
    if i % 3 == 0:
        cycle = Cycle()
        cycle.self, cycle.values = cycle, (to_torch, from_torch, round_trip, unconsumed)
    elif i % 3 == 1:
        kept.append((to_torch, from_torch, round_trip, unconsumed))
if sys.argv[1] == "module":
    os.nbx_kept = kept  # held by a module imported before nbx_core, so freed after it at exit
assert float(round_trip.sum()) == float(np.arange(6).sum() + 6 * 299)
print("exchanged")
"""


@pytest.mark.skipif(not numeric(), reason="runs a cpu-backend process, which the cpu pass runs already")
@pytest.mark.parametrize("holder", ["cycles", "module"])
def test_dlpack_exchange_with_torch_exits_cleanly(holder):
    """Tensors and capsules shared with torch and freed while the interpreter exits release cleanly."""
    import os
    import subprocess
    import sys

    r = subprocess.run(
        [sys.executable, "-X", "faulthandler", "-c", _EXCHANGE_UNTIL_EXIT, holder],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "NBX_BACKEND": "cpu"},
    )
    assert (r.returncode, r.stdout.strip()) == (0, "exchanged"), r.stderr[-2000:]
    assert "Exception ignored" not in r.stderr, r.stderr[-2000:]


def test_to_dtype_device_and_errors():
    x = nbx_core.tensor([1.5, -2.5])
    assert x.to(D.float32) is x
    assert x.to("int32").tolist() == [1, -2] or not numeric()
    assert x.to(dtype=D.float16, copy=True) is not x
    with pytest.raises(DeviceError, match="unknown device"):
        x.to("tpu")
    with pytest.raises(NbxError, match="unexpected keyword"):
        x.to(foo=1)


def test_promotion_matches_torch():
    tmap = {d.name: getattr(torch, d.name) for d in D.ALL}
    for a, b in itertools.product(D.ALL, D.ALL):
        try:
            want = str(torch.promote_types(tmap[a.name], tmap[b.name])).removeprefix("torch.")
        except RuntimeError:
            want = None
        if want == "complex128":
            want = None
        try:
            got = D.promote_types(a, b).name
        except NbxTypeError:
            got = None
        assert got == want, (a, b)


@pytest.mark.parametrize(
    "operands",
    [
        ("t:float16", 2.5),
        ("t:int32", 2.5),
        ("t:int32", 3),
        ("t:bool", 1),
        ("t:bool", True),
        ("t:float16", "z:float64"),
        ("t:int8", "z:int64"),
        ("t:int8", "z:float64"),
        ("z:int32", 2.0),
        ("z:bool", "z:int16"),
        ("t:uint8", "z:int8"),
        ("t:float32", 1j),
        ("t:int64", 1j),
        ("t:bfloat16", "z:float16"),
    ],
)
def test_result_type_matches_torch(operands):
    def build(spec, maker):
        if isinstance(spec, str):
            kind, dt = spec.split(":")
            return maker(dt, kind)
        return spec

    tt = [build(o, lambda dt, k: torch.ones((2,) if k == "t" else (), dtype=getattr(torch, dt))) for o in operands]
    nt = [build(o, lambda dt, k: nbx_core.ones(*((2,) if k == "t" else ()), dtype=dt)) for o in operands]
    want = str(torch.result_type(*tt[:2])).removeprefix("torch.")
    assert D.result_type(*nt).name == want


def test_numpy_round_trip_all_dtypes():
    for d in D.ALL:
        x = nbx_core.ones(2, 2, dtype=d)
        assert x.numpy().dtype == d.np
        assert to_torch(x).dtype == getattr(torch, d.name)
