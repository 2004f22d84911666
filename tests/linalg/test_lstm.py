"""Conformance of "aten::lstm" (.input and .data, inference) against torch CPU."""

from __future__ import annotations

import pytest
import torch

from nbx_core.errors import NbxError
from nbx_core.testing import check_op, check_raises, make, run_op

L_IN, L_DATA = "aten::lstm.input", "aten::lstm.data"
T, B, I, H = 4, 3, 5, 6


def _params(layers, dirs, bias=True, proj=0, dtype="float32", inp=I):
    ps, seed = [], 10
    for layer in range(layers):
        for _ in range(dirs):
            width = inp if layer == 0 else dirs * (proj or H)
            ps += [
                make((4 * H, width), dtype, seed=seed, low=-0.5, high=0.5),
                make((4 * H, proj or H), dtype, seed=seed + 1, low=-0.5, high=0.5),
            ]
            if bias:
                ps += [make((4 * H,), dtype, seed=seed + 2), make((4 * H,), dtype, seed=seed + 3)]
            if proj:
                ps.append(make((proj, H), dtype, seed=seed + 4, low=-0.5, high=0.5))
            seed += 5
    return ps


def _hx(layers, dirs, proj=0, dtype="float32", batch=B):
    return [make((layers * dirs, batch, proj or H), dtype, seed=1), make((layers * dirs, batch, H), dtype, seed=2)]


CONFIGS = [  # layers, bidirectional, has_biases, batch_first, proj_size
    (1, False, True, False, 0),
    (2, True, True, True, 0),
    (1, False, False, False, 0),
    (2, False, True, False, 3),
    (1, True, True, True, 2),
]


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: "L{}-bi{}-bias{}-bf{}-proj{}".format(*c))
def test_lstm_input(cfg, dtype):
    layers, bi, bias, bf, proj = cfg
    dirs = 2 if bi else 1
    x = make((B, T, I) if bf else (T, B, I), dtype)
    tol = {} if dtype in ("float32", "float64") else {"rtol": 3e-2, "atol": 3e-2}
    check_op(
        L_IN,
        x,
        _hx(layers, dirs, proj, dtype),
        _params(layers, dirs, bias, proj, dtype),
        bias,
        layers,
        0.0,
        False,
        bi,
        bf,
        **tol,
    )


def test_lstm_input_layouts_and_sizes():
    x = make((B, T, I)).transpose(0, 1)  # time-major view of batch-major memory
    check_op(L_IN, x, _hx(1, 1), _params(1, 1), True, 1, 0.0, False, False, False)
    check_op(L_IN, make((T, 0, I)), _hx(1, 1, batch=0), _params(1, 1), True, 1, 0.0, False, False, False)
    # train=True without dropout is deterministic, as is dropout with a single layer.
    check_op(L_IN, make((T, B, I)), _hx(2, 1), _params(2, 1), True, 2, 0.0, True, False, False)
    check_op(L_IN, make((T, B, I)), _hx(1, 1), _params(1, 1), True, 1, 0.5, True, False, False)


@pytest.mark.parametrize("bi", [False, True])
def test_lstm_data_packed(bi):
    dirs = 2 if bi else 1
    packed = torch.nn.utils.rnn.pack_padded_sequence(make((T, B, I)), torch.tensor([4, 2, 1]))
    check_op(L_DATA, packed.data, packed.batch_sizes, _hx(2, dirs), _params(2, dirs), True, 2, 0.0, False, bi)
    check_op(
        L_DATA,
        packed.data.double(),
        packed.batch_sizes,
        _hx(1, dirs, dtype="float64"),
        _params(1, dirs, dtype="float64"),
        True,
        1,
        0.0,
        False,
        bi,
    )


def test_bad_inputs():
    ps, hx = _params(1, 1), _hx(1, 1)
    check_raises(L_IN, make((T, I)), hx, ps, True, 1, 0.0, False, False, False, match="3-D")
    check_raises(L_IN, make((T, B, I), "float64"), hx, ps, True, 1, 0.0, False, False, False, match="dtype")
    check_raises(L_IN, make((0, B, I)), hx, ps, True, 1, 0.0, False, False, False, match="sequence length")
    with pytest.raises(NbxError, match="features"):  # torch's oneDNN path does not check this
        run_op(L_IN, make((T, B, I + 1)), hx, ps, True, 1, 0.0, False, False, False)
    with pytest.raises(NbxError, match="h0"):  # torch's CPU kernel crashes on this one
        run_op(L_IN, make((T, B, I)), [hx[0][:, :2], hx[1]], ps, True, 1, 0.0, False, False, False)
    check_raises(L_IN, make((T, B, I)), hx, ps[:3], True, 1, 0.0, False, False, False, match="params")
    with pytest.raises(NbxError, match="train=False"):
        run_op(L_IN, make((T, B, I)), _hx(2, 1), _params(2, 1), True, 2, 0.5, True, False, False)
