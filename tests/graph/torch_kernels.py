"""A test plugin whose kernels are torch's own ATen ops, over NBX tensors shared by DLPack.

With it the importer and runner are tested end to end (decompositions, aliases, in-place ops,
symbolic sizes) before any NBX family is installed: core's own ops stay NBX's, every other
name is torch. Zero-copy both ways, so in-place kernels write into the NBX tensor they get.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch

import nbx_core
from nbx_core import NBXTensor, from_dlpack, opnames
from nbx_core.dtypes import DType
from nbx_core.ops import plugin as core_plugin
from nbx_core.registry import Registry

FAMILY_NAMES = tuple(
    n
    for f in opnames.FAMILIES
    if f != "core"
    for n in opnames.opset(f)
    if n not in opnames.opset("core") and n.startswith("aten::")
)
_BY_KEY = {"memory_format": lambda s: getattr(torch, s), "layout": lambda s: getattr(torch, s)}


def _to_torch(value: Any, key: str | None = None, seen: dict[int, NBXTensor] | None = None) -> Any:
    if isinstance(value, NBXTensor):
        shared = torch.from_dlpack(value)
        if seen is not None:
            seen[id(shared)] = value
        return shared
    if isinstance(value, DType):
        return getattr(torch, value.name)
    if isinstance(value, nbx_core.Device):
        return torch.device("cpu")
    if isinstance(value, str) and key in _BY_KEY:
        return _BY_KEY[key](value)
    if isinstance(value, list | tuple):
        return type(value)(_to_torch(v, None, seen) for v in value)
    return value


def _from_torch(value: Any, seen: dict[int, NBXTensor]) -> Any:
    if isinstance(value, torch.Tensor):
        if id(value) in seen:  # an in-place op returned its argument: hand back the NBX tensor it shares
            return seen[id(value)]
        # A copy in NBX-owned memory, as real kernels return: a from_dlpack tensor's .numpy() view
        # does not keep torch's memory alive.
        return from_dlpack(value.detach()).clone()
    if isinstance(value, list | tuple):
        return type(value)(_from_torch(v, seen) for v in value)
    return value


def _kernel(name: str):
    op_name, _, overload = name.split("::")[1].partition(".")
    op = getattr(torch.ops.aten, op_name)
    op = getattr(op, overload) if overload else op

    def kernel(*args: Any, **kwargs: Any) -> Any:
        seen: dict[int, NBXTensor] = {}
        result = op(*_to_torch(list(args), None, seen), **{k: _to_torch(v, k, seen) for k, v in kwargs.items()})
        return _from_torch(result, seen)

    kernel.__name__ = f"torch_{name.split('::')[1]}"
    return kernel


class TorchKernels:
    """Registers ``names`` (ATen names, op-level or single overloads), each run by torch."""

    def __init__(self, names: Iterable[str]) -> None:
        self.names = tuple(names)

    @nbx_core.hookimpl
    def nbx_register_kernels(self, registry) -> None:
        for name in self.names:
            registry.register(name, _kernel(name))


def torch_registry(names: Iterable[str] = FAMILY_NAMES, without: Iterable[str] = ()) -> Registry:
    """core + torch kernels for ``names`` minus ``without``: a stand-in for all eight families."""
    skip = set(without)
    registry = Registry()
    registry.add_plugin("core", core_plugin)
    registry.add_plugin("torchref", TorchKernels(n for n in names if n not in skip))
    return registry
