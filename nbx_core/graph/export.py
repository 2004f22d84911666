"""torch.export → NBX graph. The one module of nbx_core.graph that imports torch (extra ``export``).

:func:`export` walks ``ep.graph_module.graph`` once, in order:

- placeholders become graph inputs (user inputs, with symbolic dims from ``torch.export.Dim``
  and their ranges from ``ep.range_constraints``) or weights (parameters, buffers, lifted
  constants), stored in weights.safetensors under their state-dict names;
- an op the registry can run (after renaming ATen aliases, :mod:`.aliases`) becomes a node;
- an op it cannot run is decomposed alone: that single call is traced with ``make_fx`` on its
  fake arguments, through torch's decomposition (or its CompositeImplicit kernel, or, for an
  in-place op, functional op + ``copy_``), and the resulting calls go through the same walk, so
  sdpa stays sdpa when nbx-attention is installed. No whole-graph ``run_decompositions``;
- ``operator.getitem`` selects a result; ``sym_size`` and arithmetic on SymInts become symbolic
  expressions evaluated at run time; a size read from data (torch's unbacked symbols: a boolean
  mask's count, ``nonzero``, ``item()``) becomes a symbol that the node's result binds when it runs;
  assertion ops are dropped, but for ``torch._check`` relations on such sizes, which become guards;
- ops with neither kernel nor decomposition are collected and reported together (ExportError).
"""

from __future__ import annotations

import ast
import operator
import warnings
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, cast

import numpy as np
import sympy
import torch
import torch.fx as fx
import torch.utils._pytree as pytree
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind, OutputKind, TensorArgument
from torch.utils._sympy.symbol import SymT, symbol_is_type

from .. import dtypes as D
from .. import opnames
from ..errors import DuplicateKernelError, ExportError, NbxError, UnresolvedOpError
from ..registry import Registry, get_registry
from ..version import __version__
from . import aliases
from .format import FORMAT, VERSION, ref, scalar, sym
from .symbolic import LIMIT
from .writer import save

_KIND = {InputKind.PARAMETER: "parameter", InputKind.BUFFER: "buffer", InputKind.CONSTANT_TENSOR: "constant"}
_SYM_TYPES = (torch.SymInt, torch.SymFloat, torch.SymBool)


def _op_name(op: torch._ops.OpOverload) -> str:
    namespace, _, rest = op.name().partition("::")
    return f"{namespace}::{rest}" + ("" if "." in rest else ".default")


def _overload(name: str) -> torch._ops.OpOverload | None:
    namespace, _, rest = name.partition("::")
    op, _, overload = rest.partition(".")
    try:
        return getattr(getattr(getattr(torch.ops, namespace), op), overload or "default")
    except (AttributeError, RuntimeError):
        return None


def _decompositions() -> dict[Any, Callable[..., Any]]:
    # Core ATen's table only: torch's full table lowers some ops to prims, which no NBX family owns.
    from torch._decomp import core_aten_decompositions

    return dict(core_aten_decompositions())


class _Availability:
    """Whether an op can run: the registry resolves it, or it is in the ``available`` list."""

    def __init__(self, registry: Registry | None, available: Iterable[str] | None) -> None:
        self.registry = registry
        self.available = None if available is None else frozenset(available)

    def __call__(self, name: str) -> bool:
        if self.available is not None:
            return name in self.available or opnames.base_name(name) in self.available
        assert self.registry is not None
        try:
            self.registry.resolve(name)
        except UnresolvedOpError:
            return False
        except DuplicateKernelError:
            return True  # provided twice: running it needs a preference, but it needs no decomposition
        return True

    def why(self, name: str) -> str:
        if self.registry is None:
            return f"{name}: not in the given list of available ops"
        return self.registry.explain_missing(name)

    def advice(self, names: Iterable[str]) -> str:
        """What would make ``names`` runnable: the one line that ends the missing-ops error."""
        if self.registry is None:
            return (
                "Add them to available= if the installation the graph is for provides them, or register kernels "
                "for them (docs/plugins.md)"
            )
        families = {opnames.family_of(name) for name in names} - {None}
        if not families:
            return "No NBX distribution provides them: register kernels for them in a plugin (docs/plugins.md)"
        distributions = " ".join(sorted(opnames.distribution_of_family(f) for f in families))  # type: ignore[arg-type]
        return (
            f"Install or upgrade the NBX distributions that provide them (pip install -U {distributions}), or "
            "register kernels for these names (docs/plugins.md)"
        )


