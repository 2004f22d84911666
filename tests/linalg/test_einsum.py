"""Conformance of aten::einsum against torch CPU."""

from __future__ import annotations

import pytest
import torch

from nbx_core.testing import check_op, check_raises, make

E = "aten::einsum"


def _check(eq, *shapes, dtype="float32", **kw):
    return check_op(E, eq, [make(s, dtype, seed=i) for i, s in enumerate(shapes)], **kw)


CASES = [
    ("ij,jk->ik", (5, 9), (9, 7)),  # matmul
    ("ij,jk", (5, 9), (9, 7)),  # implicit output
    ("ba,ab", (2, 3), (3, 2)),  # implicit: nothing once, full contraction
    ("Ab,bA->", (2, 3), (3, 2)),  # upper-case subscripts
    ("ii->i", (4, 4)),  # diagonal
    ("ii", (4, 4)),  # trace
    ("iij->j", (3, 3, 5)),
    ("iji->j", (3, 5, 3)),
    ("ij->", (2, 3)),  # full sum
    ("ij->j", (2, 3)),
    ("ij->ji", (2, 3)),  # pure permutation (a view)
    ("i,j->ij", (3,), (4,)),  # outer product
    ("i,i->", (7,), (7,)),  # dot
    ("bij,bjk->bik", (2, 5, 3), (2, 3, 4)),  # bmm
    ("bij,bkj->bik", (2, 5, 3), (2, 4, 3)),  # transposed operand
    ("...ij,...jk", (2, 1, 5, 3), (4, 3, 6)),  # ellipsis with broadcasting
    ("i...->...", (2, 3)),
    ("...->", (2, 3)),
    ("i...,i...->i", (2, 3, 4), (2, 1, 4)),
    ("ij,j", (2, 1), (3,)),  # size-1 dim broadcasts
    ("ijk,kj,i->k", (3, 4, 5), (5, 4), (3,)),  # three operands
    ("ij,ik->", (3, 4), (3, 5)),  # private subscripts summed first
    ("i->", (0,)),  # 0-size
    ("ij,jk->ik", (2, 0), (0, 3)),  # 0-size contraction: zeros
    ("->", ()),  # 0-dim
    (" i j -> j i ", (2, 3)),  # spaces
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_equations(case):
    _check(case[0], *case[1:])


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64", "int32", "int64"])
def test_dtypes(dtype):
    _check("bij,bjk->bik", (2, 5, 3), (2, 3, 4), dtype=dtype)
    _check("ii->i", (4, 4), dtype=dtype)
    _check("ij->j", (2, 3), dtype=dtype)  # integer sums become int64, as in torch


def test_bool_single_operand():
    _check("ij->", (2, 3), dtype="bool")
    _check("ij->ji", (2, 3), dtype="bool")


def test_non_contiguous_operands():
    a = make((9, 5)).t()
    b = make((7, 18), seed=1)[:, ::2].t()
    check_op(E, "ij,jk->ik", [a, b])
    check_op(E, "ij,jk->ki", [make((1, 9)).expand(5, 9), b])


def test_path_and_sublist():
    ts = [make((2, 3)), make((3, 2), seed=1), make((2, 4), seed=2)]
    check_op(E, "ij,jk,kl->il", ts, path=[1, 2, 0, 1])
    check_op(E, "ij,jk,kl->il", ts, path=[0, 1, 0, 1])
    a, b = make((2, 3)), make((3, 4), seed=1)
    check_op("aten::einsum.sublist", a, [0, 1], b, [1, 2], [0, 2], torch_fn=torch.einsum)
    check_op("aten::einsum.sublist", a, [Ellipsis, 1], b, [1, 2], torch_fn=torch.einsum)


def test_bad_equations():
    x = make((2, 3))
    check_raises(E, "ij,jk->ik", [x], match="fewer operands")
    check_raises(E, "ij", [make((2, 3, 4))], match="number of subscripts")
    check_raises(E, "ii", [x], match="repeated")
    check_raises(E, "ij->jj", [x], match="more than once")
    check_raises(E, "ij->k", [x], match="does not appear")
    check_raises(E, "i,i->", [make((2,)), make((3,))], match="does not broadcast")
    check_raises(E, "ij,jk", [x, make((3, 2), "float64")], match="dtype")
    check_raises(E, "i1->", [make((2, 3))], match="invalid subscript")
    check_raises(E, "i..j->", [make((2, 3))], match="ellipsis")
    check_raises(E, "i,i->", [make((2,), "bool"), make((2,), "bool")], match="bool")
    check_raises(E, "ij,jk,kl->il", [x, make((3, 2)), make((2, 2))], path=[0, 0, 0, 1], match="path")
