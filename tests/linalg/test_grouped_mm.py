"""_grouped_mm against torch and a float64 reference: groups of rows (empty ones too), of columns,
of the contracted dim, batched products, rows past the last group, and the argument checks."""

from __future__ import annotations

import pytest
import torch
from nbx_linalg import configs

from nbx_core.errors import NbxValueError
from nbx_core.testing import TOLERANCES, assert_close, check_op, check_raises, make, numeric, run_op

OP = "aten::_grouped_mm"
DTYPES = ["float32", "bfloat16", "float16"]


def _offs(sizes: list[int]) -> torch.Tensor:
    return torch.tensor(sizes, dtype=torch.int32).cumsum(0, dtype=torch.int32)


def _rows_reference(x: torch.Tensor, w: torch.Tensor, offs: torch.Tensor) -> torch.Tensor:
    """Each row times its group's matrix in float64, rows past the last group zero, rounded once."""
    out = torch.zeros(x.shape[0], w.shape[-1], dtype=torch.float64)
    start = 0
    for g, end in enumerate(offs.tolist()):
        end = min(end, x.shape[0])
        out[start:end] = x[start:end].double() @ w[g].double()
        start = end
    return out.to(x.dtype)


def _check_rows(x: torch.Tensor, w: torch.Tensor, offs: torch.Tensor) -> None:
    got = run_op(OP, x, w, offs)
    assert_close(got, _rows_reference(x, w, offs), what=f"{OP} rows {offs.tolist()}")
    # torch leaves the rows past the last group unwritten: compare it on the grouped rows only.
    if numeric():
        end = min(int(offs[-1]) if len(offs) else 0, x.shape[0])
        want = torch.ops.aten._grouped_mm(x, w, offs)
        rtol, atol = TOLERANCES[str(x.dtype).removeprefix("torch.")]
        assert_close(got[:end] if end else got[:0], want[:end], rtol=rtol, atol=atol)


@pytest.mark.parametrize("dtype", DTYPES)
def test_row_groups(dtype: str) -> None:
    x = make((40, 24), dtype)
    w = make((5, 24, 16), dtype, seed=1)
    # Empty groups first, between others and last; one group spans several row tiles and one
    # row tile spans several groups.
    for sizes in ([0, 3, 1, 0, 36], [40, 0, 0, 0, 0], [2, 1, 2, 1, 34], [0, 0, 0, 0, 40], [8, 8, 8, 8, 8]):
        _check_rows(x, w, _offs(sizes))


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_rows_past_the_last_group_are_zero(dtype: str) -> None:
    x = make((30, 16), dtype)
    w = make((3, 16, 8), dtype, seed=2)
    _check_rows(x, w, _offs([4, 0, 9]))
    _check_rows(x, w, torch.tensor([0, 0, 0], dtype=torch.int32))
    # Ends past the rows stop at the last row, as torch's slices do.
    _check_rows(x, w, torch.tensor([10, 25, 45], dtype=torch.int32))
    _check_rows(x, torch.empty(0, 16, 8, dtype=w.dtype), torch.empty(0, dtype=torch.int32))


def test_row_groups_take_any_strides() -> None:
    # transformers' experts pass weight.transpose(-2, -1): (G, K, N) with K contiguous.
    x = make((20, 32), "float32")
    w = make((4, 16, 32), "float32", seed=3).transpose(1, 2)
    offs = _offs([5, 0, 7, 6])
    check_op(OP, x, w, offs, torch_fn=lambda *a: _rows_reference(*a))
    check_op(OP, make((32, 20), "float32").t(), w, offs, torch_fn=lambda *a: _rows_reference(*a))
    check_op(OP, make((20, 64), "float32")[:, ::2], w, offs, torch_fn=lambda *a: _rows_reference(*a))


def test_row_groups_in_small_tiles(monkeypatch) -> None:
    # Several row and column tiles, K in steps with a ragged last one, the groups crossing tiles.
    tiles = {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16, "GROUP_M": 2, "num_warps": 4, "num_stages": 1}
    monkeypatch.setattr(configs.GEMM, "lookup", lambda *a, **k: dict(tiles))
    x = make((70, 40), "float32")
    w = make((6, 40, 40), "float32", seed=4)
    for sizes in ([9, 0, 20, 1, 15, 17], [0, 16, 16, 0, 16, 16], [3, 3, 3, 3, 3, 3]):
        _check_rows(x, w, _offs(sizes))


