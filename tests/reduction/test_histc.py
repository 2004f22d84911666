"""histc against torch: bins over [min, max] or the data's own range, edges, NaN, errors."""

from __future__ import annotations

import pytest
import torch

from nbx_core.errors import NbxError, NbxTypeError, NbxValueError
from nbx_core.testing import check_op, check_raises, layouts, make, numeric, run_op, to_torch

FLOATS = ["float32", "float64", "float16", "bfloat16"]


@pytest.mark.parametrize("dtype", FLOATS)
def test_histc_counts(dtype: str) -> None:
    x = make((60,), dtype, low=-1.0, high=4.0)
    check_op("aten::histc", x)
    check_op("aten::histc", x, 4, 0, 3)
    check_op("aten::histc", x, 7, -0.5, 2.25)
    check_op("aten::histc", x, 1, -1, 4)
    for _, t in layouts(make((6, 9), dtype, low=-1.0, high=4.0)):
        check_op("aten::histc", t, 5, 0, 3)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_histc_more_bins_than_one_program_counts(dtype: str) -> None:
    # Past 256 bins every element adds to its bin on its own (no per-program histogram).
    x = make((200,), dtype, low=0.0, high=30.0)
    check_op("aten::histc", x, 300, 0, 30)
    check_op("aten::histc", x, 256, 0, 30)
    check_op("aten::histc", x, 257, 0, 30)


@pytest.mark.parametrize("dtype", FLOATS)
def test_histc_edges(dtype: str) -> None:
    # min lands in the first bin and max in the last; values outside the range, NaN and inf are
    # not counted; values on inner edges go to the bin on their right.
    x = torch.tensor(
        [0.0, 3.0, 3.0, 1.5, 0.75, 2.25, -0.01, 3.01, -1.0, 7.0, float("nan"), float("inf"), -float("inf"), 2.9999]
    ).to(getattr(torch, dtype))
    check_op("aten::histc", x, 4, 0, 3)
    check_op("aten::histc", x, 3, -1, 3)
    check_op("aten::histc", torch.linspace(0, 3, 31, dtype=getattr(torch, dtype)), 10, 0, 3)
    check_op("aten::histc", torch.linspace(-2, 2, 41, dtype=getattr(torch, dtype)), 8, -2, 2)


def test_histc_range_from_the_data() -> None:
    x = make((40,), "float32", low=-2.0, high=5.0)
    check_op("aten::histc", x, 6, 0, 0)  # min == max == 0: the data's min and max
    check_op("aten::histc", x, 6, 1.5, 1.5)  # any min == max does the same
    check_op("aten::histc", x.to(torch.bfloat16), 6)
    check_op("aten::histc", torch.full((5,), 2.5), 4, 0, 0)  # one value: its range widens by 1 each way
    check_op("aten::histc", torch.full((5,), 2.5), 4, 2.5, 2.5)
    check_op("aten::histc", torch.tensor([-float("inf"), 1.0]), 4, 0, 0.5)  # explicit ends ignore infs


def test_histc_shapes_and_scalars() -> None:
    check_op("aten::histc", torch.empty(0), 4, 0, 0)  # nothing to bin: [-1, 1], all zeros
    check_op("aten::histc", torch.empty(0, 3), 4, 0, 3)
    check_op("aten::histc", torch.tensor(2.0), 4, 0, 3)
    check_op("aten::histc", torch.tensor(2.0), 4, 0, 0)
    x = make((3, 4, 5), "float64", low=0.0, high=1.0)
    check_op("aten::histc", x.permute(2, 0, 1), 9, 0, 1)
    check_op("aten::histc", x, 9, True, 1)  # bool and int ends, as torch takes them
    check_op("aten::histc", x, 9, 0.25, 0.75)


def test_histc_counts_tokens_per_expert() -> None:
    # transformers' mixture-of-experts layers: sorted expert ids as floats, one bin per expert.
    ids = torch.sort(make((48,), "int64", low=0, high=6))[0].float()
    check_op("aten::histc", ids, 8, 0, 7)
    check_op("aten::histc", torch.cat([ids, torch.full((3,), 8.0)]), 8, 0, 7)  # ids past the last are dropped


def test_histc_out() -> None:
    x = make((30,), "float32", low=0.0, high=2.0)
    out = torch.full((5,), 9.0)
    got = run_op("aten::histc.out", x, 5, 0, 2, out=out)
    if numeric():
        torch.testing.assert_close(to_torch(got), torch.histc(x, 5, 0, 2))
    with pytest.raises(NbxError, match="out"):
        run_op("aten::histc.out", x, 5, 0, 2, out=torch.empty(4))


def test_histc_errors() -> None:
    x = make((10,), "float32")
    check_raises("aten::histc", x, 0, 0, 3, match="bins must be > 0")
    check_raises("aten::histc", x, -2, 0, 3, match="bins must be > 0")
    check_raises("aten::histc", x, 4, 3, 1, match="max must be larger than min.*swap")
    check_raises("aten::histc", x, 4, 0, float("inf"), match="not finite: pass finite min and max")
    check_raises("aten::histc", x, 4, float("nan"), 1, match="not finite")
    check_raises("aten::histc", torch.tensor([1, 2]), 4, 0, 3, match="aten::histc: self .*floating")
    check_raises("aten::histc", torch.tensor([True]), 4, 0, 3, match="floating")
    with pytest.raises(NbxTypeError, match="bins must be an int"):
        run_op("aten::histc", x, 4.0, 0, 3)
    with pytest.raises(NbxTypeError, match="min must be a number"):
        run_op("aten::histc", x, 4, "0", 3)


def test_histc_data_range_must_be_finite() -> None:
    # torch reads the data's range on the host; NBX reads it on the device, so the error comes
    # when the checks are read (run_op reads them; the aot backend runs no kernel).
    for bad in (float("nan"), float("inf")):
        x = torch.tensor([1.0, bad, 2.0])
        with pytest.raises(RuntimeError):
            torch.histc(x, 4, 0, 0)
        if numeric():
            with pytest.raises(NbxValueError, match="aten::histc: min == max .* NaN or inf.* pass finite min"):
                run_op("aten::histc", x, 4, 0, 0)
        else:
            run_op("aten::histc", x, 4, 0, 0)
