"""Stride math against torch: shapes, strides, offsets and values of every metadata op."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from nbx_core.errors import IndexOutOfRangeError, NbxError, ShapeError
from nbx_core.ops import views
from nbx_core.testing import from_torch, make, numeric, to_torch


def same_view(nb, tt: torch.Tensor) -> None:
    assert tuple(nb.shape) == tuple(tt.shape)
    if tt.numel() > 1:
        assert tuple(nb.stride()) == tuple(tt.stride())
    if tt.numel() > 0:
        assert nb.storage_offset() == tt.storage_offset()
    if numeric():  # on aot, reading a strided view back launches a copy that computes nothing
        np.testing.assert_array_equal(to_torch(nb).numpy(), tt.numpy())


shapes = st.lists(st.integers(0, 4), min_size=0, max_size=4).map(tuple)


@st.composite
def strided(draw):
    """A torch tensor that is a random view: permuted, sliced with steps, maybe expanded."""
    shape = draw(st.lists(st.integers(1, 5), min_size=1, max_size=4))
    base = torch.arange(int(np.prod(shape)) * 4, dtype=torch.float32)
    t = base[: int(np.prod(shape))].reshape(shape)
    if draw(st.booleans()):
        perm = draw(st.permutations(range(len(shape))))
        t = t.permute(*perm)
    d = draw(st.integers(0, t.ndim - 1))
    step = draw(st.integers(1, 3))
    t = t[(slice(None),) * d + (slice(None, None, step),)]
    return t


@given(strided(), st.data())
def test_chains_match_torch(t, data):
    nb = from_torch(t)
    for _ in range(3):
        op = data.draw(
            st.sampled_from(
                [
                    "t",
                    "unsqueeze",
                    "squeeze",
                    "slice",
                    "select",
                    "flatten",
                    "permute",
                    "transpose",
                    "narrow",
                    "diagonal",
                    "unfold",
                    "movedim",
                    "expand",
                ]
            )
        )
        nd = t.ndim
        try:
            if op == "t" and nd <= 2:
                t, nb = t.t(), views.t(nb)
            elif op == "unsqueeze":
                d = data.draw(st.integers(-nd - 1, nd))
                t, nb = t.unsqueeze(d), views.unsqueeze(nb, d)
            elif op == "squeeze":
                t, nb = t.squeeze(), views.squeeze(nb)
            elif op == "slice" and nd:
                d = data.draw(st.integers(-nd, nd - 1))
                s, e = data.draw(st.integers(-6, 6)), data.draw(st.integers(-6, 6))
                step = data.draw(st.integers(1, 3))
                t, nb = t[(slice(None),) * (d % nd) + (slice(s, e, step),)], views.slice(nb, d, s, e, step)
            elif op == "select" and nd and t.shape[0]:
                i = data.draw(st.integers(-t.shape[0], t.shape[0] - 1))
                t, nb = t.select(0, i), views.select(nb, 0, i)
            elif op == "flatten":
                t, nb = t.flatten(), views.flatten(nb)
            elif op == "permute" and nd:
                p = data.draw(st.permutations(range(nd)))
                t, nb = t.permute(*p), views.permute(nb, p)
            elif op == "transpose" and nd:
                a, b = data.draw(st.integers(-nd, nd - 1)), data.draw(st.integers(-nd, nd - 1))
                t, nb = t.transpose(a, b), views.transpose(nb, a, b)
            elif op == "narrow" and nd and t.shape[-1]:
                s = data.draw(st.integers(0, t.shape[-1] - 1))
                n = data.draw(st.integers(0, t.shape[-1] - s))
                t, nb = t.narrow(-1, s, n), views.narrow(nb, -1, s, n)
            elif op == "diagonal" and nd >= 2:
                o = data.draw(st.integers(-3, 3))
                t, nb = t.diagonal(o, 0, -1), views.diagonal(nb, o, 0, -1)
            elif op == "unfold" and nd and t.shape[-1]:
                size = data.draw(st.integers(0, t.shape[-1]))
                step = data.draw(st.integers(1, 3))
                t, nb = t.unfold(-1, size, step), views.unfold(nb, -1, size, step)
            elif op == "movedim" and nd >= 2:
                t, nb = t.movedim(0, -1), views.movedim(nb, 0, -1)
            elif op == "expand" and nd:
                t1 = t.unsqueeze(0)
                t, nb = t1.expand(2, *t.shape), views.expand(views.unsqueeze(nb, 0), 2, *t.shape)
        except (RuntimeError, IndexError, ValueError):
            return
        same_view(nb, t)


def torch_or_refused(torch_op, nbx_op) -> torch.Tensor | None:
    """``torch_op()``, or None once ``nbx_op()`` has refused what torch refuses."""
    try:
        return torch_op()
    except RuntimeError:
        with pytest.raises(NbxError):
            nbx_op()
        return None


@given(strided(), st.lists(st.integers(-1, 6), min_size=1, max_size=4))
def test_view_and_reshape_match_torch(t, shape):
    nb = from_torch(t)
    want = torch_or_refused(lambda: t.view(shape), lambda: views.view(nb, shape))
    if want is not None:
        same_view(views.view(nb, shape), want)
    want = torch_or_refused(lambda: t.reshape(shape), lambda: views.reshape(nb, shape))
    if want is not None:
        got = views.reshape(nb, shape)
        if numeric():
            np.testing.assert_array_equal(to_torch(got).numpy(), want.numpy())
        assert got.shape == tuple(want.shape)
        # reshape returns a view exactly when torch does
        assert (got.storage is nb.storage) == (
            want.data_ptr() == t.data_ptr() or want.numel() == 0 or want._base is not None and want._base is t._base
        )


@pytest.mark.parametrize(
    "size,sections,dim", [(7, 3, 0), (6, 4, 0), (0, 2, 0), (5, [1, 3], 0), (5, [-2, 10], 0), (5, [3, 1], 0), (4, 1, -1)]
)
def test_tensor_split(size, sections, dim):
    t = make((size, 2))
    want = torch.tensor_split(t, sections, dim)
    got = views.tensor_split(from_torch(t), sections, dim)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        same_view(g, w)


@pytest.mark.parametrize("size,split", [(7, 3), (6, 2), (0, 0), (5, 10), (3, 1)])
def test_split_and_chunk(size, split):
    t = make((size, 3))
    for g, w in zip(views.split(from_torch(t), split), torch.split(t, split), strict=True):
        same_view(g, w)
    if split:
        got, want = views.chunk(from_torch(t), split), torch.chunk(t, split)
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            same_view(g, w)


def test_split_with_sizes_and_unbind():
    t = make((6, 2))
    for g, w in zip(views.split_with_sizes(from_torch(t), [1, 0, 5]), t.split_with_sizes([1, 0, 5]), strict=True):
        same_view(g, w)
    with pytest.raises(ShapeError, match="sum to 5"):
        views.split_with_sizes(from_torch(t), [1, 4])
    for g, w in zip(views.unbind(from_torch(t), 1), t.unbind(1), strict=True):
        same_view(g, w)


def test_errors_match_torch():
    t = from_torch(make((2, 3)))
    with pytest.raises(ShapeError, match="not compatible"):
        views.view(views.t(t), (6,))
    with pytest.raises(ShapeError, match="invalid for input of size 6"):
        views.view(t, (4, 2))
    with pytest.raises(IndexOutOfRangeError, match="out of range"):
        views.select(t, 0, 2)
    with pytest.raises(IndexOutOfRangeError, match=r"dim=4 is out of range: expected a value in -3\.\.2"):
        views.unsqueeze(t, 4)
    with pytest.raises(ShapeError, match="must match the existing size"):
        views.expand(t, (3, 3))
    with pytest.raises(ShapeError, match="out of bounds"):
        views.as_strided(t, (3, 3), (3, 1))
    with pytest.raises(NbxError, match="step must be positive"):
        views.slice(t, 0, None, None, 0)
    with pytest.raises(IndexOutOfRangeError):
        views.narrow(t, 1, 2, 2)


def test_as_strided_diagonal_real_imag_dtype_views():
    t = make((4, 4))
    same_view(views.as_strided(from_torch(t), (2, 2), (5, 1), 1), t.as_strided((2, 2), (5, 1), 1))
    c = torch.complex(make((3,)), make((3,), seed=1))
    nc = from_torch(c)
    same_view(views.view_as_real(nc), torch.view_as_real(c))
    same_view(views.real(nc), c.real)
    same_view(views.imag(nc), c.imag)
    r = make((3, 2))
    np.testing.assert_array_equal(
        to_torch(views.view_as_complex(from_torch(r))).numpy(), torch.view_as_complex(r).numpy()
    )
    same_view(views.view(from_torch(r), "int32"), r.view(torch.int32))
    same_view(views.view(from_torch(make((2, 4), "int16")), "int32"), make((2, 4), "int16").view(torch.int32))
    with pytest.raises(NbxError, match="imag is not implemented"):
        views.imag(from_torch(r))
    with pytest.raises(NbxError, match="last dim must have size 2"):
        views.view_as_complex(from_torch(make((3, 3))))