def test_result_layout_is_torchs() -> None:
    # Rows padded to 16 bytes: 5 float32 columns are stored 8 apart.
    x = make((10, 8), "float32")
    w = make((3, 8, 8), "float32", seed=5)[:, :, :5]
    got = run_op(OP, x, w, _offs([3, 3, 4]))
    assert got.stride() == torch.ops.aten._grouped_mm(x, w, _offs([3, 3, 4])).stride() == (8, 1)
    assert_close(got, _rows_reference(x, w, _offs([3, 3, 4])))


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_column_groups(dtype: str) -> None:
    # 3-D self x 2-D mat2: group g's columns of the result are self[g] @ those columns of mat2.
    a = make((3, 10, 16), dtype)
    b = make((16, 24), dtype, seed=6)
    offs = _offs([8, 0, 12])
    want = torch.zeros(10, 24, dtype=torch.float64)
    start = 0
    for g, end in enumerate(offs.tolist()):
        want[:, start:end] = a[g].double() @ b[:, start:end].double()
        start = end
    got = run_op(OP, a, b, offs)
    assert_close(got, want.to(a.dtype))
    rtol, atol = TOLERANCES[dtype]
    check_op(OP, a, b, _offs([8, 4, 12]), rtol=rtol, atol=atol)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_contracted_dim_groups(dtype: str) -> None:
    # 2-D x 2-D: result g is self[:, s:e] @ mat2[s:e, :], zeros for an empty group.
    a = make((12, 40), dtype)
    b = make((40, 8), dtype, seed=7)
    for sizes in ([10, 0, 25, 5], [40], [0, 0]):
        offs = _offs(sizes)
        want = torch.stack(
            [a[:, s:e].double() @ b[s:e].double() for s, e in zip([0, *offs.tolist()[:-1]], offs.tolist(), strict=True)]
        )
        assert_close(run_op(OP, a, b, offs), want.to(a.dtype))
    check_op(OP, a, b, _offs([10, 0, 25, 5]), rtol=TOLERANCES[dtype][0], atol=TOLERANCES[dtype][1])
    check_op(OP, a, b, torch.tensor([16, 48], dtype=torch.int32))  # the last slice ends at K


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_batched(dtype: str) -> None:
    check_op(OP, make((3, 5, 8), dtype), make((3, 8, 8), dtype, seed=8), check_stride=True)


def test_empty_and_degenerate() -> None:
    x = make((10, 8), "float32")
    w = make((3, 8, 8), "float32", seed=9)
    check_op(OP, x[:0], w, _offs([0, 0, 0]))
    assert_close(run_op(OP, torch.empty(10, 0), torch.empty(3, 0, 8), _offs([4, 2, 4])), torch.zeros(10, 8))


def test_errors() -> None:
    x = make((10, 8), "float32")
    w = make((3, 8, 8), "float32", seed=10)
    offs = _offs([3, 3, 4])
    check_raises(OP, x.double(), w.double(), offs, match="self .*float16, bfloat16 or float32")
    check_raises(OP, x.int(), w.int(), offs, match="self")
    check_raises(OP, x, w.bfloat16(), offs, match="mat2 has dtype bfloat16")
    check_raises(OP, x[0], w, offs, match="self must be")
    check_raises(OP, x, w, offs.long(), match="offs .*int32")
    check_raises(OP, x, w, offs[None], match="offs must be")
    check_raises(OP, x, w, match="needs offs.*pass offs")
    check_raises(OP, make((3, 4, 8)), w, offs, match="takes no offs.*offs=None")
    check_raises(OP, make((2, 4, 8)), w, match="2 matrices and mat2 3")
    check_raises(OP, x, w, _offs([3, 7]), match="offs has 2 groups but mat2 has 3")
    check_raises(OP, make((2, 4, 8)), make((8, 8)), offs, match="offs has 3 groups but self has 2")
    check_raises(OP, x, make((3, 16, 8)), offs, match="self's last dim \\(8\\) must equal mat2's")
    check_raises(OP, x, w, offs, make((3, 8)), match="bias is not supported.*add the bias")
    check_raises(OP, x.bfloat16(), w.bfloat16(), offs, None, torch.float32, match="out_dtype must be")


@pytest.mark.parametrize("offs", [[3, 2, 10], [-1, 4, 10], [4, 4, 3]])
def test_offs_out_of_order_raise(offs: list[int]) -> None:
    # torch's loop overwrites rows in group order there; NBX asks for cumulative ends instead,
    # checked on the device (the error comes when the checks are read; aot runs no kernel).
    x = make((10, 8), "float32")
    w = make((3, 8, 8), "float32", seed=11)
    bad = torch.tensor(offs, dtype=torch.int32)
    if not numeric():
        run_op(OP, x, w, bad)
        return
    first = next(i for i, v in enumerate(offs) if v < (offs[i - 1] if i else 0))
    with pytest.raises(NbxValueError, match=f"aten::_grouped_mm: offs .* offs\\[{first}\\] is below .*running sum"):
        run_op(OP, x, w, bad)
    with pytest.raises(NbxValueError, match="running sum of the columns"):
        run_op(OP, make((3, 8, 8)), make((8, 10), seed=12), bad)
    with pytest.raises(NbxValueError, match="running sum of the contracted elements"):
        run_op(OP, make((8, 10)), make((10, 8), seed=12), bad)