class _Exporter:
    def __init__(self, ep: ExportedProgram, can_run: _Availability) -> None:
        self.ep = ep
        self.can_run = can_run
        self.nodes: list[dict[str, Any]] = []
        self.missing: dict[str, list[str]] = {}
        # Size values a graph cannot express (a size read from data), raised only if a kept op reads them:
        # the checks torch.export adds on them are dropped.
        self.unexpressed: dict[fx.Node, ExportError] = {}
        self.symbols: dict[sympy.Symbol, str] = {}
        # Sizes read from data (nonzero's count, item()): their ranges, and the graph.json symbol
        # entries of those a kept node binds, in the order the nodes bind them.
        self.unbacked_ranges: dict[sympy.Symbol, tuple[int, int | None]] = {}
        self.data_symbols: dict[str, dict[str, Any]] = {}
        self.unnamed: dict[sympy.Symbol, str] = {}
        self.assertions: list[dict[str, Any]] = []  # torch._check relations on sizes read from data
        self.shape_env: Any = None
        self.decompositions = _decompositions()

    # -- symbols -------------------------------------------------------------------------------------
    def _symbol_table(self) -> dict[str, dict[str, int | None]]:
        shape_env = next(
            (
                n.meta["val"].fake_mode.shape_env
                for n in self.ep.graph.nodes
                if isinstance(n.meta.get("val"), torch.Tensor)
            ),
            None,
        )
        self.shape_env = shape_env
        debug = getattr(shape_env, "source_name_to_debug_name", {}) if shape_env is not None else {}
        table: dict[str, dict[str, int | None]] = {}
        for symbol, bounds in sorted(self.ep.range_constraints.items(), key=lambda kv: str(kv[0])):
            # torch writes "no bound" as +-int_oo (not an Integer) or as a huge int
            upper = int(bounds.upper) if bounds.upper.is_Integer and int(bounds.upper) <= LIMIT else None
            lower = max(0, int(bounds.lower)) if bounds.lower.is_Integer else 0
            if symbol_is_type(symbol, (SymT.UNBACKED_INT, SymT.UNBACKED_FLOAT)):
                self.unbacked_ranges[symbol] = (lower, upper)  # a size read from data: a node binds it
                continue
            sources = shape_env.var_to_sources.get(symbol, []) if shape_env is not None else []
            name = next((debug[s.name] for s in sources if s.name in debug), str(symbol))
            if not name.isidentifier() or name in table:
                name = str(symbol)
            self.symbols[symbol] = name
            example = _hints(shape_env).get(symbol)
            table[name] = {"min": lower, "max": upper, "example": None if example is None else int(example)}
        return table

    def _expr(self, expr: sympy.Expr, where: str) -> str:
        """A sympy expression over input symbols as NBX's expression grammar (symbolic.py)."""
        from torch.utils._sympy.functions import FloorDiv, Max, Min, Mod, PythonMod

        def text(e: sympy.Expr, tight: bool) -> str:
            if e.is_Integer:
                return str(int(e))
            if e.is_Symbol:
                if e in self.unnamed:
                    raise ExportError(
                        f"{where}: symbol {e} is read from data: {self.unnamed[e]}, which NBX graphs cannot "
                        "name (they name a dim of a node's result, or a scalar result)"
                    )
                if e not in self.symbols:
                    raise ExportError(
                        f"{where}: symbol {e} is bound by neither an input dim nor the result of a node the "
                        "graph keeps (a size read from data inside a decomposed op): install a kernel for that "
                        "op, so that it stays one node"
                    )
                return self.symbols[e]
            if isinstance(e, sympy.Add | sympy.Mul):
                joiner = " + " if isinstance(e, sympy.Add) else "*"
                parts = [text(a, isinstance(e, sympy.Mul)) for a in e.args]
                if any(a.is_Rational and not a.is_Integer for a in e.args):
                    raise ExportError(f"{where}: symbolic size {expr} has a fraction")
                body = joiner.join(parts)
                return f"({body})" if tight and isinstance(e, sympy.Add) else body
            if isinstance(e, sympy.Pow) and e.exp.is_Integer and int(e.exp) > 0:
                return f"({text(e.base, True)})**{int(e.exp)}"
            if isinstance(e, FloorDiv):
                return f"({text(e.args[0], True)}//{text(e.args[1], True)})"
            if isinstance(e, Mod | PythonMod | sympy.Mod):
                return f"({text(e.args[0], True)}%{text(e.args[1], True)})"
            if isinstance(e, sympy.Max | sympy.Min | Max | Min):  # torch's shape env has its own Max, Min
                fn = "max" if isinstance(e, sympy.Max | Max) else "min"
                return f"{fn}({', '.join(text(a, False) for a in e.args)})"
            raise ExportError(
                f"{where}: symbolic size {expr} uses {type(e).__name__}, which NBX graphs cannot "
                "express (supported: + - * // % ** max min)"
            )

        return text(sympy.sympify(expr), False)

    def _dim(self, dim: Any, where: str) -> int | str:
        if isinstance(dim, torch.SymInt):
            expr = dim.node.expr
            return int(expr) if expr.is_Integer else self._expr(expr, where)
        return int(dim)

    def _spec(self, name: str, val: Any, where: str) -> dict[str, Any]:
        if not isinstance(val, torch.Tensor):
            raise ExportError(f"{where}: {name!r} is a {type(val).__name__}; NBX graph inputs and outputs are tensors")
        return {
            "name": name,
            "dtype": _dtype_name(val.dtype, where),
            "shape": [self._dim(d, f"{where}: {name!r}") for d in val.shape],
        }

    # -- arguments -----------------------------------------------------------------------------------
    def _arg(self, value: Any, env: Mapping[fx.Node, Any], where: str) -> Any:
        if isinstance(value, fx.Node):
            if value in self.unexpressed:
                raise ExportError(f"{where}: reads {value.name!r}: {self.unexpressed[value]}")
            if value not in env:
                raise ExportError(f"{where}: reads {value.name!r}, which the export dropped (an assertion)")
            return env[value]
        if isinstance(value, list | tuple):
            return [self._arg(v, env, where) for v in value]
        if value is None or isinstance(value, bool | int | float | complex | str):
            return scalar(value) if isinstance(value, float | complex) else value
        if isinstance(value, torch.dtype):
            return {"dtype": _dtype_name(value, where)}
        if isinstance(value, torch.device):
            return {"device": str(value)}
        if isinstance(value, torch.layout):
            return {"layout": str(value).removeprefix("torch.")}
        if isinstance(value, torch.memory_format):
            return {"memory_format": str(value).removeprefix("torch.")}
        if isinstance(value, _SYM_TYPES):
            return self._sym_value(value, where)
        raise ExportError(f"{where}: argument {value!r} ({type(value).__name__}) has no NBX graph encoding")

    def _sym_value(self, value: Any, where: str) -> Any:
        if isinstance(value, torch.SymInt):
            expr = value.node.expr
            return int(expr) if expr.is_Integer else sym(self._expr(expr, where))
        if isinstance(value, torch.SymBool | torch.SymFloat):
            expr = value.node.expr
            if expr.is_Number or expr in (sympy.true, sympy.false):
                return bool(expr) if isinstance(value, torch.SymBool) else float(expr)
        raise ExportError(
            f"{where}: symbolic {type(value).__name__} {value} is used as an op argument; NBX graphs "
            "carry symbolic ints only"
        )

    # -- nodes ---------------------------------------------------------------------------------------
    def walk(self, graph: fx.Graph, env: dict[fx.Node, Any], prefix: str, depth: int) -> Any:
        """Emit every call of ``graph`` (placeholders already bound in ``env``); returns the output."""
        for node in graph.nodes:
            if node.op == "placeholder":
                continue
            if node.op == "output":
                return pytree.tree_map(lambda a: env[a] if isinstance(a, fx.Node) else a, node.args[0])
            if node.op != "call_function":
                raise ExportError(f"node {node.name!r}: {node.op} nodes ({node.target}) are not supported")
            self._call(node, env, prefix, depth)
        raise ExportError("graph has no output node")

    def _call(self, node: fx.Node, env: dict[fx.Node, Any], prefix: str, depth: int) -> None:
        name = prefix + node.name
        where = f"node {name!r} ({node.target})"
        val = node.meta.get("val")
        if node.target is operator.getitem:
            env[node] = env[cast(fx.Node, node.args[0])][node.args[1]]  # getitem of a node's value
            return
        is_op = isinstance(node.target, torch._ops.OpOverload)
        if (isinstance(val, (*_SYM_TYPES, int, float, bool)) and not is_op) or (
            isinstance(val, _SYM_TYPES) and node.target in _SYM_OPS
        ):
            # sym_size and Python arithmetic on sizes: an expression over the input dims
            try:
                env[node] = self._sym_value(val, where) if isinstance(val, _SYM_TYPES) else scalar(val)
            except ExportError as exc:
                self.unexpressed[node] = exc
            return
        if not isinstance(node.target, torch._ops.OpOverload):
            raise ExportError(
                f"{where}: {node.target} is not an ATen op; NBX graphs hold ATen ops only "
                "(control flow and custom Python calls must be removed before export)"
            )
        op_name = aliases.canonical(_op_name(node.target))
        if opnames.base_name(op_name) in aliases.DROPPED:
            if op_name == "aten::_assert_scalar.default":
                self._keep_assertion(node, where)
            return
        target = _overload(op_name) or node.target
        if self.can_run(op_name):
            self._emit(node, name, op_name, env, where)
            return
        decomposed = self._decompose(node, target, depth)
        if decomposed is None:
            self.missing.setdefault(op_name, []).append(name)
            # keep walking, to report every missing op at once
            env[node] = [ref(f"{name}.{i}") for i in range(len(val))] if isinstance(val, list | tuple) else ref(name)
            return
        sub_env = dict(
            zip(
                [n for n in decomposed.graph.nodes if n.op == "placeholder"],
                [self._arg(a, env, where) for a in _node_args(node)],
                strict=True,
            )
        )
        env[node] = self.walk(decomposed.graph, sub_env, f"{name}/", depth + 1)
        # The sizes the op reads from data are bound by the results of its decomposition.
        results = env[node] if isinstance(env[node], list | tuple) else [env[node]]
        named = [r["ref"] if isinstance(r, dict) and "ref" in r else None for r in results]
        self._bind_data_symbols(node, name, named, env, where, name_results=False)

    def _emit(self, node: fx.Node, name: str, op_name: str, env: dict[fx.Node, Any], where: str) -> None:
        args = self._arg(list(node.args), env, where)
        kwargs = {k: self._arg(v, env, where) for k, v in node.kwargs.items()}
        val = node.meta.get("val")
        if isinstance(val, list | tuple):
            used = {u.args[1] for u in node.users if u.target is operator.getitem}
            whole = any(u.target is not operator.getitem for u in node.users)
            outputs = [f"{name}.{i}" if whole or i in used else None for i in range(len(val))]
            env[node] = [None if o is None else ref(o) for o in outputs]
        else:
            outputs = [name]
            env[node] = ref(name)
        self._bind_data_symbols(node, name, outputs, env, where)
        self.nodes.append({"name": name, "op": op_name, "args": args, "kwargs": kwargs, "outputs": outputs})

    def _keep_assertion(self, node: fx.Node, where: str) -> None:
        """A ``torch._check`` relating a size read from data to another size becomes a guard, checked
        when the run has bound both; checks of one size against a number are its range already."""
        cond = node.args[0] if node.args else None
        val = cond.meta.get("val") if isinstance(cond, fx.Node) else None
        expr = val.node.expr if isinstance(val, torch.SymBool) else None
        op = _SYMPY_RELATIONS.get(type(expr))
        if expr is None or op is None or not any(self.symbols.get(s) in self.data_symbols for s in expr.free_symbols):
            return
        if len(expr.free_symbols) == 1 and (expr.lhs.is_Number or expr.rhs.is_Number):
            return
        try:
            left, right = self._expr(expr.lhs, where), self._expr(expr.rhs, where)
        except ExportError:
            return  # a size the graph cannot name: the check is dropped, as torch.export's others are
        self.assertions.append({"left": left, "op": op, "right": right})

    def _bind_data_symbols(
        self,
        node: fx.Node,
        name: str,
        outputs: list[str | None],
        env: dict[fx.Node, Any],
        where: str,
        name_results: bool = True,
    ) -> None:
        """Declare the sizes ``node`` reads from data (torch's unbacked symbols: nonzero's count, an
        ``item()``) as symbols its results (the values ``outputs`` names) bind at run time; with
        ``name_results``, a result no node reads is given a name so that it can bind one."""
        from torch.fx.experimental.symbolic_shapes import resolve_unbacked_bindings
        from torch.utils._pytree import SequenceKey

        bindings = resolve_unbacked_bindings(self.shape_env, node.meta.get("unbacked_bindings")) or {}
        val = node.meta.get("val")
        for symbol, path in bindings.items():
            if not symbol_is_type(symbol, SymT.UNBACKED_INT):
                continue  # a float read from data is no size
            keys = list(path)
            index = 0
            if isinstance(val, list | tuple) and keys and isinstance(keys[0], SequenceKey):
                index = keys[0].idx
                keys = keys[1:]
            dim = None
            if len(keys) == 2 and getattr(keys[0], "name", None) == "size" and isinstance(keys[1], SequenceKey):
                dim = keys[1].idx
            elif keys or isinstance(val, list | tuple):
                # A view's data-dependent stride or offset: the kernel computes it; only a later use fails.
                self.unnamed[symbol] = f"{where} binds it at {path}"
                continue
            value = outputs[index] if index < len(outputs) else None
            if value is None and not name_results:
                self.unnamed[symbol] = f"{where} binds it at {path}, a result its decomposition does not name"
                continue
            if value is None:  # a result no node reads still names the size it binds
                value = outputs[index] = f"{name}.{index}"
                env[node][index] = ref(value)
            lower, upper = self.unbacked_ranges.get(symbol, (0, None))
            taken = set(self.symbols.values()) | self.data_symbols.keys()
            label = str(symbol)
            while label in taken:
                label += "_"
            # A size torch proved equal to one an earlier node bound (torch._check(a == b)) is bound
            # again under its own name, with a guard that the two agree.
            earlier = self.symbols.get(symbol)
            if earlier in self.data_symbols:
                self.assertions.append({"left": label, "op": "==", "right": earlier})
            else:
                self.symbols[symbol] = label
            self.data_symbols[label] = {
                "min": lower,
                "max": upper,
                "example": None,
                "from": {"value": value, "dim": dim},
            }

    def _decompose(self, node: fx.Node, target: torch._ops.OpOverload, depth: int) -> fx.GraphModule | None:
        """``node`` alone, traced into smaller ATen calls; None when torch has no way to do that."""
        if depth > 20:
            return None
        fn = None
        schema = target._schema
        if (
            schema.arguments
            and schema.arguments[0].alias_info is not None
            and schema.arguments[0].alias_info.is_write
            and schema.name.endswith("_")
        ):
            functional = _overload(f"{schema.name[:-1]}.{target._overloadname}")
            if functional is not None:

                def fn(self_: Any, *args: Any, **kwargs: Any) -> Any:  # in-place = functional + copy_
                    return self_.copy_(functional(self_, *args, **kwargs))

        if fn is None:
            fn = self.decompositions.get(target)
        if fn is None and torch._C._dispatch_has_kernel_for_dispatch_key(target.name(), "CompositeImplicitAutograd"):
            fn = target.decompose
        if fn is None:
            return None
        from torch.fx.experimental.proxy_tensor import make_fx

        flat, spec = pytree.tree_flatten((node.args, node.kwargs))
        slots = [i for i, a in enumerate(flat) if isinstance(a, fx.Node)]
        vals = [a.meta.get("val") if isinstance(a, fx.Node) else a for a in flat]

        def call(*inputs: Any) -> Any:
            values = list(vals)
            for slot, value in zip(slots, inputs, strict=True):
                values[slot] = value
            args, kwargs = pytree.tree_unflatten(values, spec)
            return fn(*args, **kwargs)

        try:
            gm = make_fx(call, decomposition_table={target: fn})(*[vals[i] for i in slots])
        except Exception:  # torch could not trace this decomposition on these arguments
            return None
        calls = [n.target for n in gm.graph.nodes if n.op == "call_function"]
        return None if target in calls else gm  # a decomposition that calls itself decomposes nothing

    # -- the program ---------------------------------------------------------------------------------
    def run(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        ep, sig = self.ep, self.ep.graph_signature
        symbols = self._symbol_table()
        placeholders = [n for n in ep.graph.nodes if n.op == "placeholder"]
        env: dict[fx.Node, Any] = {}
        inputs, weights, arrays = [], [], {}
        constants: list[dict[str, Any]] = []  # call arguments that were not tensors, with their places
        place = 0
        stored: dict[tuple, str] = {}  # a tensor's memory and layout -> the key it is stored under
        for node, spec in zip(placeholders, sig.input_specs, strict=True):
            where = f"input {node.name!r}"
            if spec.kind == InputKind.USER_INPUT:
                place += 1
                if not isinstance(spec.arg, TensorArgument):
                    value = getattr(spec.arg, "value", None)
                    env[node] = self._arg(value, env, where)
                    constants.append({"name": spec.arg.name, "index": place - 1, "value": value})
                    continue
                inputs.append(self._spec(node.name, node.meta["val"], where))
            elif spec.kind in _KIND:
                tensor = (
                    ep.constants.get(spec.target)
                    if spec.kind == InputKind.CONSTANT_TENSOR
                    else ep.state_dict.get(spec.target, ep.constants.get(spec.target))
                )
                if not isinstance(tensor, torch.Tensor):
                    raise ExportError(
                        f"{where}: {spec.kind.name} {spec.target!r} is a {type(tensor).__name__}, not "
                        "a tensor; NBX graphs store tensors only"
                    )
                key = _tied_key(stored, tensor, _KIND[spec.kind], spec.target)
                if key == spec.target:
                    arrays[key] = _to_numpy(tensor, where)
                weights.append(
                    {
                        "name": node.name,
                        "key": key,
                        "kind": _KIND[spec.kind],
                        "dtype": _dtype_name(tensor.dtype, where),
                        "shape": list(tensor.shape),
                    }
                )
            else:
                raise ExportError(f"{where}: {spec.kind.name} inputs are not supported by NBX graphs")
            env[node] = ref(node.name)
        result = self.walk(ep.graph, env, "", 0)
        if self.missing:
            listed = "\n  ".join(
                f"{self.can_run.why(op)} [needed by {len(names)} node(s), first {names[0]!r}]; "
                "torch has no decomposition for it"
                for op, names in self.missing.items()
            )
            raise ExportError(
                f"{len(self.missing)} ops have no kernel in the registry and no decomposition, so the "
                f"graph cannot run on NBX:\n  {listed}\n{self.can_run.advice(self.missing)}"
            )
        output_node = next(n for n in ep.graph.nodes if n.op == "output")
        outputs, mutations = [], []
        for out_node, spec, value in zip(output_node.args[0], sig.output_specs, result, strict=True):
            where = f"output {spec.arg}"
            if not isinstance(value, dict) or "ref" not in value:
                raise ExportError(f"{where}: the output is {value!r}, not a tensor value")
            if spec.kind == OutputKind.USER_OUTPUT:
                outputs.append(self._spec(value["ref"], out_node.meta["val"], where))
                fmt = _channels_last_format(out_node.meta["val"])
                if fmt:
                    outputs[-1]["memory_format"] = fmt
            elif spec.kind == OutputKind.BUFFER_MUTATION:
                mutations.append({"value": value["ref"], "kind": "buffer", "target": spec.target})
            elif spec.kind == OutputKind.USER_INPUT_MUTATION:
                target = next(
                    s.arg.name
                    for s in sig.input_specs
                    if s.kind == InputKind.USER_INPUT and getattr(s.arg, "name", None) == spec.target
                )
                mutations.append({"value": value["ref"], "kind": "user_input", "target": target})
            else:
                raise ExportError(f"{where}: {spec.kind.name} outputs are not supported (export in eval mode)")
        guards, unchecked = _guards(getattr(ep, "_guards_code", None) or [], {s["name"]: s["shape"] for s in inputs})
        # A size read from data that no kept op uses leaves the graph plannable: it is not declared,
        # nor the checks on it.
        used = _symbols_used(self.nodes, [o["shape"] for o in outputs])
        for a in self.assertions:  # a check on a used size keeps the sizes it compares it with
            sides = _symbols_used([], [[a["left"], a["right"]]])
            if sides & used & self.data_symbols.keys() and a not in guards:
                guards.append(a)
                used |= sides
        data_symbols = {name: spec for name, spec in self.data_symbols.items() if name in used}
        if unchecked:
            warnings.warn(
                "torch.export recorded conditions on the inputs that an NBX graph cannot state, so runs will not "
                f"check them: {'; '.join(unchecked)}",
                stacklevel=3,
            )
        document = {
            "format": FORMAT,
            "version": VERSION,
            "producer": {"name": "nbx_core.graph.export", "nbx": __version__, "torch": torch.__version__},
            "symbols": symbols | data_symbols,
            "inputs": inputs,
            # Where every non-tensor argument has a JSON value, the graph can be called as the module was.
            **({"constant_inputs": constants} if constants and all(_plain(c["value"]) for c in constants) else {}),
            "weights": weights,
            "nodes": self.nodes,
            "outputs": outputs,
            "mutations": mutations,
            **({"guards": guards} if guards else {}),
        }
        return document, arrays


def _symbols_in(value: Any) -> set[str]:
    """The symbol names in the ``{"sym": ...}`` arguments within ``value`` (lists and kwargs too)."""
    from .symbolic import parse

    if isinstance(value, dict):
        if set(value) == {"sym"}:
            return set(parse(value["sym"], "export").symbols)
        return set().union(*map(_symbols_in, value.values()))
    if isinstance(value, list):
        return set().union(*map(_symbols_in, value))
    return set()


def _symbols_used(nodes: Iterable[Mapping[str, Any]], shapes: Iterable[Iterable[Any]]) -> set[str]:
    """The symbols the nodes' arguments and these shapes (ints and expression strings) use."""
    from .symbolic import parse

    used = set().union(*(_symbols_in([node["args"], node["kwargs"]]) for node in nodes))
    return used.union(*(parse(d, "export").symbols for shape in shapes for d in shape if isinstance(d, str)))


class _Unstated(Exception):
    """A guard in a form NBX's symbolic ints cannot state."""


_RELATION = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}
_ARITHMETIC = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "//", ast.Mod: "%", ast.Pow: "**"}


