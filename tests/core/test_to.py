"""``to`` and ``_to_copy`` in every overload, memory formats and layouts, against torch."""

from __future__ import annotations

import pytest
import torch

from nbx_core.backend import kernel_device_type
from nbx_core.errors import NbxError, NbxTypeError
from nbx_core.testing import assert_close, check_op, check_raises, from_torch, make, numeric, run_op

aten = torch.ops.aten
DEV = kernel_device_type()  # where NBX's kernels run: torch runs there too, so aliasing compares alike
CL, CL3, CONTIG, PRESERVE = torch.channels_last, torch.channels_last_3d, torch.contiguous_format, torch.preserve_format


def _inputs() -> dict[str, torch.Tensor]:
    x = make((2, 3, 4, 5), seed=1)
    return {
        "contiguous": x,
        "channels_last": x.contiguous(memory_format=CL),
        "transposed": x.transpose(1, 2),
        "stepped": x[:, :, ::2],
        "permuted_stepped": x.permute(0, 2, 3, 1)[:, ::2],
        "expanded": x[:, :1].expand(2, 3, 4, 5),
        "n111": make((4, 1, 1, 1)).permute(0, 2, 3, 1),
        "size1_odd_strides": make((1, 3, 4, 5)).as_strided((1, 3, 4, 5), (7, 20, 5, 1)),
    }


def _check_to(torch_fn, t: torch.Tensor, *args, **kwargs) -> None:
    """NBX's ``aten::to`` gives torch's values, dtype and strides, and aliases exactly when torch's does."""
    t = t.to(DEV)
    args = tuple(a.to(DEV) if isinstance(a, torch.Tensor) else a for a in args)
    want = torch_fn(t, *args, **kwargs)
    src = from_torch(t)
    got = run_op("aten::to", src, *args, **kwargs)
    assert (got is src) == (want is t), f"aliasing differs from torch for {args} {kwargs}"
    assert tuple(got.stride()) == tuple(want.stride())
    assert_close(got, want.cpu())


@pytest.mark.parametrize("layout", list(_inputs()))
@pytest.mark.parametrize("fmt", [None, PRESERVE, CONTIG, CL])
def test_memory_formats_give_torchs_strides_and_aliasing(layout, fmt):
    t = _inputs()[layout]
    kw = {} if fmt is None else {"memory_format": fmt}
    _check_to(aten.to.dtype_layout, t, **kw)
    _check_to(aten.to.dtype_layout, t, dtype=torch.float16, **kw)
    _check_to(aten.to.dtype, t, torch.float32, False, False, fmt)
    got = check_op("aten::_to_copy", t, dtype=torch.bfloat16, check_stride=True, **kw)
    assert got.stride() == aten._to_copy(t, dtype=torch.bfloat16, **kw).stride()


def test_channels_last_3d_and_empty_sizes():
    x = make((2, 3, 2, 4, 5))
    _check_to(aten.to.dtype_layout, x, memory_format=CL3)
    _check_to(aten.to.dtype_layout, x.contiguous(memory_format=CL3), memory_format=CL3)
    _check_to(aten.to.dtype_layout, torch.empty(2, 0, 3, 4), memory_format=CL)  # torch's strides of 0
    _check_to(aten.to.dtype_layout, torch.empty(0, 3).t(), dtype=torch.float64)


def test_every_overload_of_to():
    x = make((3, 4), seed=2)
    mask = make((3, 4), "bool", seed=3)
    # to.dtype_layout: transformers' ``mask.to(dtype=...)`` and keyword forms torch.export records.
    _check_to(aten.to.dtype_layout, mask, dtype=torch.float32)
    _check_to(
        aten.to.dtype_layout,
        x,
        dtype=torch.float32,
        layout=torch.strided,
        device=torch.device(DEV),
        pin_memory=False,
        non_blocking=True,
        copy=False,
        memory_format=CONTIG,
    )
    _check_to(aten.to.dtype_layout, x, layout=torch.strided, pin_memory=True)
    _check_to(aten.to.dtype_layout, x, copy=True)
    # to.device, to.dtype and to.other, positionally and by name.
    _check_to(aten.to.device, x, torch.device(DEV), torch.float64, True, False, CONTIG)
    _check_to(aten.to.device, x, DEV, torch.float32)
    _check_to(aten.to.device, x, DEV, torch.float32, copy=True)
    _check_to(aten.to.dtype, x, torch.int32, non_blocking=False, copy=True)
    _check_to(aten.to.dtype, x, dtype=torch.float32)
    _check_to(aten.to.other, x, mask)
    _check_to(aten.to.other, x, x, False, True)
    # TorchScript's prim overloads: dtypes as ScalarType codes.
    for dtype in (
        torch.uint8,
        torch.int8,
        torch.int16,
        torch.int32,
        torch.int64,
        torch.float16,
        torch.float32,
        torch.float64,
        torch.bool,
        torch.bfloat16,
    ):
        code = {
            torch.uint8: 0,
            torch.int8: 1,
            torch.int16: 2,
            torch.int32: 3,
            torch.int64: 4,
            torch.float16: 5,
            torch.float32: 6,
            torch.float64: 7,
            torch.bool: 11,
            torch.bfloat16: 15,
        }[dtype]
        assert aten.to.prim_dtype(x, code).dtype == dtype
        # |x|: a negative float cast to uint8 is undefined in C++, and torch's CPU and CUDA kernels differ
        _check_to(aten.to.prim_dtype, x.abs(), code)
    _check_to(aten.to.prim_Device, x, DEV, 5)
    _check_to(aten.to.prim_Device, x, None, 6, False, True)


