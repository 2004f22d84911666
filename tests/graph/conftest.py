"""Fixtures for the graph tests: a test-local registry and graph-writing helpers."""

from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from nbx_core.graph import save
from nbx_core.ops import plugin as core_plugin
from nbx_core.registry import Registry
from nbx_core.testing import numeric

from . import np_kernels


@pytest.fixture
def np_registry() -> Registry:
    """core + the numpy test kernels, nothing installed."""
    if not numeric():
        pytest.skip("the aot backend runs no program (Program.run refuses it); the runner's tests run on cpu")
    np_kernels.PRODUCED.clear()
    np_kernels.LIVE.clear()
    np_kernels.CALLS.clear()
    registry = Registry()
    registry.add_plugin("core", core_plugin)
    registry.add_plugin("nptest", sys.modules[np_kernels.__name__])
    return registry


def base_doc() -> dict[str, Any]:
    """y = relu(x * w + b) over x: float32 [batch, 4]."""
    return {
        "format": "nbx-graph",
        "version": 1,
        "symbols": {"batch": {"min": 1, "max": 16, "example": 2}},
        "inputs": [{"name": "x", "dtype": "float32", "shape": ["batch", 4]}],
        "weights": [
            {"name": "w", "key": "lin.w", "kind": "parameter", "dtype": "float32", "shape": [4]},
            {"name": "b", "key": "lin.b", "kind": "buffer", "dtype": "float32", "shape": [4]},
        ],
        "nodes": [
            {
                "name": "mul",
                "op": "aten::mul.Tensor",
                "args": [{"ref": "x"}, {"ref": "w"}],
                "kwargs": {},
                "outputs": ["mul"],
            },
            {
                "name": "add",
                "op": "aten::add.Tensor",
                "args": [{"ref": "mul"}, {"ref": "b"}],
                "kwargs": {},
                "outputs": ["add"],
            },
            {"name": "relu", "op": "aten::relu.default", "args": [{"ref": "add"}], "kwargs": {}, "outputs": ["relu"]},
        ],
        "outputs": [{"name": "relu", "dtype": "float32", "shape": ["batch", 4]}],
        "mutations": [],
    }


def base_weights() -> dict[str, np.ndarray]:
    return {"lin.w": np.array([1.0, -2.0, 3.0, 0.5], np.float32), "lin.b": np.array([0.1, 0.2, -5.0, 0.0], np.float32)}


@pytest.fixture
def doc() -> dict[str, Any]:
    return copy.deepcopy(base_doc())


def write(path: Path, doc: dict[str, Any], weights: dict[str, np.ndarray] | None = None) -> Path:
    return save(doc, base_weights() if weights is None else weights, path)