def _guards(codes: Iterable[str], shapes: Mapping[str, list[int | str]]) -> tuple[list[dict[str, Any]], list[str]]:
    """torch.export's guards (Python source over ``L['input'].size()[i]``) as graph.json guards, and
    the ones that cannot be stated (strides, non-tensor inputs, ``or``): those run unchecked."""
    guards, unchecked = [], []
    for code in codes:
        try:
            tree = ast.parse(code, mode="eval").body
        except SyntaxError:
            unchecked.append(code)
            continue
        parts = tree.values if isinstance(tree, ast.BoolOp) and isinstance(tree.op, ast.And) else [tree]
        for part in parts:
            try:
                guards.extend(_relations(part, shapes))
            except _Unstated:
                unchecked.append(ast.unparse(part))
    return guards, unchecked


def _relations(node: ast.expr, shapes: Mapping[str, list[int | str]]) -> list[dict[str, Any]]:
    if not isinstance(node, ast.Compare) or not all(type(op) in _RELATION for op in node.ops):
        raise _Unstated
    terms = [_bare(_term(t, shapes)) for t in [node.left, *node.comparators]]
    return [
        {"left": left, "op": _RELATION[type(op)], "right": right}
        for left, op, right in zip(terms, node.ops, terms[1:], strict=False)
    ]


