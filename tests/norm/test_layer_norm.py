"""Conformance of aten::native_layer_norm, aten::layer_norm and aten::rms_norm against torch (CPU)."""

from __future__ import annotations

import nbx_norm.layer_norm as ln
import numpy as np
import pytest
import torch

from nbx_core.errors import DeviceError, NbxTypeError
from nbx_core.runtime.plans import PlanCache
from nbx_core.testing import check_op, check_raises, from_torch, layouts, make, numeric, run_op

FLOATS = ["float32", "float16", "bfloat16", "float64"]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("affine", ["none", "weight", "both"])
def test_native_layer_norm_dtypes(dtype, affine):
    x = make((3, 4, 24), dtype)
    w = make((24,), dtype, seed=1) if affine != "none" else None
    b = make((24,), dtype, seed=2) if affine == "both" else None
    check_op("aten::native_layer_norm", x, [24], w, b, 1e-5)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_native_layer_norm_mixed_float32_params(dtype):
    # A half input with float32 weight/bias: output in the input's dtype, statistics in float32.
    x = make((5, 16), dtype)
    check_op("aten::native_layer_norm", x, [16], make((16,), seed=1), make((16,), seed=2), 1e-5)
    check_op("aten::native_layer_norm", x, [16], make((16,), seed=1), None, 1e-5)


def test_native_layer_norm_multi_dim_shape():
    x = make((2, 3, 4, 5))
    check_op("aten::native_layer_norm", x, [4, 5], make((4, 5), seed=1), make((4, 5), seed=2), 1e-3)
    check_op("aten::native_layer_norm", x, [2, 3, 4, 5], None, None, 1e-5)


@pytest.mark.parametrize("op", ["aten::native_layer_norm", "aten::layer_norm"])
def test_layer_norm_layouts(op):
    base = make((6, 10)) * 2 + 1
    for name, x in layouts(base):
        w = make((20,), seed=1)[::2]
        if op == "aten::layer_norm":
            check_op(op, x, [10], w, None)
        else:
            check_op(op, x, [10], w, make((10,), seed=2), 1e-5)
        assert name


def test_layer_norm_defaults_and_keywords():
    x = make((4, 12), "bfloat16")
    check_op("aten::layer_norm", x, [12])
    check_op(
        "aten::layer_norm",
        x,
        [12],
        make((12,), "bfloat16", seed=1),
        make((12,), "bfloat16", seed=2),
        eps=1e-2,
        cudnn_enable=False,
    )
    check_op("aten::layer_norm", x, [12], make((12,), seed=1), make((12,), seed=2))


def test_layer_norm_zero_size():
    check_op("aten::native_layer_norm", make((0, 4)), [4], None, None, 1e-5)
    check_op("aten::native_layer_norm", make((3, 0)), [0], None, None, 1e-5)
    check_op("aten::layer_norm", make((2, 0, 4)), [4])
    check_op("aten::rms_norm", make((3, 0)), [0])


def _float64_layer_norm(x, shape, w, b, eps):
    # torch's float32 CPU kernel loses digits on an offset mean; NBX's merge of chunk moments does not.
    out = torch.ops.aten.native_layer_norm(x.double(), shape, w.double(), b.double(), eps)
    return tuple(t.to(x.dtype) for t in out)


@pytest.mark.parametrize("rows", [1, 3])
def test_chunked_rows(monkeypatch, rows):
    # Rows longer than the fused block take the two-loop kernel; an offset mean checks stability.
    monkeypatch.setattr(ln, "FUSED_MAX", 32)
    monkeypatch.setattr(ln, "CHUNK", 32)
    monkeypatch.setattr(ln, "_plans", PlanCache())  # plans made before the patch keep the fused kernel
    x = make((rows, 100)) * 0.5 + 4.0
    check_op(
        "aten::native_layer_norm",
        x,
        [100],
        make((100,), seed=1),
        make((100,), seed=2),
        1e-5,
        torch_fn=_float64_layer_norm,
    )
    check_op("aten::layer_norm", make((rows, 100), "bfloat16"), [100])
    check_op("aten::rms_norm", make((rows, 100), "bfloat16"), [100], make((100,), "bfloat16", seed=1))


