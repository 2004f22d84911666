"""PyTorch's OpInfo samples run on NBX: which entries to run, and one sample's check.

A sample is traced with ``make_fx(pre_dispatch=True)``, which records the ATen calls the Python
API makes before any CompositeImplicit decomposition (``F.layer_norm`` is one ``aten::layer_norm``
call, ``torch.atleast_1d`` one ``aten::atleast_1d``). The trace is replayed on torch, and every
call of a name NBX registers also runs through the NBX registry with the very arguments torch's
call got; the results are compared with the conformance kit (``assert_close``, the kit's
``TOLERANCES``). Samples whose Python code reads values (``item``, ``equal``) cannot be traced;
their ATen calls are recorded while they run eagerly instead.

Deliberate differences in the comparison, each from NBX's design:

- random ops and ``empty*`` compare shapes and dtypes only (NBX's generator is not torch's;
  uninitialised memory has no value);
- ``topk``/``sort``: the order of equal values is unspecified (torch says so), so the indices
  are checked by gathering the input at them;
- a bfloat16/float16 result that misses torch's also passes when it matches torch's op run in
  float32 on the same (upcast) inputs, rounded once: NBX computes half types in float32 and
  rounds at the store, where some torch CPU kernels round intermediates (grid coordinates,
  partial sums) to the half type.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch.fx.experimental.proxy_tensor import make_fx
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_leaves, tree_map, tree_unflatten

from nbx_core.registry import get_registry
from nbx_core.testing import assert_close, from_torch, run_op, to_torch

DTYPES = (torch.float32, torch.bfloat16, torch.int64, torch.int32, torch.uint8, torch.bool)
"""float32 and bfloat16 always; the integer and bool types where the entry takes them."""
SMALLEST, FIRST = 2, 3
"""Samples per entry and dtype: the smallest by element count (0-dim and empty tensors, mostly)
and the entry's first ones (its plain cases), none with more than MAX_NUMEL elements: the
interpreter is slow, and the whole pass must stay within a few CI minutes."""
MAX_NUMEL = 4096

# Entries that are compositions of ops tested through their own entries, or not ATen ops at all.
_SKIP_PREFIXES = ("masked.", "sparse.", "_refs.", "to_sparse", "signal.")
# Entries whose samples reach a registered name the entry's own name does not spell.
EXTRA_ENTRIES: dict[str, tuple[str, ...]] = {
    "nn.functional.interpolate": ("upsample_nearest1d",),
    "nn.functional.cross_entropy": ("cross_entropy_loss",),
    "nn.functional.embedding_bag": ("_embedding_bag",),
    "nn.functional.pdist": ("_pdist_forward",),
    "cdist": ("_cdist_forward",),
    "__getitem__": ("index",),
    "nn.functional.lstm": ("lstm",),
    "nn.functional.conv3d": ("convolution",),
    "nn.functional.conv_transpose3d": ("convolution",),
    "nn.functional.max_pool1d": ("max_pool2d_with_indices",),
    "type_as": ("type_as",),
}
NONDETERMINISTIC = frozenset(
    {
        "bernoulli",
        "normal",
        "uniform",
        "rand",
        "rand_like",
        "randn",
        "randn_like",
        "randint",
        "randperm",
        "multinomial",
        "dropout",
        "native_dropout",
        "empty",
        "empty_like",
        "empty_strided",
        "new_empty",
    }
)
"""Random or uninitialised results: only their shapes and dtypes are compared."""
_UNORDERED_TIES = frozenset({"topk", "sort"})


def registered() -> dict[str, str]:
    """Registered base ATen name -> the plugin providing it."""
    return {
        e.name.split("::")[1].split(".")[0]: e.plugin
        for e in get_registry().entries()
        if e.name.startswith("aten::") and e.status == "active"
    }


def key(op: Any) -> str:
    """An OpInfo entry's name: ``name`` or ``name.variant``."""
    return op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")


@dataclass(frozen=True)
class Entry:
    """One OpInfo entry that names a registered ATen name, and the family that provides it."""

    key: str
    family: str


def entries(op_db: list[Any]) -> list[Entry]:
    """Every OpInfo entry whose name (or ``aten_name``, or a known alias) is a registered name."""
    reg = registered()
    out = []
    for op in op_db:
        if op.name.startswith(_SKIP_PREFIXES):
            continue
        name = op.name.removeprefix("torch.ops.aten.").removesuffix(".default")
        names = [name, op.aten_name, name.replace(".", "_"), name.rsplit(".", 1)[-1], *EXTRA_ENTRIES.get(op.name, ())]
        hit = next((n for n in names if n in reg), None)
        if hit is not None:
            out.append(Entry(key(op), reg[hit]))
    return out


def _numel(sample: Any) -> int:
    return sum(
        t.numel() for t in tree_leaves([sample.input, sample.args, sample.kwargs]) if isinstance(t, torch.Tensor)
    )


def samples(op: Any, dtype: torch.dtype) -> list[Any]:
    """The entry's smallest samples in ``dtype`` and its first ones (see SMALLEST, FIRST)."""
    small = [s for s in op.sample_inputs("cpu", dtype, requires_grad=False) if _numel(s) <= MAX_NUMEL]
    picked = sorted(small, key=_numel)[:SMALLEST] + small[:FIRST]
    return list({id(s): s for s in picked}.values())


def dtypes(op: Any) -> Iterator[torch.dtype]:
    """The DTYPES the entry's op takes on the CPU."""
    supported = op.supported_dtypes("cpu")
    return (dt for dt in DTYPES if dt in supported)