def _term(node: ast.expr, shapes: Mapping[str, list[int | str]]) -> str:
    """One side of a guard as an NBX symbolic expression."""
    if isinstance(node, ast.Constant) and type(node.value) is int and abs(node.value) <= LIMIT:
        return str(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
        return f"({_term(node.left, shapes)} {_ARITHMETIC[type(node.op)]} {_term(node.right, shapes)})"
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return f"(-{_term(node.operand, shapes)})"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("max", "min"):
        if len(node.args) < 2 or node.keywords:
            raise _Unstated
        return f"{node.func.id}({', '.join(_term(a, shapes) for a in node.args)})"
    # L['x'].size()[i] or L['x'].size(i): the input's dim i, a literal or the graph's expression for it
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Call) and not node.value.args:
        size, axis = node.value.func, node.slice
    elif isinstance(node, ast.Call) and len(node.args) == 1:
        size, axis = node.func, node.args[0]
    else:
        raise _Unstated
    if not (
        isinstance(size, ast.Attribute)
        and size.attr == "size"
        and isinstance(size.value, ast.Subscript)
        and isinstance(size.value.value, ast.Name)
        and size.value.value.id == "L"
        and isinstance(size.value.slice, ast.Constant)
        and isinstance(axis, ast.Constant)
        and type(axis.value) is int
    ):
        raise _Unstated
    name = size.value.slice.value
    shape = shapes.get(name) if isinstance(name, str) else None
    if shape is None or not -len(shape) <= axis.value < len(shape):
        raise _Unstated
    dim = shape[axis.value]
    return str(dim) if isinstance(dim, int) or dim.isidentifier() else f"({dim})"