@pytest.mark.parametrize("chunked", [False, True])
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_layer_norm_variance_overflow_is_nan(monkeypatch, chunked):
    # The float32 variance of these rows overflows: torch gives NaN (rms_norm: 0), not 0.
    if chunked:
        monkeypatch.setattr(ln, "FUSED_MAX", 8)
        monkeypatch.setattr(ln, "CHUNK", 8)
        monkeypatch.setattr(ln, "_plans", PlanCache())
    rows = torch.tensor([[3e38, -3e38, 3e38, -3e38], [1e20, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0]]).repeat(1, 4)
    check_op("aten::layer_norm", rows, [16], make((16,), seed=1), make((16,), seed=2))
    check_op("aten::layer_norm", rows, [16])
    rstd = run_op("aten::native_layer_norm", rows, [16], None, None, 1e-5)[2].numpy()[:, 0]
    if numeric():
        assert np.isnan(rstd[:2]).all() and np.isfinite(rstd[2])
    check_op("aten::rms_norm", rows, [16])


@pytest.mark.parametrize("dtype", FLOATS)
def test_rms_norm_dtypes(dtype):
    x = make((3, 5, 32), dtype)
    check_op("aten::rms_norm", x, [32])
    check_op("aten::rms_norm", x, [32], make((32,), dtype, seed=1), 1e-6)
    check_op("aten::rms_norm", x, [5, 32], make((5, 32), dtype, seed=1))


def test_rms_norm_default_eps_is_the_compute_types():
    # torch uses float32's epsilon for half inputs: visible when mean(x^2) is comparable to it.
    for dtype in ["bfloat16", "float16", "float32"]:
        check_op("aten::rms_norm", torch.full((2, 4), 1e-4, dtype=getattr(torch, dtype)), [4], None, None)
    check_op("aten::rms_norm", torch.full((2, 4), 1e-9, dtype=torch.float64), [4], None, None)


@pytest.mark.parametrize("wdtype", ["float32", "bfloat16", "float16"])
def test_rms_norm_any_weight_dtype(wdtype):
    check_op("aten::rms_norm", make((4, 16), "float16"), [16], make((16,), wdtype, seed=1))
    check_op("aten::rms_norm", make((4, 16), "float32"), [16], make((16,), wdtype, seed=1))


def test_rms_norm_layouts():
    for _, x in layouts(make((6, 10), "bfloat16")):
        check_op("aten::rms_norm", x, [10], make((10,), "bfloat16", seed=1), 1e-5)


def test_bad_inputs():
    x = make((2, 3, 4))
    check_raises("aten::native_layer_norm", x, [3], None, None, 1e-5, match="normalized_shape")
    check_raises("aten::native_layer_norm", x, [], None, None, 1e-5, match="normalized_shape")
    check_raises("aten::native_layer_norm", x, [4], make((3,)), None, 1e-5, match="weight")
    check_raises("aten::native_layer_norm", x, [4], make((1, 4)), None, 1e-5, match="weight")
    check_raises("aten::native_layer_norm", x, [4], None, make((5,)), 1e-5, match="bias")
    check_raises("aten::native_layer_norm", x, [4], make((4,), "bfloat16"), None, 1e-5, match="dtype")
    check_raises("aten::native_layer_norm", x.long(), [4], None, None, 1e-5, match="float32")
    check_raises("aten::layer_norm", make((2, 4), "bfloat16"), [4], make((4,), "float16"), match="dtype")
    check_raises("aten::rms_norm", x, [3], None, None, match="normalized_shape")
    check_raises("aten::rms_norm", x, [4], make((3,)), None, match="weight")
    check_raises("aten::rms_norm", x.long(), [4], None, None, match="dtype")
    with pytest.raises(NbxTypeError, match="weight"):
        run_op("aten::rms_norm", x, [4], make((4,)).long())


def test_mixed_devices(on_cuda):
    x = from_torch(make((2, 4)))
    w = on_cuda(from_torch(make((4,))))
    for op in ["aten::native_layer_norm", "aten::rms_norm"]:
        args = (x, [4], w, None, 1e-5) if op == "aten::native_layer_norm" else (x, [4], w)
        with pytest.raises(DeviceError, match="device"):
            run_op(op, *args)