def test_prim_other_copies_with_the_same_dtype():
    # torch's own prim_other(copy=True) returns uint8 (a TorchScript-only overload's bug); NBX
    # follows the schema: a copy of self.
    x = from_torch(make((3, 4)))
    assert run_op("aten::to", x, False, False) is x
    got = run_op("aten::to", x, False, True)
    assert got is not x and got.dtype == x.dtype and got.storage is not x.storage
    assert_close(got, make((3, 4)))


def test_copy_true_always_copies():
    x = from_torch(make((3, 4)))
    for kw in ({}, {"dtype": torch.float32}, {"memory_format": PRESERVE}):
        got = run_op("aten::to", x, copy=True, **kw)
        assert got is not x and got.storage is not x.storage
        assert_close(got, make((3, 4)))


def test_layouts_other_than_strided_are_refused():
    x = make((3, 4))
    for op in ("aten::to", "aten::_to_copy"):
        for layout in (torch.sparse_coo, torch.sparse_csr, torch._mkldnn):
            err = check_raises(op, x, layout=layout, match="strided")
            assert "layout" in str(err)
    with pytest.raises(NbxError, match="layout"):
        run_op("aten::to", x, layout="sparse_coo")  # graph.json's spelling


def test_channels_last_needs_its_rank():
    check_raises("aten::_to_copy", make((2, 3, 4)), memory_format=CL, match="rank 4")
    check_raises("aten::to", make((2, 3, 4, 5)), memory_format=CL3, match="rank 5")
    check_raises("aten::contiguous", make((2, 3)).t(), memory_format=PRESERVE, match="preserve")


def test_unknown_arguments_are_named():
    x = make((2, 2))
    with pytest.raises(NbxTypeError, match="'fmt'"):
        run_op("aten::to", x, torch.float32, fmt=CL)
    with pytest.raises(NbxTypeError, match="memory_format"):
        run_op("aten::to", x, memory_format="row_major")
    with pytest.raises(NbxTypeError, match="two values"):
        run_op("aten::to", x, torch.float32, dtype=torch.float16)


@pytest.mark.parametrize("fmt", [PRESERVE, CONTIG, CL])
def test_clone_contiguous_empty_like_follow_memory_format(fmt):
    for t in _inputs().values():
        check_op("aten::clone", t, memory_format=fmt, check_stride=True)
        got = run_op("aten::empty_like", t, memory_format=fmt)
        assert got.stride() == torch.empty_like(t, memory_format=fmt).stride()
        assert run_op("aten::is_contiguous", t, memory_format=fmt) == t.is_contiguous(memory_format=fmt)
        if fmt is not PRESERVE:
            src = from_torch(t)
            got = run_op("aten::contiguous", src, memory_format=fmt)
            want = t.contiguous(memory_format=fmt)
            assert (got is src) == (want is t) and got.stride() == want.stride()
            assert_close(got, want)
    assert run_op("aten::empty", [2, 3, 4, 5], memory_format=CL).stride() == (60, 1, 15, 3)


def test_method_to_takes_torchs_python_forms():
    x = from_torch(make((2, 3, 4, 5)))
    assert x.to(DEV) is x and x.to(x.dtype) is x and x.to(x) is x
    assert x.to("float16").dtype.name == "float16"
    assert x.to(memory_format=CL).stride() == (60, 1, 15, 3)
    assert x.to(DEV, "float64", copy=True).dtype.name == "float64"


class _Casts(torch.nn.Module):
    """The ``to`` calls transformers makes: dtype by keyword, dtype_layout with layout=, memory formats."""

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, ...]:
        m = mask.to(dtype=torch.float32)
        m = (1.0 - m) * torch.finfo(torch.float32).min
        same = x.to(x.dtype)
        same.mul_(2.0)  # ``to`` returned x itself: the write reaches x
        cl = x.to(torch.float16, memory_format=torch.channels_last)
        contig = cl.to(memory_format=torch.contiguous_format)  # to.dtype_layout with layout=strided
        dev = contig.to("cpu", torch.float32, non_blocking=True)
        return m, x + 1.0, cl.float() * 3.0, dev + m[:, None, None, :5]


def test_export_and_run_transformers_style_casts(tmp_path):
    from nbx_core.graph import load
    from nbx_core.graph.export import export_module

    x, mask = make((2, 3, 4, 5), seed=4), make((2, 6), "bool", seed=5)
    path = export_module(_Casts(), (x.clone(), mask), tmp_path / "casts.nbx")
    ops = load(path).required_ops()
    assert {"aten::to.dtype_layout", "aten::to.dtype"} <= set(ops)
    if not numeric():  # the aot backend runs no program: it compiles the kernels a run launches
        load(path).check_compiles(x.clone(), mask)
        return
    got = load(path)(x.clone(), mask)
    want = _Casts()(x.clone(), mask)
    for g, w in zip(got, want, strict=True):
        assert_close(g, w, rtol=1e-3, atol=1e-3)