def _bare(text: str) -> str:
    """``text`` without parentheses around the whole of it."""
    depth = 0
    for i, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0 and i < len(text) - 1:
            return text
    return text[1:-1] if text.startswith("(") else text


def _plain(value: Any) -> bool:
    """Whether a constant argument has a JSON value: None, a bool, an int, a finite float or a str."""
    if isinstance(value, float):
        return bool(np.isfinite(value))
    return value is None or isinstance(value, bool | int | str)


_SYMPY_RELATIONS = {
    sympy.Eq: "==",
    sympy.Ne: "!=",
    sympy.Lt: "<",
    sympy.Le: "<=",
    sympy.Gt: ">",
    sympy.Ge: ">=",
}

_SYM_OPS = {
    torch.ops.aten.sym_size.int,
    torch.ops.aten.sym_numel.default,
    torch.ops.aten.sym_stride.int,
    torch.ops.aten.sym_storage_offset.default,
}


def _hints(shape_env: Any) -> Mapping[Any, Any]:
    """Symbol -> the size the export traced with. torch renamed ShapeEnv's ``var_to_val`` to
    ``backed_var_to_val``, keeping the old name as an alias that warns; older torch has only it."""
    if shape_env is None:
        return {}
    if hasattr(shape_env, "backed_var_to_val"):
        return shape_env.backed_var_to_val
    return getattr(shape_env, "var_to_val", {})


