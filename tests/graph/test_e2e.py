"""Real torch models exported and run on NBX, compared with torch on the CPU backend.

Each model runs twice: on ``torchref`` (core + a test plugin whose kernels are torch's own ATen
ops; it checks the importer and the runner, and always runs) and on ``nbx`` (the installed NBX
plugins; skipped, naming the plugin, when one the model needs is not installed).
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
import torch

from nbx_core import NBXTensor
from nbx_core.backend import kernel_device_type
from nbx_core.graph import load
from nbx_core.graph.export import export_module
from nbx_core.registry import get_registry
from nbx_core.testing import numeric

from .models import CASES
from .torch_kernels import torch_registry

# (rtol, atol) for whole-model outputs: several rounded ops deep, so looser than one op's.
TOLERANCES = {"float32": (1e-4, 1e-4), "float16": (1e-2, 1e-2), "bfloat16": (5e-2, 5e-2)}


def _registry(kind: str, plugins: tuple[str, ...]):
    if kind == "torchref":
        return torch_registry()
    for family in plugins:
        if importlib.util.find_spec(f"nbx_{family}") is None:
            pytest.skip(f"needs plugin nbx-{family}, which is not installed")
    return get_registry()


def _compare(got: NBXTensor, want: torch.Tensor) -> None:
    rtol, atol = TOLERANCES.get(str(want.dtype).removeprefix("torch."), (0, 0))
    np.testing.assert_allclose(got.numpy().astype(np.float64), want.detach().double().numpy(), rtol=rtol, atol=atol)


@pytest.mark.parametrize("kind", ["torchref", "nbx"])
@pytest.mark.parametrize("model", list(CASES))
def test_model_matches_torch(model, kind, tmp_path):
    case = CASES[model]()
    registry = _registry(kind, case.plugins)
    path = export_module(
        case.module,
        case.args,
        tmp_path / f"{model}.nbx",
        case.dynamic_shapes,
        example_kwargs=case.kwargs,
        registry=registry,
    )
    prog = load(path, registry=registry, device=kernel_device_type())
    for args, kwargs in case.runs:
        if not numeric():  # the aot backend runs no program: it compiles every kernel a run launches
            prog.check_compiles(*args, **kwargs)
            continue
        with torch.no_grad():
            want = case.module(*args, **kwargs)
        got = prog(*args, **kwargs)
        wants = want if isinstance(want, tuple) else (want,)
        gots = got if isinstance(got, tuple) else (got,)
        assert len(gots) == len(wants)
        for g, w in zip(gots, wants, strict=True):
            assert tuple(g.shape) == tuple(w.shape)
            _compare(g, w)
