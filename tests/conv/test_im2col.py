"""Conformance of im2col, col2im and unfold_backward against torch CPU."""

from __future__ import annotations

import pytest
import torch

from nbx_core.testing import check_op, check_raises, layouts, make

ARGS = ([3, 2], [1, 2], [1, 0], [2, 1])


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
def test_im2col_col2im_dtypes(dtype):
    x = make((2, 3, 6, 5), dtype)
    check_op("aten::im2col", x, *ARGS)
    col = torch.ops.aten.im2col(x.double(), *ARGS).to(x.dtype)
    check_op(
        "aten::col2im", col, [6, 5], *ARGS, torch_fn=lambda c, *a: torch.ops.aten.col2im(c.float(), *a).to(c.dtype)
    )


def test_im2col_layouts_unbatched_empty():
    x = make((2, 3, 6, 5))
    for _, xl in layouts(x):
        check_op("aten::im2col", xl, [2, 2], [1, 1], [1, 1], [1, 1])
    check_op("aten::im2col", x.to(memory_format=torch.channels_last), *ARGS)
    check_op("aten::im2col", x[0], *ARGS)
    check_op("aten::im2col", make((0, 3, 6, 5)), *ARGS)


def test_col2im_layouts_unbatched():
    col = torch.ops.aten.im2col(make((2, 3, 6, 5)), [2, 2], [1, 1], [0, 1], [1, 2])
    for _, cl in layouts(col):
        check_op("aten::col2im", cl, [6, 5], [2, 2], [1, 1], [0, 1], [1, 2])
    check_op("aten::col2im", col[1], [6, 5], [2, 2], [1, 1], [0, 1], [1, 2])


def test_im2col_of_bool():
    check_op("aten::im2col", make((1, 2, 5, 5), "bool"), [2, 2], [1, 1], [1, 0], [1, 2])
    check_op("aten::im2col", make((2, 5, 5), "bool").transpose(1, 2), [3, 2], [1, 2], [0, 1], [2, 1])


def test_im2col_col2im_bad():
    check_raises("aten::im2col", make((1, 3, 2, 2)), [3, 3], [1, 1], [0, 0], [1, 1], match="blocks")
    check_raises("aten::im2col", make((6, 5)), [3, 3], [1, 1], [0, 0], [1, 1], match="3-D or 4-D")
    check_raises("aten::col2im", make((1, 7, 4)), [4, 4], [2, 2], [1, 1], [0, 0], [1, 1], match="divisible")
    check_raises("aten::col2im", make((1, 12, 5)), [4, 4], [2, 2], [1, 1], [0, 0], [1, 1], match="number of blocks")


@pytest.mark.parametrize("case", [(1, 3, 2), (1, 2, 1), (0, 4, 1), (-1, 1, 2), (1, 7, 3), (2, 2, 3)])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_unfold_backward(case, dtype):
    dim, size, step = case
    y = make((4, 7, 3))
    g = make(tuple(y.unfold(dim, size, step).shape), dtype, seed=3)
    check_op(
        "aten::unfold_backward",
        g,
        list(y.shape),
        dim,
        size,
        step,
        torch_fn=lambda g, *a: torch.ops.aten.unfold_backward(g.float(), *a).to(g.dtype),
    )


def test_unfold_backward_layouts_0dim_and_bad():
    g = make((4, 3, 3, 3), seed=1)  # (4, 7, 3).unfold(1, 3, 2)
    for _, gl in layouts(g):
        check_op("aten::unfold_backward", gl, [4, 7, 3], 1, 3, 2)
    check_op("aten::unfold_backward", make((1,)), [], 0, 1, 1)
    check_op("aten::unfold_backward", make((0, 3, 3, 3)), [0, 7, 3], 1, 3, 2)
    with pytest.raises(Exception, match="grad_in"):
        from nbx_core.testing import run_op

        run_op("aten::unfold_backward", make((4, 2, 3, 3)), [4, 7, 3], 1, 3, 2)