def _node_args(node: fx.Node) -> list[fx.Node]:
    flat, _ = pytree.tree_flatten((node.args, node.kwargs))
    return [a for a in flat if isinstance(a, fx.Node)]


def _dtype_name(dtype: torch.dtype, where: str) -> str:
    try:
        return D.from_name(str(dtype)).name
    except NbxError as exc:
        raise ExportError(f"{where}: {exc}") from None


def _channels_last_format(val: torch.Tensor) -> str | None:
    """``channels_last`` or ``channels_last_3d`` when torch laid ``val`` out so (and not also
    row-major), else None."""
    formats = {4: ("channels_last", torch.channels_last), 5: ("channels_last_3d", torch.channels_last_3d)}
    name, fmt = formats.get(val.dim(), (None, None))
    if fmt is None or val.is_contiguous():
        return None
    return name if val.is_contiguous(memory_format=fmt) else None


def _tied_key(stored: dict[tuple, str], tensor: torch.Tensor, kind: str, key: str) -> str:
    """The key ``tensor`` is stored under: the key of an earlier weight of the same kind that is the
    same tensor (tied parameters, such as an LM head sharing the embedding), else ``key``. One copy
    is written and the loader makes one device buffer for the key."""
    if tensor.numel() == 0 or tensor.device.type == "meta":
        return key
    ident = (
        kind,
        tensor.untyped_storage().data_ptr(),
        tensor.storage_offset(),
        tuple(tensor.shape),
        tensor.stride(),
        tensor.dtype,
    )
    return stored.setdefault(ident, key)


