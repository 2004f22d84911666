"""Conformance of every core ATen name against torch CPU, through the registry."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from nbx_core.errors import NbxError
from nbx_core.testing import (
    assert_close,
    check_op,
    check_raises,
    from_torch,
    layouts,
    make,
    numeric,
    run_op,
)

FLOATS = ["float32", "float16", "bfloat16", "float64"]
ALL = [*FLOATS, "int64", "int32", "int16", "int8", "uint8", "bool"]


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "stepped", "expanded"])
@pytest.mark.parametrize("dtype", ALL)
def test_copies_and_casts(dtype, layout):
    x = dict(layouts(make((3, 4), dtype)))[layout]
    check_op("aten::clone", x, check_stride=True)
    check_op("aten::contiguous", x)
    for target in ["float32", "bfloat16", "int32", "bool", "float16", "float64", "uint8"]:
        if dtype in FLOATS and target == "uint8":
            continue  # torch's float to uint8 of negatives is platform-defined
        check_op("aten::_to_copy", x, dtype=getattr(torch, target))
    check_op("aten::_to_copy", x)
    check_op("aten::to", x, torch.float32)
    check_op("aten::type_as", x, make((1,), "float16"))
    dst = make((3, 4), "float32")
    check_op("aten::copy", dst, x)


def test_copy_inplace_broadcast_and_overlap():
    dst = make((3, 4))
    src = make((4,), "int32", seed=3)
    nd = from_torch(dst)
    from nbx_core.ops.copy import copy_

    copy_(nd, from_torch(src))
    assert_close(nd, dst.copy_(src))
    sq = make((4, 4))
    nsq = from_torch(sq)
    copy_(nsq, nsq.t())  # source overlaps destination: copied first, as torch does
    assert_close(nsq, sq.clone().copy_(sq.t()))
    with pytest.raises(NbxError, match="expanded view"):
        copy_(from_torch(make((1, 3)).expand(2, 3)), from_torch(make((2, 3))))
    with pytest.raises(NbxError, match="do not broadcast"):
        copy_(nd, from_torch(make((2, 4))))
    check_op("aten::copy_", make((2, 3)), make((3,), "bfloat16"))


def test_fp8_and_complex_casts():
    x = make((5,), low=-4, high=4)
    for fp8 in ["float8_e4m3fn", "float8_e5m2"]:
        check_op("aten::_to_copy", x, dtype=getattr(torch, fp8))
        check_op("aten::_to_copy", x.to(getattr(torch, fp8)), dtype=torch.float32)
    check_op("aten::_to_copy", x, dtype=torch.complex64)
    c = make((2, 3), "complex64")
    check_op("aten::_to_copy", c, dtype=torch.float32)
    check_op("aten::clone", c)
    check_op("aten::real", c)
    check_op("aten::imag", c)
    check_op("aten::view_as_real", c)
    check_op("aten::view_as_complex", make((3, 2)))


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int64", "bool", "float64"])
def test_fills(dtype):
    x = make((2, 3), dtype).t()
    v = True if dtype == "bool" else 3
    check_op("aten::fill", x, v)
    check_op("aten::fill_", x.clone(), v)
    check_op("aten::fill", x, torch.tensor(2))
    check_op("aten::zeros_like", x)
    check_op("aten::ones_like", x, dtype=torch.float16)
    check_op("aten::full_like", x, v)
    got = run_op("aten::empty_like", x)
    assert got.shape == tuple(x.shape) and got.dtype.name == dtype and got.stride() == x.stride()
    check_op("aten::new_zeros", x, [2, 2])
    check_op("aten::new_ones", x, [0, 3])
    got = run_op("aten::new_empty", x, [4])
    assert got.shape == (4,) and got.dtype.name == dtype


def test_fill_values_follow_torchs_range_rule():
    # A negative int wraps into uint8 as far as -255; floats and other ints must fit.
    for v in (-5, -255, 255, 3.7):
        check_op("aten::scalar_tensor", v, dtype=torch.uint8)
        check_op("aten::full", [2], v, dtype=torch.uint8)
    check_op("aten::fill", make((3,), "uint8"), -1)
    for v in (-256, 300, -0.5, 255.5):
        check_raises("aten::scalar_tensor", v, dtype=torch.uint8, match="out of range")
    check_raises("aten::full", [2], 128, dtype=torch.int8, match="out of range")
    check_raises("aten::full", [2], -129.0, dtype=torch.int8, match="out of range")


def test_float64_fill_is_exact():
    check_op("aten::full", [3], 0.1, dtype=torch.float64, rtol=0, atol=0)
    check_op("aten::fill", make((2,), "float64"), 1 / 3, rtol=0, atol=0)


def test_creation():
    check_op("aten::zeros", [2, 3])
    check_op("aten::ones", [2, 0], dtype=torch.int32)
    check_op("aten::full", [2], 7)
    check_op("aten::full", [2], True)
    check_op("aten::full", [2], 1.5, dtype=torch.bfloat16)
    check_op("aten::scalar_tensor", 3)
    check_op("aten::scalar_tensor", 2.5, dtype=torch.float64)
    for args in [(5,), (2, 9), (1, 10, 3), (10, 1, -3), (0.0, 1.0, 0.1), (-1.5, 2.5, 0.5), (0, 0), (3, 3, 1)]:
        check_op("aten::arange", *args)
    check_op("aten::arange", 10, dtype=torch.float16)
    check_op("aten::arange", 0.5, 5.5, 1, dtype=torch.int64)
    for start, end, steps in [(0, 1, 5), (-3, 7, 11), (2, 2, 3), (0, 1, 1), (0, 1, 0), (1, -1, 4)]:
        check_op("aten::linspace", start, end, steps)
    check_op("aten::linspace", 0, 10, 7, dtype=torch.int64)
    check_op("aten::linspace", 0, 1, 9, dtype=torch.float64)
    got = run_op("aten::empty", [2, 3], dtype=torch.int16)
    assert got.shape == (2, 3) and got.dtype.name == "int16"
    got = run_op("aten::empty_strided", [2, 3], [1, 2])
    assert got.shape == (2, 3) and got.stride() == (1, 2)
    check_raises("aten::arange", 0, 5, 0, match="step must be nonzero")
    check_raises("aten::arange", 5, 0, 1, match="inconsistent with step sign")
    check_raises("aten::linspace", 0, 1, -1, match="non-negative")
    with pytest.raises(NbxError, match="negative dimension"):
        run_op("aten::zeros", [2, -1])


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "stepped", "expanded"])
def test_views_through_registry(layout):
    x = dict(layouts(make((4, 6))))[layout]
    for name, args in [
        ("aten::alias", ()),
        ("aten::detach", ()),
        ("aten::lift_fresh", ()),
        ("aten::t", ()),
        ("aten::reshape", ([6, 4],)),
        ("aten::flatten", ()),
        ("aten::flatten", (0, 0)),
        ("aten::permute", ([1, 0],)),
        ("aten::transpose", (0, -1)),
        ("aten::movedim", (0, 1)),
        ("aten::expand", ([2, 4, 6],)),
        ("aten::squeeze", ()),
        ("aten::unsqueeze", (-1,)),
        ("aten::narrow", (1, -3, 2)),
        ("aten::slice", (1, -5, None, 2)),
        ("aten::slice", (0, 1, 100)),
        ("aten::select", (1, -1)),
        ("aten::unfold", (1, 3, 2)),
        ("aten::diagonal", (1, 1, 0)),
        ("aten::atleast_1d", ()),
        ("aten::atleast_2d", ()),
        ("aten::split_with_sizes", ([2, 4], 1)),
        ("aten::split", (4, 1)),
        ("aten::split", ([1, 3], 0)),
        ("aten::chunk", (4, 1)),
        ("aten::tensor_split", (4, 1)),
        ("aten::tensor_split", ([1, 5], 1)),
        ("aten::unbind", (1,)),
    ]:
        check_op(name, x, *args, check_stride=True)
    check_op("aten::expand_as", x[:1], x)
    check_op("aten::view_as", x.contiguous(), torch.empty(24))
    check_op("aten::reshape_as", x, torch.empty(3, 8))
    check_op("aten::view", x.contiguous(), [3, -1])
    check_op("aten::_unsafe_view", x.contiguous(), [2, 12])
    check_op("aten::as_strided", x, [2, 2], [1, 2], 1)
    check_op("aten::broadcast_tensors", [x, make((6,))])
    check_op("aten::squeeze", x[:1], 0)
    check_op("aten::squeeze", x[:1], [0, 1])


def test_atleast_on_scalars_and_vectors():
    for t in [torch.tensor(3.0), make((4,))]:
        check_op("aten::atleast_1d", t)
        check_op("aten::atleast_2d", t)


def test_atleast_takes_a_list_and_returns_a_list():
    ts = [torch.tensor(3.0), make((4,)), make((2, 3)).t(), make((2, 3, 4)), make((1, 2, 3, 4))]
    for name in ("aten::atleast_1d", "aten::atleast_2d", "aten::atleast_3d"):
        for t in ts:
            check_op(name, t, check_stride=True)
        got = check_op(name + ".Sequence", ts, check_stride=True)
        assert isinstance(got, list) and len(got) == len(ts)
        check_op(name + ".Sequence", (ts[0],))
    with pytest.raises(NbxError, match=r"tensors\[1\]"):
        run_op("aten::atleast_2d", [make((2,)), 3.0])


def test_views_of_a_0_dim_tensor():
    x = torch.tensor(1.5)
    check_op("aten::view_as", x, make((1,)), check_stride=True)
    check_op("aten::view", x, [1, 1], check_stride=True)
    check_op("aten::view", x, [], check_stride=True)
    check_raises("aten::view", x, [2], match="view")
    src = from_torch(x)
    assert run_op("aten::view_as", src, make((1,))).storage is src.storage  # a view, not a copy


def test_metadata_queries():
    x = make((2, 3)).t()
    assert run_op("aten::size", x, 1) == 2
    assert run_op("aten::stride", x, 0) == 1
    assert run_op("aten::dim", x) == 2
    assert run_op("aten::numel", x) == 6
    assert run_op("aten::is_contiguous", x) is False
    assert run_op("aten::is_contiguous", x.t()) is True
    assert run_op("aten::size", x) == (3, 2)
    assert run_op("aten::stride", x) == (1, 3)


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool", "bfloat16"])
def test_scalars(dtype):
    x = make((1,), dtype, nonzero=True)
    if numeric():
        assert run_op("aten::item", x) == x.item()
        assert run_op("aten::_local_scalar_dense", x) == x.item()
        assert run_op("aten::is_nonzero", x) == bool(x.item())
    with pytest.raises(NbxError, match="more than one value"):
        run_op("aten::is_nonzero", make((2,)))
    with pytest.raises(NbxError, match="no values"):
        run_op("aten::is_nonzero", make((0,)))
    with pytest.raises(NbxError, match="cannot be converted to a scalar"):
        run_op("aten::item", make((2,)))


def test_equal():
    a = make((3, 4))
    if numeric():
        assert run_op("aten::equal", a, a.clone()) is True
        assert run_op("aten::equal", a, a.t().contiguous().t()) is True
        b = a.clone()
        b[2, 3] += 1
        assert run_op("aten::equal", a, b) is False
        assert run_op("aten::equal", a, a[:2]) is False
        n = torch.tensor([1.0, float("nan")])
        assert run_op("aten::equal", n, n) is torch.equal(n, n)
        assert run_op("aten::equal", torch.tensor([1, 2]), torch.tensor([1.0, 2.0])) is True
        assert run_op("aten::equal", make((0,)), make((0,))) is True
        c = make((2,), "complex64")
        assert run_op("aten::equal", c, c.clone()) is True
    else:
        run_op("aten::equal", a, a.clone())


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool", "bfloat16"])
def test_join(dtype):
    a, b = make((2, 3), dtype), make((4, 3), dtype, seed=1)
    check_op("aten::cat", [a, b])
    check_op("aten::cat", [a.t(), b.t()], -1)
    check_op("aten::cat", [a, torch.empty(0, dtype=a.dtype), b], 0)
    check_op("aten::concat", [a, b], 0)
    check_op("aten::cat", [a, make((2, 3), "float16")], 0)
    check_op("aten::stack", [a, a.t().contiguous().t()], 1)
    check_op("aten::stack", [a, a], -1)
    check_op("aten::repeat", a, [2, 1, 3])
    check_op("aten::repeat", a.t(), [1, 0])
    check_op("aten::select_scatter", b, make((3,), dtype, seed=5), 0, -1)
    check_op("aten::slice_scatter", b, make((2, 3), dtype, seed=6), 0, 1, None, 2)
    check_raises("aten::cat", [a, make((2, 4), dtype)], 0, match="sizes of tensors must match")
    check_raises("aten::stack", [a, b], match="equal size")
    check_raises("aten::repeat", a, [2], match="can not be smaller")
    check_raises("aten::cat", [torch.tensor(1.0)], match="zero-dimensional")


def test_resize_set_and_to():
    x = make((2, 3))
    n = from_torch(x)
    from nbx_core.ops.scalar import resize_

    resize_(n, (3, 3))
    assert n.shape == (3, 3) and n.stride() == (3, 1)
    if numeric():
        np.testing.assert_array_equal(n.numpy().reshape(-1)[:6], x.numpy().reshape(-1))
    got = run_op("aten::resize_", make((4,)), [2])
    assert got.shape == (2,)
    check_op("aten::set", make((0,)), x, torch_fn=lambda a, b: torch.ops.aten.set.source_Tensor(a, b))
    check_op("aten::to", x, dtype=torch.int32)


def test_pack_padded_sequence():
    x = make((5, 3, 2))
    lengths = torch.tensor([5, 3, 2])
    check_op("aten::_pack_padded_sequence", x, lengths, False)
    check_op("aten::_pack_padded_sequence", x.transpose(0, 1).contiguous(), lengths, True)
    check_raises("aten::_pack_padded_sequence", x, torch.tensor([2, 3, 5]), False, match="decreasing")


def test_negative_and_zero_size():
    z = make((0, 3))
    check_op("aten::clone", z)
    check_op("aten::cat", [z, make((2, 3))])
    check_op("aten::_to_copy", z, dtype=torch.int8)
    check_op("aten::repeat", z, [2, 2])
    s = torch.tensor(2.5)
    check_op("aten::clone", s)
    check_op("aten::_to_copy", s, dtype=torch.int64)
    check_op("aten::expand", s, [3])
