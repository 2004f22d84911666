"""Conformance of the batch norm family against torch (CPU), running-stat updates included.

``aten::cudnn_batch_norm`` is CUDA-only in torch; its reference is native_batch_norm's result
plus an empty uint8 reserve buffer (see nbx_norm.batch_norm).
"""

from __future__ import annotations

import nbx_norm.moments as moments
import pytest
import torch

from nbx_core.errors import DeviceError, NbxValueError
from nbx_core.testing import assert_close, check_op, check_raises, from_torch, layouts, make, run_op

FLOATS = ["float32", "float16", "bfloat16", "float64"]


def _params(dtype: str, c: int = 3, mixed: bool = False) -> tuple[torch.Tensor, ...]:
    pd = "float32" if mixed else dtype
    return (
        make((c,), pd, seed=1),
        make((c,), pd, seed=2),
        make((c,), pd, seed=3),
        make((c,), pd, seed=4, low=0.5, high=2.0),
    )


def _check_with_stats(name, x, w, b, rm, rv, *rest):
    """Run ``name`` on NBX and torch with separate copies of the running stats; compare both."""
    ref_rm, ref_rv = rm.clone(), rv.clone()
    ref = getattr(torch.ops.aten, name.removeprefix("aten::"))(x, w, b, ref_rm, ref_rv, *rest)
    nbx_rm, nbx_rv = from_torch(rm), from_torch(rv)
    got = run_op(name, x, w, b, nbx_rm, nbx_rv, *rest)
    assert_close(got, ref, what=name)
    assert_close(nbx_rm, ref_rm, what=f"{name} running_mean")
    assert_close(nbx_rv, ref_rv, what=f"{name} running_var")
    return got


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("training", [True, False])
def test_native_batch_norm(dtype, training):
    x = make((4, 3, 5), dtype)
    w, b, rm, rv = _params(dtype)
    _check_with_stats("aten::native_batch_norm", x, w, b, rm, rv, training, 0.1, 1e-5)
    _check_with_stats("aten::native_batch_norm", x, None, None, rm, rv, training, 0.3, 1e-3)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("training", [True, False])
def test_native_batch_norm_mixed_float32_params(dtype, training):
    w, b, rm, rv = _params(dtype, mixed=True)
    _check_with_stats("aten::native_batch_norm", make((4, 3, 2, 2), dtype), w, b, rm, rv, training, 0.1, 1e-5)


@pytest.mark.parametrize("dtype", FLOATS)
def test_native_batch_norm_no_running_stats(dtype):
    check_op("aten::native_batch_norm", make((4, 3, 5), dtype), None, None, None, None, True, 0.1, 1e-5)
    check_op("aten::native_batch_norm", make((6, 3), dtype), *_params(dtype)[:2], None, None, True, 0.1, 1e-5)


def test_batch_norm_single_value_per_channel():
    # n == 1: torch's unbiased running variance is nan; NBX gives the same. The output is x - mean = 0,
    # which torch's x * alpha + beta form misses by a few ulps of x * invstd: hence atol.
    x, (rm, rv) = make((1, 3)), _params("float32")[2:]
    ref_rm, ref_rv = rm.clone(), rv.clone()
    ref = torch.ops.aten.native_batch_norm(x, None, None, ref_rm, ref_rv, True, 0.1, 1e-5)
    nbx_rm, nbx_rv = from_torch(rm), from_torch(rv)
    got = run_op("aten::native_batch_norm", x, None, None, nbx_rm, nbx_rv, True, 0.1, 1e-5)
    assert_close(got, ref, atol=1e-4)
    assert_close((nbx_rm, nbx_rv), (ref_rm, ref_rv))


def test_batch_norm_layouts():
    w, b, rm, rv = _params("float32")
    for _, x in layouts(make((4, 3, 6))):
        _check_with_stats("aten::native_batch_norm", x, w, b, rm, rv, True, 0.1, 1e-5)
    x = make((4, 3, 6))
    _check_with_stats("aten::native_batch_norm", x, make((6,), seed=1)[::2], b, rm, rv, False, 0.1, 1e-5)


def test_batch_norm_several_chunks(monkeypatch):
    lookup = moments.MOMENTS.lookup
    monkeypatch.setattr(moments.MOMENTS, "lookup", lambda *a, **kw: {**lookup(*a, **kw), "CHUNK": 8})
    w, b, rm, rv = _params("float32")
    _check_with_stats("aten::native_batch_norm", make((5, 3, 7)) * 0.5 + 4.0, w, b, rm, rv, True, 0.1, 1e-5)


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm(training):
    w, b, rm, rv = _params("bfloat16")
    _check_with_stats("aten::batch_norm", make((4, 3, 5), "bfloat16"), w, b, rm, rv, training, 0.1, 1e-5, True)
    check_op("aten::batch_norm", make((4, 3, 5)), None, None, None, None, True, 0.1, 1e-5, False)


@pytest.mark.parametrize("shape", [(0,), (0, 3), (2, 0), (0, 3, 4)])
def test_batch_norm_of_an_empty_input_is_a_copy(shape):
    # torch's composite returns an empty input as it is, in training too and at any rank.
    check_op("aten::batch_norm", make(shape), None, None, None, None, True, 0.1, 1e-5, False)
    w, b, rm, rv = _params("float32")
    if len(shape) > 1 and shape[1] == 3:
        check_op("aten::batch_norm", make(shape), w, b, rm, rv, False, 0.1, 1e-5, False)


