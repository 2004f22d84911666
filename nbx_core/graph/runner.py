"""Running a graph: validate → rewrite with fusion patterns → resolve every op → run, planned.

A :class:`Program` resolves every op name through the registry when it is built, so a graph
that needs a name nobody provides fails with one error listing each missing name and how many
nodes use it, before any kernel runs. Where an installed fusion pattern matches (and fusion is on),
the matched nodes become one node calling the pattern's op (:mod:`nbx_core.graph.rewrite`); before
that, inference batch norms fold into the convolutions before them (:mod:`nbx_core.graph.fold`) and
convolutions take channels-last inputs (:mod:`nbx_core.graph.layout`).

The first run of each input signature goes node by node and is recorded into an execution plan
(:mod:`nbx_core.graph.plan`); later runs of the signature replay the plan. A program keeps the plans
of its :data:`PLANS_KEPT` most recently run signatures. Node by node, each
intermediate value is dropped right after its last use; in-place ops and ``copy_`` write into the
value they mutate, so later readers see the write. Buffer mutations recorded by torch.export update
the program's stored buffers (such a program runs node by node).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any

from .. import backend
from .. import dtypes as D
from ..device import Device, as_device
from ..errors import (
    BackendError,
    DuplicateKernelError,
    GraphArityError,
    GraphError,
    GraphInputError,
    NbxError,
    ShapeError,
    UnresolvedOpError,
)
from ..registry import Registry, get_registry
from ..runtime.layouts import program_layouts
from ..runtime.memo import run_memo
from ..shape import infer_size
from ..tensor import NBXTensor, from_dlpack, from_numpy
from .aliases import VIEW_OPS, is_in_place, writes_in_place
from .capture import CapturedProgram, capture
from .copies import drop_attention_copies
from .fold import fold_batch_norms
from .format import DeviceArg, Graph, Guard, Node, Ref, Sym, SymbolSpec, TensorSpec
from .layout import channels_last_convolutions
from .rewrite import Fusion, rewrite
from .siblings import merge_sibling_linears
from .symbolic import Expr

if TYPE_CHECKING:
    from ..runtime.trace import Recorder
    from .plan import Plan, Unplanned


def plan_frees(graph: Graph) -> list[tuple[str, ...]]:
    """For each node, the values to drop once it has run: those it reads last, and its own
    results that nothing reads. Graph outputs, mutation sources, inputs and weights are kept."""
    keep = {o.name for o in graph.outputs} | {m.value for m in graph.mutations}
    keep |= {s.name for s in graph.inputs} | {w.name for w in graph.weights}
    last: dict[str, int] = {}
    for node in graph.nodes:
        for name in node.outputs:
            if name is not None:
                last[name] = node.index
        for name in node.reads():
            last[name] = node.index
    frees: list[list[str]] = [[] for _ in graph.nodes]
    for name, index in last.items():
        if name not in keep:
            frees[index].append(name)
    return [tuple(f) for f in frees]


def resolve_ops(graph: Graph, registry: Registry) -> dict[str, Callable[..., Any]]:
    """The kernel of every op the graph calls; one UnresolvedOpError lists all that are missing."""
    counts = graph.op_counts()
    problems = []
    for name, count in counts.items():
        try:
            registry.resolve(name)
        except (UnresolvedOpError, DuplicateKernelError) as exc:
            problems.append(f"{exc} [used by {count} node{'s' if count > 1 else ''}]")
    if problems:
        raise UnresolvedOpError(
            f"{graph.file}: {len(problems)} of the {len(counts)} ops the graph calls cannot be resolved, so "
            "nothing ran:\n  " + "\n  ".join(problems)
        )
    return {name: registry.lookup(name) for name in counts}  # imports kernels: import errors come now


VIEW = "aten::view.default"
PLANS_KEPT = 32
"""Signatures whose plans a Program keeps; a new one drops the least recently run plan, and with
it the memory it holds (arena, hoisted results, CUDA graph). A dynamic dim that takes more values
than this re-records the ones dropped when they come back."""


def copyable_views(graph: Graph) -> frozenset[int]:
    """The ``aten::view`` nodes that may copy: those whose memory nothing in the graph writes into.

    Values that may share memory (a view and its base, an in-place op's result and its target)
    are grouped; a group is written when an in-place op or an input mutation targets one of its
    values. A view outside every written group cannot be told from a copy.
    """
    parent: dict[str, str] = {}

    def find(name: str) -> str:
        while parent.get(name, name) != name:
            name = parent[name]
        return name

    def union(a: str, b: str) -> None:
        parent[find(a)] = find(b)

    written: list[str] = [m.target for m in graph.mutations if m.kind != "buffer"]
    for node in graph.nodes:
        first = node.args[0] if node.args else None
        if not isinstance(first, Ref):
            continue
        base = node.op.partition(".")[0]
        in_place = is_in_place(node.op)
        if in_place or base in VIEW_OPS:
            for name in node.outputs:
                if name is not None:
                    union(name, first.name)
        if in_place:
            written.append(first.name)
    dirty = {find(name) for name in written}
    return frozenset(node.index for node in graph.nodes
                     if node.op == VIEW and node.outputs[0] is not None and find(node.outputs[0]) not in dirty)


def _view_or_copy(view: Callable[..., Any], registry: Registry) -> Callable[..., Any]:
    """``aten::view`` that copies when the input's strides allow no view.

    torch.export records ``view`` where torch's kernels left a layout that allows one; NBX's
    kernels may leave another (an attention output, say). Where nothing writes into the view's
    memory (:func:`copyable_views`), a view and a copy cannot be told apart, so the runner copies.
    """
    reshape = registry.lookup("aten::reshape")

    def view_or_copy(self: NBXTensor, size: Sequence[int]) -> NBXTensor:
        try:
            return view(self, size)
        except ShapeError:
            infer_size("aten::view", size, self.numel())  # a size that does not fit stays an error
            return reshape(self, size)

    return view_or_copy


def _same_constant(value: Any, exported: Any) -> bool:
    if exported is None or value is None:
        return value is exported
    return type(value) in (bool, int, float, str) and isinstance(value, bool) == isinstance(exported, bool) \
        and value == exported


class _Dims(dict):
    """Symbol -> size bound from the inputs, with where each was bound (for messages)."""

    def __init__(self) -> None:
        super().__init__()
        self.origin: dict[str, str] = {}


class Program:
    """A loaded graph, ready to run: ``prog(x, mask=m)`` or ``prog.run({"x": x})``.

    Build one with :func:`nbx_core.graph.load`. Inputs may be NBXTensors, numpy arrays or any
    DLPack producer (a torch tensor); they are moved to the program's device.
    """

    def __init__(self, graph: Graph, weights: Mapping[str, Any], *, device: str | Device | None = None,
                 registry: Registry | None = None, planning: bool = True, fusion: bool = True,
                 cuda_graphs: bool | None = None) -> None:
        from ..backend import default_device

        self.device = as_device(device) if device is not None else default_device()
        self._registry = registry if registry is not None else get_registry()
        self.fusions: list[Fusion] = []
        self.folded_batch_norms = 0
        self.channels_last_convolutions = 0
        self.merged_linears = 0
        self.dropped_copies = 0
        if fusion:
            graph, weights, self.folded_batch_norms = fold_batch_norms(graph, weights)
            graph, weights, self.channels_last_convolutions = channels_last_convolutions(graph, weights)
            graph, weights, self.merged_linears = merge_sibling_linears(graph, weights)
            graph, self.dropped_copies = drop_attention_copies(graph)
            graph, self.fusions = rewrite(graph, self._registry.patterns(), self._registry.provides)
        self.graph = graph
        self.planning = planning
        self.fusion = fusion
        self.cuda_graphs = backend.current() == "cuda" and not graph.symbols if cuda_graphs is None else cuda_graphs
        self._plans: OrderedDict[tuple, Plan | Unplanned] = OrderedDict()  # least recently run first
        self._kernels = resolve_ops(graph, self._registry)
        self._copyable_views = copyable_views(graph)
        # Values derived from a node's inputs may be reused within a run (nbx_core.runtime.memo)
        # only where no node writes in place and no buffer is updated.
        self._functional = not writes_in_place(graph)
        if self._copyable_views:
            self._view_or_copy = _view_or_copy(self._kernels[VIEW], self._registry)
        self._frees = plan_frees(graph)
        self._producers = {name: node for node in graph.nodes for name in node.outputs if name is not None}
        self._binders = data_symbol_binders(graph, self._producers)
        self._binding_nodes = {self._producers[name].index for name in self._binders}
        self._input_guards, self._data_guards = split_guards(graph, self._producers)
        self._buffers = {key: self._to_device(from_numpy(array)) for key, array in weights.items()}
        # Runs of a graph that updates its buffers are serialised; other runs share nothing they write.
        stateful = any(m.kind == "buffer" for m in graph.mutations)
        self._buffer_lock: AbstractContextManager[Any] = threading.Lock() if stateful else nullcontext()

    # -- declaration ---------------------------------------------------------------------------------
    @property
    def inputs(self) -> tuple[TensorSpec, ...]:
        """The declared inputs, in call order (dtype names; shapes of ints and symbolic Exprs)."""
        return self.graph.inputs

    @property
    def outputs(self) -> tuple[TensorSpec, ...]:
        """The declared outputs, in return order."""
        return self.graph.outputs

    def required_ops(self) -> dict[str, int]:
        """Op name -> number of nodes calling it."""
        return self.graph.op_counts()

    def __repr__(self) -> str:
        return f"<nbx Program {self.graph.path} on {self.device}: {len(self.graph.nodes)} nodes>"

    # -- running ---------------------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> NBXTensor | tuple[NBXTensor, ...]:
        """Run on positional and/or keyword inputs; one output comes back bare, several as a tuple."""
        results = self.run(self._named(args, kwargs))
        values = tuple(results[o.name] for o in self.graph.outputs)
        return values[0] if len(values) == 1 else values

    def run(self, inputs: Mapping[str, Any], *, planned: bool = True) -> dict[str, NBXTensor]:
        """Run on ``inputs`` (name -> tensor); returns output name -> NBXTensor, fresh at every run.

        With ``planned`` (and :attr:`planning` on), a signature's first run is recorded into a plan
        that later runs replay; otherwise the run goes node by node. Several threads may run one
        program at the same time; a program whose graph mutates buffers runs one call at a time, so
        that each run reads the buffers the previous one wrote. The aot backend computes no values,
        so there this raises BackendError (see :meth:`check_compiles`).
        """
        env, dims = self._bind_inputs(inputs)
        if backend.current() == "aot":
            target = f"sm_{backend.aot_target()[0]}"
            raise BackendError(
                f"{self.graph.file}: the aot backend (NBX_BACKEND=aot) compiles kernels for {target} without "
                "running them, a compile-only check for a target GPU, so a run would return no values: unset "
                f"NBX_BACKEND or set NBX_BACKEND=cpu to run the program; to check that its kernels compile for "
                f"{target}, call Program.check_compiles(...) on the aot backend"
            )
        return self._execute_all(env, dims, planned)

    def check_compiles(self, *args: Any, **kwargs: Any) -> None:
        """Compile every kernel one run on these inputs launches, for the aot backend's target GPU:
        with :attr:`planning`, those of its plan too (the fused kernels generated for it).

        Only on the aot backend (``NBX_BACKEND=aot``; ``NBX_AOT_TARGET`` names the GPU, sm_90 by
        default), which needs no GPU: a kernel that does not compile for the target, or needs more
        shared memory than it has, raises. Returns nothing, since the aot backend computes no values.
        """
        if backend.current() != "aot":
            raise BackendError(f"{self.graph.file}: check_compiles needs the aot backend (NBX_BACKEND=aot); on the "
                               f"{backend.current()} backend, run the program")
        env, dims = self._bind_inputs(self._named(args, kwargs))
        if not self.planning:
            self._run_nodes(env, dims)
            return
        from .plan import Plan, signature

        tensors = [env[spec.name] for spec in self.graph.inputs]
        key = signature(tensors)
        plan = self._plan(key)
        if plan is None:
            _, plan = self._record(tensors, env, dims)
            self._keep(key, plan)
        if isinstance(plan, Plan):
            plan.run(tensors)  # on aot, each launch compiles

    def _named(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """The tensor inputs by name, from arguments given as the exported module took them: the
        arguments that were not tensors (None, numbers) may be passed again, with the same values."""
        names = self.graph.call_names()
        if len(args) > len(names):
            raise GraphInputError(f"{self.graph.file}: {len(args)} positional inputs given, the graph takes "
                                  f"{len(names)} ({', '.join(names)})")
        given = dict(zip(names, args, strict=False))
        for name, value in kwargs.items():
            if name in given:
                raise GraphInputError(f"{self.graph.file}: input {name!r} given both by position and by name")
            given[name] = value
        for constant in self.graph.constant_inputs:
            if constant.name in given and not _same_constant(given.pop(constant.name), constant.value):
                raise GraphInputError(
                    f"{self.graph.file}: input {constant.name!r} was exported as {constant.value!r}, which the "
                    "graph holds: pass that value or leave it out, or export again with the value you need"
                )
        return given

    def _bind_inputs(self, inputs: Mapping[str, Any]) -> tuple[dict[str, Any], _Dims]:
        """The inputs, checked and on the program's device, and the dims they bind."""
        file = self.graph.file
        unknown = sorted(set(inputs) - {s.name for s in self.graph.inputs})
        missing = [s.name for s in self.graph.inputs if s.name not in inputs]
        if unknown or missing:
            raise GraphInputError(f"{file}: inputs do not match the graph's "
                                  f"({', '.join(s.name for s in self.graph.inputs)}): missing {missing}, "
                                  f"unknown {unknown}")
        env: dict[str, Any] = {}
        dims = _Dims()
        for spec in self.graph.inputs:
            env[spec.name] = tensor = self._as_input(spec, inputs[spec.name])
            self._bind(spec, tensor, dims, f"input {spec.name!r}")
        for spec in self.graph.inputs:
            self._check_exprs(spec, env[spec.name], dims, f"input {spec.name!r}", GraphInputError)
        for guard in self._input_guards:
            if not guard.holds(dims):
                raise GraphInputError(
                    f"{file}: these inputs ({guard.bound_text(dims)}) break a condition torch.export recorded for "
                    f"the graph, {guard.text} ({guard.left(dims)} {guard.op} {guard.right(dims)}): the model was "
                    "traced on a path valid only where it holds (a value cached for one size, a branch on a size). "
                    "Run it on inputs that meet it, or export again from a fresh module with these sizes"
                )
        return env, dims

    def _execute_all(self, inputs: dict[str, Any], dims: _Dims, planned: bool) -> dict[str, NBXTensor]:
        if not (planned and self.planning):
            return self._run_nodes(inputs, dims)
        # The plan machinery imports the launcher, which fixes the backend: not before the first run.
        from .plan import Unplanned, signature

        tensors = [inputs[spec.name] for spec in self.graph.inputs]
        key = signature(tensors)
        plan = self._plan(key)
        if plan is None:
            results, plan = self._record(tensors, inputs, dims)
            self._keep(key, plan)
            return results
        if isinstance(plan, Unplanned):
            return self._run_nodes(inputs, dims)
        outputs = plan.run(tensors)
        return {spec.name: value for spec, value in zip(self.graph.outputs, outputs, strict=True)}

    def _record(self, tensors: list[NBXTensor], inputs: dict[str, Any], dims: _Dims,
                ) -> tuple[dict[str, NBXTensor], Plan | Unplanned]:
        """Run node by node, recording the run; the results and the plan made of the recording."""
        from ..runtime.fusion import fuse
        from ..runtime.trace import Recorder
        from .hoist import fixed_nodes
        from .plan import Plan, Unplanned, draws_random
        if any(m.kind == "buffer" for m in self.graph.mutations):
            return self._run_nodes(inputs, dims), Unplanned("the graph updates its buffers at every run")
        if self._binders:
            read = ", ".join(f"{s.name} from {s.source!r}" for specs in self._binders.values() for s in specs)
            return self._run_nodes(inputs, dims), Unplanned(f"the graph reads sizes from tensor values ({read})")
        random = sorted({node.op for node in self.graph.nodes if draws_random(node.op)})
        if random:
            return self._run_nodes(inputs, dims), Unplanned(f"the graph draws random numbers ({', '.join(random)})")
        with Recorder([t._storage for t in tensors], [t._storage for t in self._buffers.values()]) as recorder:
            results = self._run_nodes(inputs, dims, recorder)
            outputs = [recorder.tensor_ref(results[spec.name]) for spec in self.graph.outputs]
        trace = recorder.trace
        if trace.unreplayable:
            return results, Unplanned(trace.unreplayable)
        stats = fuse(trace, {o.storage for o in outputs}) if self.fusion else None
        plan = Plan(trace, outputs, self.device, stats, fixed_nodes(self.graph) if self.fusion else frozenset())
        if self.cuda_graphs and backend.current() == "cuda":
            try:
                plan.use_cuda_graph(tensors)
            except NbxError as exc:
                plan.graph_reason = str(exc)
        return results, plan

    def _plan(self, key: tuple) -> Plan | Unplanned | None:
        plan = self._plans.get(key)
        if plan is not None:
            self._plans.move_to_end(key)
        return plan

    def _keep(self, key: tuple, plan: Plan | Unplanned) -> None:
        """Keep ``plan`` for its signature; beyond :data:`PLANS_KEPT`, drop the least recently run
        plan with its memory and flag slots."""
        self._plans[key] = plan
        while len(self._plans) > PLANS_KEPT:
            self._plans.popitem(last=False)

    def plan_for(self, *args: Any, **kwargs: Any) -> Plan | Unplanned | None:
        """The plan of these inputs' signature, once a run has made one (None before)."""
        from .plan import signature

        named = self._named(args, kwargs)
        return self._plans.get(signature([self._as_input(spec, named[spec.name]) for spec in self.graph.inputs]))

    def describe(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """How a run on these inputs goes: the pattern fusions, and the plan's launches, fused
        kernels and memory, or why the run is not planned. Plans the signature first if needed
        (which runs the program once, or on the aot backend compiles it)."""
        from .plan import Plan

        about: dict[str, Any] = {"nodes": len(self.graph.nodes), "patterns": _pattern_counts(self.fusions),
                                 "folded_batch_norms": self.folded_batch_norms,
                                 "channels_last_convolutions": self.channels_last_convolutions,
                                 "merged_linears": self.merged_linears, "dropped_copies": self.dropped_copies}
        if not self.planning:
            return about | {"planned": False, "reason": "planning is off (planning=False)"}
        plan = self.plan_for(*args, **kwargs)
        if plan is None:
            if backend.current() == "aot":
                self.check_compiles(*args, **kwargs)
            else:
                self(*args, **kwargs)
            plan = self.plan_for(*args, **kwargs)
        if isinstance(plan, Plan):
            return about | {"planned": True, **plan.describe()}
        assert plan is not None, "a run with planning on records its signature's plan or why it has none"
        return about | {"planned": False, "reason": plan.reason}

    def _run_nodes(self, inputs: dict[str, Any], dims: _Dims, recorder: Recorder | None = None,
                   ) -> dict[str, NBXTensor]:
        memo = run_memo() if self._functional else nullcontext()
        with self._buffer_lock, program_layouts(), memo:
            env = {w.name: self._buffers[w.key] for w in self.graph.weights} | inputs
            for node, frees in zip(self.graph.nodes, self._frees, strict=True):
                if recorder is not None:
                    recorder.where = node.index
                self._execute(node, env, dims)
                if node.index in self._binding_nodes:
                    self._bind_data_symbols(node, env, dims)
                if recorder is not None:
                    recorder.check_results([env[n] for n in node.outputs if n is not None], node.where(self.graph.file))
                for name in frees:
                    del env[name]
            results = {}
            for spec in self.graph.outputs:
                results[spec.name] = env[spec.name]
                self._check_output(spec, env[spec.name], dims)
            for mutation in self.graph.mutations:
                if mutation.kind == "buffer":
                    self._buffers[mutation.target] = env[mutation.value]
                else:
                    self._registry.call("aten::copy_", env[mutation.target], env[mutation.value])
        return results

    def capture(self, *args: Any, **kwargs: Any) -> CapturedProgram:
        """Record one run on these inputs as a CUDA graph; see :mod:`nbx_core.graph.capture`."""
        return capture(self, *args, **kwargs)

    def _execute(self, node: Node, env: dict[str, Any], dims: Mapping[str, int]) -> None:
        args = [self._arg(a, env, dims) for a in node.args]
        kwargs = {k: self._arg(v, env, dims) for k, v in node.kwargs.items()}
        try:
            kernel = self._view_or_copy if node.index in self._copyable_views else self._kernels[node.op]
            result = kernel(*args, **kwargs)
        except NbxError as exc:
            raise type(exc)(f"{node.where(self.graph.file)}: {exc}") from exc
        except Exception as exc:  # a kernel's own bug: keep its type, say where it happened
            exc.add_note(f"while running {node.where(self.graph.file)}")
            raise
        outputs = node.outputs
        many = isinstance(result, tuple | list)
        if len(outputs) == 1 and (not many or len(result) == 1):
            values = (result[0] if many else result,)
        elif many and len(result) == len(outputs):
            values = tuple(result)
        else:
            got = f"{len(result)} results" if many else "one result"
            raise GraphArityError(f"{node.where(self.graph.file)}: the kernel returned {got} but the node declares "
                                  f"{len(outputs)} outputs; re-export the graph or fix the kernel")
        for name, value in zip(outputs, values, strict=True):
            if name is not None:
                env[name] = value

    def _arg(self, value: Any, env: Mapping[str, Any], dims: Mapping[str, int]) -> Any:
        if isinstance(value, Ref):
            return env[value.name]
        if isinstance(value, Sym):
            return value.expr(dims)
        if isinstance(value, DeviceArg):
            return self.device
        if isinstance(value, list):
            return [self._arg(v, env, dims) for v in value]
        return value

    # -- inputs and outputs ------------------------------------------------------------------------------
    def _to_device(self, tensor: NBXTensor) -> NBXTensor:
        return tensor if tensor.device == self.device else tensor.to(self.device)

    def _as_input(self, spec: TensorSpec, value: Any) -> NBXTensor:
        import numpy as np

        if isinstance(value, np.ndarray):
            value = from_numpy(value)
        elif not isinstance(value, NBXTensor) and hasattr(value, "__dlpack__"):
            value = from_dlpack(value)
        if not isinstance(value, NBXTensor):
            raise GraphInputError(f"{self.graph.file}: input {spec.name!r} is a {type(value).__name__}; pass an "
                                  "NBXTensor, a numpy array or a DLPack tensor")
        if value.dtype is not D.from_name(spec.dtype):
            raise GraphInputError(f"{self.graph.file}: input {spec.name!r} is {value.dtype}, the graph declares "
                                  f"{spec.dtype}; cast it with .to({spec.dtype})")
        return self._to_device(value)

    def _bind(self, spec: TensorSpec, tensor: NBXTensor, dims: _Dims, what: str) -> None:
        file = self.graph.file
        declared = _show(spec.shape)
        if len(tensor.shape) != len(spec.shape):
            raise GraphInputError(f"{file}: {what} has shape {list(tensor.shape)}, the graph declares {declared}")
        for axis, (want, got) in enumerate(zip(spec.shape, tensor.shape, strict=True)):
            if isinstance(want, int):
                if want != got:
                    raise GraphInputError(f"{file}: {what} has shape {list(tensor.shape)}, the graph declares "
                                          f"{declared}: dim {axis} must be {want}")
                continue
            name = want.symbol
            if name is None:
                continue  # an expression: checked once every symbol is bound
            here = f"{what} dim {axis}"
            if name in dims:
                if dims[name] != got:
                    raise GraphInputError(f"{file}: {here} is {got}, but {dims.origin[name]} bound {name} = "
                                          f"{dims[name]}; dims named {name} must agree")
                continue
            symbol = self.graph.symbols[name]
            if not symbol.admits(got):
                raise GraphInputError(f"{file}: {here} ({name}) is {got}, outside the exported range "
                                      f"{symbol.range_text}; re-export with a wider torch.export.Dim range")
            dims[name], dims.origin[name] = got, here

    def _bind_data_symbols(self, node: Node, env: Mapping[str, Any], dims: _Dims) -> None:
        """Bind the sizes ``node``'s results give, then check the guards whose last size it binds."""
        where = node.where(self.graph.file)
        for name in node.outputs:
            if name is None:
                continue
            for spec in self._binders.get(name, ()):
                got = _data_size(where, spec, env[name])
                if not spec.admits(got):
                    raise GraphInputError(f"{where}: the size it reads from data, {spec.name} = {got}, is outside "
                                          f"the range {spec.range_text} the model states (torch._check); these "
                                          "inputs break it")
                dims[spec.name], dims.origin[spec.name] = got, f"{where} (read from data)"
        for guard in self._data_guards.get(node.index, ()):
            if not guard.holds(dims):
                raise GraphInputError(
                    f"{where}: the size it reads from data breaks a condition the model states on it "
                    f"(torch._check), {guard.text} ({guard.bound_text(dims)}); these inputs break it"
                )

    def _check_exprs(self, spec: TensorSpec, tensor: NBXTensor, dims: Mapping[str, int], what: str,
                     cls: type[GraphError]) -> None:
        for axis, want in enumerate(spec.shape):
            if isinstance(want, Expr) and want.symbol is None:
                unbound = sorted(want.symbols - dims.keys())
                if unbound:
                    raise cls(f"{self.graph.file}: {what} dim {axis} is {want.text!r}, but {unbound} is bound by no "
                              "input dim")
                if want(dims) != tensor.shape[axis]:
                    raise cls(f"{self.graph.file}: {what} dim {axis} is {tensor.shape[axis]}, but the graph "
                              f"declares {want.text} = {want(dims)}")

    def _check_output(self, spec: TensorSpec, value: Any, dims: Mapping[str, int]) -> None:
        node = self._producers.get(spec.name)
        where = f"{self.graph.file}: output {spec.name!r}"
        if node is not None:
            where += f" of node {node.index} {node.name!r} ({node.op})"
        if not isinstance(value, NBXTensor):
            raise GraphError(f"{where}: is a {type(value).__name__}, not a tensor")
        want = [d if isinstance(d, int) else d(dims) for d in spec.shape]
        if value.dtype.name != spec.dtype or list(value.shape) != want:
            raise GraphError(f"{where}: the kernel produced {value.dtype} {list(value.shape)}, the graph declares "
                             f"{spec.dtype} {want}; the kernel of that op disagrees with torch: report it to its "
                             "plugin")


def data_symbol_binders(graph: Graph, producers: Mapping[str, Node]) -> dict[str, list[SymbolSpec]]:
    """Value name -> the symbols it binds when its node runs (sizes read from data)."""
    binders: dict[str, list[SymbolSpec]] = {}
    for spec in graph.symbols.values():
        if spec.source is None:
            continue
        if spec.source not in producers:
            raise GraphError(f"{graph.file}: symbol {spec.name!r} is bound by {spec.source!r}, which no node of the "
                             "program returns (a rewrite removed it): load with fusion=False and report it")
        binders.setdefault(spec.source, []).append(spec)
    return binders


def _data_size(where: str, spec: SymbolSpec, value: Any) -> int:
    """The size ``spec`` reads from a node's result: a dim of it, or the result itself (a scalar)."""
    if spec.dim is None:
        if isinstance(value, bool) or not isinstance(value, int):
            raise GraphError(f"{where}: its result binds {spec.name} but is a {type(value).__name__}, not an int; "
                             "the kernel of that op disagrees with torch: report it to its plugin")
        return value
    if not isinstance(value, NBXTensor) or spec.dim >= value.ndim:
        raise GraphError(f"{where}: its result binds {spec.name} as dim {spec.dim}, but it has no such dim; "
                         "re-export the graph")
    return value.shape[spec.dim]


def split_guards(graph: Graph, producers: Mapping[str, Node]) -> tuple[list[Guard], dict[int, list[Guard]]]:
    """The guards over input dims only (checked when the inputs are bound), and those over sizes
    read from data, keyed by the index of the last node that binds one of their sizes: checked
    once it has run."""
    on_inputs: list[Guard] = []
    on_data: dict[int, list[Guard]] = {}
    for guard in graph.guards:
        sources = [graph.symbols[s].source for s in guard.left.symbols | guard.right.symbols]
        nodes = [producers[source].index for source in sources if source is not None]
        if nodes:
            on_data.setdefault(max(nodes), []).append(guard)
        else:
            on_inputs.append(guard)
    return on_inputs, on_data


def _pattern_counts(fusions: Sequence[Fusion]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for f in fusions:
        counts[f.pattern.name] = counts.get(f.pattern.name, 0) + 1
    return counts


def _show(shape: Sequence[int | Expr]) -> str:
    return "[" + ", ".join(str(d) if isinstance(d, int) else d.text for d in shape) + "]"