def _base(target: Any) -> str | None:
    if isinstance(target, torch._ops.OpOverload) and target.namespace == "aten":
        return target.overloadpacket.__name__
    return None


def _nbx_name(target: torch._ops.OpOverload) -> str:
    overload = target._overloadname
    return f"aten::{target.overloadpacket.__name__}" + ("" if overload == "default" else f".{overload}")


def _same_meta(got: Any, want: Any, what: str) -> None:
    if isinstance(want, torch.Tensor):
        assert tuple(got.shape) == tuple(want.shape), f"{what}: shape {got.shape} != {tuple(want.shape)}"
        assert got.dtype.name == str(want.dtype).removeprefix("torch."), f"{what}: dtype {got.dtype} != {want.dtype}"
    elif isinstance(want, list | tuple):
        assert len(got) == len(want), f"{what}: {len(got)} results != {len(want)}"
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            _same_meta(g, w, f"{what}[{i}]")


def _upcast(value: Any) -> Any:
    if isinstance(value, torch.Tensor) and value.dtype in (torch.bfloat16, torch.float16):
        return value.float()
    return value


def _compare(
    base: str, target: Callable[..., Any], args: list[Any], kwargs: dict[str, Any], got: Any, want: Any, name: str
) -> None:
    if base in NONDETERMINISTIC:
        _same_meta(got, want, name)
        return
    if base in _UNORDERED_TIES and not kwargs.get("stable"):
        values, indices = want
        assert_close(got[0], values, what=f"{name} values")
        _same_meta(got[1], indices, f"{name} indices")
        x, pos = args[0], 2 if base == "topk" else 1
        dim = kwargs.get("dim", args[pos] if len(args) > pos else -1)
        at = x.gather(dim, to_torch(got[1])) if x.ndim else x.expand_as(values)
        assert_close(from_torch(at), values, what=f"{name} input at the indices")
        return
    try:
        assert_close(got, want, what=name)
    except AssertionError:
        halves = [
            t for t in tree_leaves(want) if isinstance(t, torch.Tensor) and t.dtype in (torch.bfloat16, torch.float16)
        ]
        if not halves:
            raise
        wide = target(*tree_map(_upcast, args), **tree_map(_upcast, kwargs))
        assert_close(
            got,
            tree_map(lambda w, r: r.to(w.dtype) if isinstance(w, torch.Tensor) else r, want, wide),
            what=f"{name} (against torch in float32)",
        )


def check_call(target: torch._ops.OpOverload, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, str | None]:
    """Run one ATen call on torch and on NBX: (torch's result, None or why NBX's differs)."""
    nbx_args, nbx_kwargs = from_torch(list(args)), {k: from_torch(v) for k, v in kwargs.items()}
    keep = tree_map(lambda v: v.clone() if isinstance(v, torch.Tensor) else v, (list(args), dict(kwargs)))
    want = target(*args, **kwargs)
    name = _nbx_name(target)
    try:
        got = run_op(name, *nbx_args, **nbx_kwargs)
        _compare(_base(target), target, *keep, got, want, name)
    except Exception as exc:  # recorded: the test reports every failing call at once
        text = re.sub(r"\s+", " ", str(exc))[:400]
        return want, f"{name}: {type(exc).__name__}: {text}"
    return want, None


def run_sample(op: Any, sample: Any) -> list[tuple[str, str | None]]:
    """Every registered ATen call one sample makes: (call name, None or why NBX's result differs)."""
    names = registered()
    leaves, spec = tree_flatten((sample.input, sample.args, sample.kwargs))
    where = [i for i, v in enumerate(leaves) if isinstance(v, torch.Tensor)]
    calls: list[tuple[str, str | None]] = []

    def call(*tensors: torch.Tensor) -> Any:
        flat = list(leaves)
        for i, t in zip(where, tensors, strict=True):
            flat[i] = t
        inp, args, kwargs = tree_unflatten(flat, spec)
        return op.op(inp, *args, **kwargs)

    class Record(TorchDispatchMode):
        """Checks the registered ATen calls an eager call makes below the CompositeImplicit level."""

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if _base(func) not in names:
                return func(*args, **(kwargs or {}))
            want, err = check_call(func, args, kwargs or {})
            calls.append((_nbx_name(func), err))
            return want

    class Replay(torch.fx.Interpreter):
        """Checks each registered call of the trace; an unregistered one (a composite NBX leaves to
        the exporter's decomposition) is checked through the registered calls it makes."""

        def run_node(self, n: torch.fx.Node) -> Any:
            if n.op != "call_function" or _base(n.target) is None:
                return super().run_node(n)
            args, kwargs = self.fetch_args_kwargs_from_env(n)
            if _base(n.target) not in names:
                with Record():
                    return n.target(*args, **kwargs)
            want, err = check_call(n.target, args, kwargs)
            calls.append((_nbx_name(n.target), err))
            return want

    tensors = [leaves[i] for i in where]
    with torch.no_grad():
        try:
            graph = make_fx(call, pre_dispatch=True)(*tensors)
        except RuntimeError as exc:
            if "data-dependent" not in str(exc) and "tracing tensor" not in str(exc):
                raise
            with Record():
                call(*tensors)
            if op.aten_name in names and hasattr(torch.ops.aten, op.aten_name):
                # the entry's own op is composite (item -> _local_scalar_dense): call it as well
                target = getattr(torch.ops.aten, op.aten_name).default
                calls.append((_nbx_name(target), check_call(target, (sample.input, *sample.args), sample.kwargs)[1]))
        else:
            Replay(graph).run(*tensors)
    return calls