def test_batch_norm_zero_size_inference():
    check_op("aten::native_batch_norm", make((0, 3)), None, None, *_params("float32")[2:], False, 0.1, 1e-5)


@pytest.mark.parametrize("training", [True, False])
def test_native_batch_norm_legit(training):
    w, b, rm, rv = _params("float32")
    _check_with_stats("aten::_native_batch_norm_legit", make((4, 3, 5)), w, b, rm, rv, training, 0.1, 1e-5)
    # the no_stats overload: batch statistics only
    check_op("aten::_native_batch_norm_legit.no_stats", make((4, 3, 5), "bfloat16"), None, None, True, 0.1, 1e-5)
    got = run_op("aten::_native_batch_norm_legit", make((4, 3)), w, b, training=True, momentum=0.1, eps=1e-5)
    assert_close(got, torch.ops.aten._native_batch_norm_legit.no_stats(make((4, 3)), w, b, True, 0.1, 1e-5))


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_native_batch_norm_legit_no_training(dtype):
    w, b, rm, rv = _params(dtype, mixed=dtype == "bfloat16")
    check_op("aten::_native_batch_norm_legit_no_training", make((2, 3, 4), dtype), w, b, rm, rv, 0.1, 1e-5)
    check_op("aten::_native_batch_norm_legit_no_training", make((2, 3, 4), dtype), None, None, rm, rv, 0.1, 1e-5)


def _cudnn_reference(x, w, b, rm, rv, training, factor, eps):
    out = torch.ops.aten.native_batch_norm(x, w, b, rm, rv, training, factor, eps)
    return (*out, torch.empty(0, dtype=torch.uint8))


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_cudnn_batch_norm(training, dtype):
    w, b, rm, rv = _params(dtype, mixed=dtype == "float16")
    ref_rm, ref_rv = rm.clone(), rv.clone()
    x = make((4, 3, 5), dtype)
    ref = _cudnn_reference(x, w, b, ref_rm, ref_rv, training, 0.1, 1e-5)
    nbx_rm, nbx_rv = from_torch(rm), from_torch(rv)
    got = run_op("aten::cudnn_batch_norm", x, w, b, nbx_rm, nbx_rv, training, 0.1, 1e-5)
    assert_close(got, ref, what="aten::cudnn_batch_norm")
    assert_close((nbx_rm, nbx_rv), (ref_rm, ref_rv), what="aten::cudnn_batch_norm running stats")


def test_bad_inputs(on_cuda):
    x = make((4, 3, 5))
    w, b, rm, rv = _params("float32")
    check_raises(
        "aten::native_batch_norm", make((0, 3)), None, None, rm, rv, True, 0.1, 1e-5, match="at least one element"
    )
    check_raises("aten::native_batch_norm", make((3,)), None, None, None, None, True, 0.1, 1e-5, match="dims")
    check_raises("aten::native_batch_norm", x.int(), None, None, None, None, True, 0.1, 1e-5, match="float32")
    check_raises("aten::native_batch_norm", x.double(), None, None, rm, rv, True, 0.1, 1e-5, match="dtype")
    check_raises(
        "aten::native_batch_norm", make((4, 3), "bfloat16"), w.bfloat16(), None, rm, rv, True, 0.1, 1e-5, match="dtype"
    )
    # torch's CPU kernel reads past a too-short weight or running buffer; NBX refuses.
    for args in [(make((2,)), None, rm, rv), (None, None, make((4,)), rv), (None, make((2,)), None, None)]:
        with pytest.raises(NbxValueError, match="3 elements"):
            run_op("aten::native_batch_norm", x, *args, True, 0.1, 1e-5)
    # torch crashes on inference without running stats; NBX raises.
    for name, args in [
        ("aten::native_batch_norm", (None, None, False, 0.1, 1e-5)),
        ("aten::_native_batch_norm_legit", (False, 0.1, 1e-5)),
    ]:
        with pytest.raises(NbxValueError, match="running_mean"):
            run_op(name, x, None, None, *args)
    with pytest.raises(NbxValueError, match="both"):
        run_op("aten::native_batch_norm", x, None, None, rm, None, True, 0.1, 1e-5)
    with pytest.raises(DeviceError, match="device"):
        run_op(
            "aten::batch_norm",
            from_torch(x),
            None,
            None,
            on_cuda(from_torch(rm)),
            from_torch(rv),
            False,
            0.1,
            1e-5,
            True,
        )


@pytest.mark.parametrize("affine", ["weight", "bias", "neither"])
@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5), (2, 3, 4, 5)])
def test_inference_with_partial_affine_and_any_rank(affine, shape):
    # Inference is elementwise with per-channel operands: each of weight and bias may be missing,
    # and the channel vectors broadcast over any number of trailing dims.
    w, b, rm, rv = _params("float32")
    w = w if affine == "weight" else None
    b = b if affine == "bias" else None
    check_op("aten::_native_batch_norm_legit_no_training", make(shape), w, b, rm, rv, 0.1, 1e-5)


def test_inference_on_a_channels_last_input_with_float32_stats():
    # A bfloat16 input with float32 parameters and statistics (the statistics dtype rule), read
    # through channels-last strides without a contiguous copy.
    x = make((2, 3, 4, 5), "bfloat16").to(memory_format=torch.channels_last)
    check_op("aten::_native_batch_norm_legit_no_training", x, *_params("bfloat16", mixed=True), 0.1, 1e-5)