def _to_numpy(tensor: torch.Tensor, where: str) -> np.ndarray:
    """The tensor's bytes as a numpy array of its NBX dtype (ml_dtypes for bfloat16 and float8)."""
    dtype = D.from_name(_dtype_name(tensor.dtype, where))
    flat = tensor.detach().to("cpu").contiguous().reshape(-1)
    return flat.view(torch.uint8).numpy().view(dtype.np).reshape(tuple(tensor.shape)).copy()


def export(
    exported_program: ExportedProgram,
    path: str | Path,
    registry: Registry | None = None,
    *,
    available: Iterable[str] | None = None,
) -> Path:
    """Write ``exported_program`` as the graph directory ``path`` (atomically) and return the path.

    Ops that ``registry`` (default: the installed plugins) cannot run are decomposed, node by
    node. ``available`` (op names, ``ns::op`` or ``ns::op.overload``) replaces the registry's
    answer, to export for an installation other than this one. Raises ExportError naming every
    op with no kernel and no decomposition.
    """
    if not isinstance(exported_program, ExportedProgram):
        raise ExportError(
            f"export: expected a torch.export.ExportedProgram, got {type(exported_program).__name__}; "
            "use export_module for an nn.Module"
        )
    if available is None and registry is None:
        registry = get_registry()
    document, arrays = _Exporter(exported_program, _Availability(registry, available)).run()
    return save(document, arrays, path)


def export_module(
    module: torch.nn.Module,
    example_args: tuple[Any, ...],
    path: str | Path,
    dynamic_shapes: Any = None,
    *,
    example_kwargs: Mapping[str, Any] | None = None,
    registry: Registry | None = None,
    available: Iterable[str] | None = None,
) -> Path:
    """``torch.export.export(module, example_args, example_kwargs, dynamic_shapes=...)`` then :func:`export`.

    Export ``module.eval()`` for inference: dropout off, batch norm on its running statistics.
    """
    ep = torch.export.export(module, tuple(example_args), dict(example_kwargs or {}), dynamic_shapes=dynamic_shapes)
    return export(ep, path, registry, available=available)
