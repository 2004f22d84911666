"""The layout of new results against torch: elementwise results follow their operands' layout
(TensorIterator's rule) and joins keep a memory format their inputs agree on."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from nbx_core.registry import get_registry
from nbx_core.shape import result_strides
from nbx_core.testing import from_torch, numeric, to_torch


@st.composite
def operand(draw, shape: tuple[int, ...]) -> torch.Tensor:
    """A tensor broadcastable to ``shape``: some leading dims dropped, some dims of size 1, stored
    in a random dim order, maybe sliced with a step."""
    keep = draw(st.integers(0, len(shape)))
    own = [1 if draw(st.integers(0, 3)) == 0 else s for s in shape[len(shape) - keep :]]
    order = draw(st.permutations(range(len(own))))
    step = draw(st.sampled_from([1, 1, 2])) if own else 1
    stored = [own[d] * (step if i == len(order) - 1 else 1) for i, d in enumerate(order)]
    t = torch.arange(int(np.prod(stored)), dtype=torch.float32).reshape(stored)
    if step > 1:
        t = t[..., ::step]
    return t.permute(tuple(np.argsort(order).tolist()))


layouts = (
    st.lists(st.integers(0, 4), min_size=0, max_size=5)
    .map(tuple)
    .flatmap(lambda shape: st.tuples(st.just(shape), st.lists(operand(shape), min_size=1, max_size=3)))
)


@settings(max_examples=300)
@given(layouts, st.booleans())
def test_elementwise_result_strides_match_torch(case, number):
    _, ts = case
    want = (ts[0] * 1.5 if number else torch.neg(ts[0])) if len(ts) == 1 else None
    if len(ts) == 2:
        want = ts[0] + ts[1] if not number else torch.addcmul(ts[0], ts[1], ts[1], value=2.0)
    elif len(ts) == 3:
        ts[0] = ts[0] > 3  # the condition is an operand of where, laid out by its own rule
        want = torch.where(ts[0], ts[1], ts[2])
    # The operands may broadcast to less than the drawn shape (every one dropped or kept a dim at 1).
    shape = tuple(want.shape)
    scalars = number and len(ts) == 1
    got = result_strides(shape, [(tuple(t.shape), t.stride()) for t in ts], scalars)
    assert got == want.stride(), (shape, [t.stride() for t in ts])


@pytest.mark.parametrize(
    "op,args",
    [
        ("aten::relu.default", lambda x, y: (x,)),
        ("aten::add.Tensor", lambda x, y: (x, y)),
        ("aten::mul.Tensor", lambda x, y: (x, 2.0)),
        ("aten::sigmoid.default", lambda x, y: (x,)),
    ],
)
@pytest.mark.parametrize("layout", ["channels_last", "transposed", "contiguous"])
def test_elementwise_ops_keep_the_layout(op, args, layout):
    base = torch.randn(2, 6, 5, 4)
    x = {
        "channels_last": base.contiguous(memory_format=torch.channels_last),
        "transposed": base.transpose(1, 3),
        "contiguous": base,
    }[layout]
    y = torch.randn(x.shape)
    if layout == "channels_last":
        y = y.contiguous(memory_format=torch.channels_last)
    targs = args(x, y)
    want = getattr(torch.ops.aten, op.split("::")[1].split(".")[0])(*targs)
    got = get_registry().lookup(op)(*(from_torch(a) if isinstance(a, torch.Tensor) else a for a in targs))
    assert tuple(got.stride()) == want.stride()
    if numeric():
        torch.testing.assert_close(to_torch(got), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    "fmts,want",
    [
        (("channels_last", "channels_last"), torch.channels_last),
        (("channels_last", "contiguous"), torch.contiguous_format),
        (("contiguous", "contiguous"), torch.contiguous_format),
    ],
)
def test_cat_keeps_a_shared_memory_format(fmts, want):
    fmt = {"channels_last": torch.channels_last, "contiguous": torch.contiguous_format}
    ts = [torch.randn(2, c, 3, 4).contiguous(memory_format=fmt[f]) for c, f in zip((3, 5), fmts, strict=True)]
    expected = torch.cat(ts, 1)
    assert expected.is_contiguous(memory_format=want)
    got = get_registry().lookup("aten::cat.default")([from_torch(t) for t in ts], 1)
    assert tuple(got.stride()) == expected.stride()
    if numeric():
        torch.testing.assert_close(to_torch(got), expected)


@pytest.mark.parametrize(
    "shape,fmt",
    [
        ((2, 3, 4, 5), torch.channels_last),
        ((2, 3, 2, 4, 5), torch.channels_last_3d),
    ],
)
def test_channels_last_copies_into_the_channels_last_format(shape, fmt):
    channels_last = get_registry().lookup("nbx::channels_last")
    x = torch.randn(shape)
    got = channels_last(from_torch(x))
    assert tuple(got.stride()) == x.contiguous(memory_format=fmt).stride()
    if numeric():
        torch.testing.assert_close(to_torch(got), x)
    # A tensor that already is channels-last comes back as it is, as contiguous() would.
    assert channels_last(got) is got


def test_channels_last_passes_other_ranks_through():
    x = from_torch(torch.randn(3, 4, 5))  # an unbatched conv2d input
    assert get_registry().lookup("nbx::channels_last")(x) is x


def _input(kind: str) -> torch.Tensor:
    """A (2, 8, H, 5) input: channels-last, channels-last sliced with a step, or permuted to a dense
    layout torch reads as no memory format (its results are then row-major)."""
    if kind == "permuted":
        return torch.randn(2, 5, 6, 8).permute(0, 3, 2, 1)
    x = torch.randn(2, 8, 12 if kind == "sliced" else 6, 5).contiguous(memory_format=torch.channels_last)
    return x[:, :, ::2] if kind == "sliced" else x


# Ops of every family whose result torch lays out from the input's memory format (or, for
# masked_fill, always row-major; a convolution also from its weight's): the result's strides, and
# values, match torch's.
_LAYOUT_OPS = {
    "aten::constant_pad_nd.default": lambda x: (x, [1, 2, 0, 1], 0.5),
    "aten::reflection_pad2d.default": lambda x: (x, [1, 1, 2, 1]),
    "aten::replication_pad2d.default": lambda x: (x, [2, 0, 1, 1]),
    "aten::flip.default": lambda x: (x, [2, 3]),
    "aten::roll.default": lambda x: (x, [1, -2], [2, 1]),
    "aten::pixel_shuffle.default": lambda x: (x, 2),
    "aten::pixel_unshuffle.default": lambda x: (torch.nn.functional.pixel_shuffle(x, 2), 2),
    "aten::masked_fill.Scalar": lambda x: (x, x > 0, -1.0),
    "aten::max_pool2d.default": lambda x: (x, [2, 2]),
    "aten::upsample_nearest2d.vec": lambda x: (x, None, [2.0, 2.0]),
    "aten::gelu.default": lambda x: (x,),
    "aten::where.self": lambda x: (x > 0, x, torch.zeros(1)),
    "aten::_to_copy.default": lambda x: (x,),
    "aten::_softmax.default": lambda x: (x, 1, False),
    "aten::avg_pool2d.default": lambda x: (x, [2, 2]),
    "aten::adaptive_avg_pool2d.default": lambda x: (x, [3, 2]),
    "aten::upsample_bilinear2d.vec": lambda x: (x, None, False, [2.0, 2.0]),
    "aten::_native_batch_norm_legit_no_training.default": lambda x: (
        x,
        torch.randn(8),
        torch.randn(8),
        torch.randn(8),
        torch.rand(8) + 0.5,
        0.1,
        1e-5,
    ),
    "aten::convolution.default": lambda x: (x, torch.randn(8, 4, 3, 3), None, [2, 2], [1, 1], [1, 1], True, [1, 1], 1),
    "aten::group_norm.default": lambda x: (x, 2, torch.randn(8), torch.randn(8)),
    "aten::conv2d.default": lambda x: (x, torch.randn(4, 8, 3, 3).contiguous(memory_format=torch.channels_last)),
}


@pytest.mark.parametrize("kind", ["channels_last", "sliced", "permuted"])
@pytest.mark.parametrize("op", list(_LAYOUT_OPS))
def test_results_are_laid_out_as_torchs(op, kind):
    args = _LAYOUT_OPS[op](_input(kind))
    name, overload = op.split("::")[1].split(".")
    want = getattr(getattr(torch.ops.aten, name), overload)(*args)
    got = get_registry().lookup(op)(*(from_torch(a) if isinstance(a, torch.Tensor) else a for a in args))
    if isinstance(want, tuple):  # batch norm: the result, then its (empty) statistics
        got, want = got[0], want[0]
    assert tuple(got.stride()) == want.stride()
    if numeric():
        torch.testing.assert_close(to_torch(got), want, rtol=1e-4, atol=1e-4)
