"""Fusing a recorded run's chains of elementwise launches into generated kernels.

A pointwise launch (:mod:`nbx_core.pointwise`) or a strided copy (:mod:`nbx_core.kernels.copy`)
whose result only one later elementwise launch reads, element for element, need not go through
memory: the two become one kernel that computes the first's math in registers and hands it to
the second. Chains and trees of such launches fuse the same way, into one launch per tree.

The fused kernel does what the launches did, in the same order and types: each member casts its
operands to its compute dtype, applies its math, and rounds its result to the dtype it stored (so a
bfloat16 model fused rounds where it did unfused). Kernels are generated as Python source per
structure (which members, how they connect, their dtypes), written to NBX's cache directory and
imported, so Triton caches and compiles them like any kernel; the source imports the members'
math functions by module and name.

Rules that keep a fusion exact: the intermediate is a temporary buffer of the run that nothing else
touches; producer and consumer walk the same number of elements and both address it contiguously;
and no launch between them touches any memory the producer's tree reads or writes.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import triton.language as tl

from ..shape import contiguous_strides
from .kernels.copy import _copy_kernel
from .pointwise import _pointwise_kernel, tl_dtype
from .trace import Launch, TensorArg, Trace, Zero, tensor_args

MAX_MEMBERS = 24
MAX_LOADS = 16
_FLOAT64 = tl.float64


@dataclass(frozen=True)
class Load:
    """A tensor operand read from memory at ``idx``: its view and the shape/strides it is walked by."""

    arg: TensorArg
    shape: tuple[int, ...]
    strides: tuple[int, ...]


@dataclass
class Member:
    """One launch's math: ``fn`` (None for a copy) over ``operands``, each ("load", k), ("member", j),
    ("float", v) or ("int", v); computed in ``compute`` and stored as ``out``."""

    fn: Any
    compute: Any
    out: Any
    operands: list[tuple[str, Any]]
    sc: tuple = ()
    nodes: tuple[int, ...] = ()


@dataclass
class Group:
    """A tree of members fused into one launch, storing the last member's value into ``sink``."""

    n: int
    members: list[Member]
    loads: list[Load]
    sink: Load
    block: int
    int64: bool
    warps: int
    first: int  # position of the earliest launch in the tree
    sources: list[int] = field(default_factory=list)  # positions of every fused launch
    producer: int | None = None  # position of the launch that runs the tree as its epilogue

    def storages(self) -> set[int]:
        return {ld.arg.storage for ld in self.loads} | {self.sink.arg.storage}


def _origin(fn: Any) -> tuple[str, str]:
    """(module, name) of a ``@triton.jit`` function (compiled or interpreted: both wrap ``fn.fn``)."""
    inner = getattr(fn, "fn", fn)
    return getattr(inner, "__module__", ""), getattr(inner, "__name__", "")


def _importable(fn: Any) -> bool:
    """Whether generated source can import ``fn`` by name (a module-level ``@triton.jit`` function)."""
    module, name = _origin(fn)
    return getattr(sys.modules.get(module), name, None) is fn


def _parse(op: Launch, pos: int) -> Group | None:
    """The launch as a one-member group, if it is an elementwise launch fusion understands."""
    if op.kernel is _pointwise_kernel and _importable(op.kwargs["FN"]):
        out, n, shape, out_strides = op.args[:4]
        kw = op.kwargs
        loads: list[Load] = []
        operands: list[tuple[str, Any]] = []
        for slot in range(kw["ARITY"]):
            p, f, i, s = op.args[4 + 4 * slot: 8 + 4 * slot]
            kind = kw["KINDS"][slot]
            if kind == 1:
                operands.append(("load", len(loads)))
                loads.append(Load(p, shape, s))
            elif kind == 2:
                operands.append(("float", f))
            else:
                operands.append(("int", i))
        member = Member(kw["FN"], kw["COMPUTE"], tl_dtype(out.dtype), operands, tuple(op.args[-1]), (op.where,))
        return Group(n, [member], loads, Load(out, shape, out_strides), kw["BLOCK"], kw["INT64"],
                     kw.get("num_warps", 4), pos, [pos])
    if op.kernel is _copy_kernel and op.args[0].dtype.name != "complex64":
        dst, src, n, shape, dst_strides, src_strides = op.args
        kw = op.kwargs
        member = Member(None, None, tl_dtype(dst.dtype), [("load", 0)], (), (op.where,))
        return Group(n, [member], [Load(src, shape, src_strides)], Load(dst, shape, dst_strides), kw["BLOCK"],
                     kw["INT64"], kw.get("num_warps", 4), pos, [pos])
    return None


def _dense(load: Load) -> bool:
    """Whether ``load`` addresses element ``idx`` at ``idx`` (contiguous, from the storage's start)."""
    return load.arg.offset == 0 and tuple(load.strides) == contiguous_strides(tuple(load.shape))


def _flat(load: Load) -> bool:
    """Whether ``load`` reads element ``idx`` at ``idx`` with no index arithmetic (see ``offsets``)."""
    return _dense(load) and len(load.shape) == 1


def _strided_ok(op: Launch, loads: list[Load]) -> bool:
    """Whether ``op``'s kernel takes an epilogue reading ``loads``: a kernel whose epilogue protocol
    sets ``strided_loads = False`` takes only loads at the result's own indices."""
    return getattr(op.kernel.nbx_epilogue, "strided_loads", True) or all(map(_flat, loads))


def fuse(trace: Trace, protected: set[int]) -> dict[str, int]:
    """Fuse ``trace``'s elementwise chains in place; ``protected`` storages (the run's outputs) are
    never made intermediates. Returns counts: launches removed, fused elementwise kernels made,
    epilogues given to other kernels."""
    ops: list[Any] = trace.ops
    parsed = [_parse(op, pos) if isinstance(op, Launch) else None for pos, op in enumerate(ops)]
    refs: dict[int, int] = {}  # storage -> how many ops touch it
    for op, group in zip(ops, parsed, strict=True):
        # An elementwise launch's unused operand slots point at its output: count what it reads.
        used = {ld.arg.storage for ld in group.loads} | {group.sink.arg.storage} if group else set(_touched(op))
        for s in used:
            refs[s] = refs.get(s, 0) + 1
    groups: dict[int, Group] = {}  # position of a live group's launch -> group
    writer: dict[int, int] = {}  # storage -> position of the launch that wrote it last
    removed: set[int] = set()
    for pos, op in enumerate(ops):
        group = parsed[pos]
        if group is not None:
            _absorb(group, groups, writer, ops, trace, refs, protected, removed, pos)
            groups[pos] = group
            writer[group.sink.arg.storage] = pos
        else:
            for s in _touched(op):
                writer.pop(s, None)
            out = _epilogue_output(op)
            if out is not None:
                writer[op.args[out[0]].storage] = pos
    counts = {"launches_removed": len(removed), "elementwise_kernels": 0, "epilogues": 0}
    for pos, group in groups.items():
        if group.producer is not None:
            ops[pos] = _with_epilogue(group, ops[group.producer])
            counts["epilogues"] += 1
        elif len(group.members) > 1:
            ops[pos] = _launch_of(group)
            counts["elementwise_kernels"] += 1
    trace.ops = [op for pos, op in enumerate(ops) if pos not in removed]
    return counts


def _touched(op: Launch | Zero) -> list[int]:
    if isinstance(op, Zero):
        return [op.storage]
    return [a.storage for a in tensor_args(op.args)]


def _epilogue_output(op: Any) -> tuple[int, int] | None:
    """(output position, elements) of a launch whose kernel takes a generated epilogue, else None."""
    protocol = getattr(op.kernel, "nbx_epilogue", None) if isinstance(op, Launch) else None
    return protocol.output(op.args, op.kwargs) if protocol is not None else None


def _absorb(group: Group, groups: dict[int, Group], writer: dict[int, int], ops: list[Any], trace: Trace,
            refs: dict[int, int], protected: set[int], removed: set[int], pos: int) -> None:
    """Pull into ``group`` every producer whose result only it reads: elementwise trees, and one
    launch that can run the group as its epilogue."""
    k = 0
    while k < len(group.loads):
        load = group.loads[k]
        s = load.arg.storage
        p = writer.get(s, -1)  # -1: no launch of the trace wrote it
        ok = (p >= 0 and p not in removed and trace.storages[s].kind == "temp" and s not in protected
              and refs.get(s, 0) == 2 and _dense(load))
        producer = groups.get(p) if ok else None
        if producer is not None and _can_merge(group, producer, load, ops, removed, p, pos):
            _merge(group, producer, s)
            del groups[p]
        elif ok and producer is None and _can_take_epilogue(group, ops[p], load, ops, removed, p, pos):
            group.producer = p
            for m in group.members:
                m.operands = [("acc", None) if kind == "load" and group.loads[v].arg.storage == s else (kind, v)
                              for kind, v in m.operands]
            group.loads, index = _renumber(group.loads, s)
            for m in group.members:
                m.operands = [("load", index[v]) if kind == "load" else (kind, v) for kind, v in m.operands]
        else:
            k += 1
            continue
        removed.add(p)
        writer.pop(s, None)
        k = 0


def _can_merge(group: Group, producer: Group, load: Load, ops: list[Any], removed: set[int], p: int,
               pos: int) -> bool:
    if producer.producer is not None and group.producer is not None:
        return False
    if group.producer is not None and not _strided_ok(ops[group.producer], producer.loads):
        return False
    return (producer.n == group.n and _dense(producer.sink) and load.arg.dtype is producer.sink.arg.dtype
            and len(group.members) + len(producer.members) <= MAX_MEMBERS
            and len(group.loads) + len(producer.loads) <= MAX_LOADS + 1
            and not _touched_between(ops, removed, p, pos, producer.storages()))


def _can_take_epilogue(group: Group, op: Launch, load: Load, ops: list[Any], removed: set[int], p: int,
                       pos: int) -> bool:
    out = _epilogue_output(op)
    if out is None or group.producer is not None or out[1] != group.n:
        return False
    if load.arg.dtype is not op.args[out[0]].dtype or any(m.compute == _FLOAT64 for m in group.members):
        return False  # the epilogue's scalars arrive as float32: float64 math stays unfused
    if not _strided_ok(op, [ld for ld in group.loads if ld.arg.storage != load.arg.storage]):
        return False
    return not _touched_between(ops, removed, p, pos, set(_touched(op)))


def _touched_between(ops: list[Any], removed: set[int], lo: int, hi: int, storages: set[int]) -> bool:
    return any(i not in removed and storages.intersection(_touched(ops[i])) for i in range(lo + 1, hi))


def _renumber(loads: list[Load], drop: int) -> tuple[list[Load], dict[int, int]]:
    """``loads`` without those of storage ``drop``, identical ones shared; old index -> new index."""
    keep: list[Load] = []
    index: dict[int, int] = {}
    for i, ld in enumerate(loads):
        if ld.arg.storage == drop:
            continue
        if ld in keep:
            index[i] = keep.index(ld)
        else:
            index[i] = len(keep)
            keep.append(ld)
    return keep, index


def _merge(consumer: Group, producer: Group, storage: int) -> None:
    """Put ``producer``'s members before ``consumer``'s, reading the intermediate from registers."""
    base_loads = len(consumer.loads)
    shift = len(producer.members)
    members = []
    for m in producer.members:
        ops = [("load", v + base_loads) if kind == "load" else (kind, v) for kind, v in m.operands]
        members.append(Member(m.fn, m.compute, m.out, ops, m.sc, m.nodes))
    value = ("member", shift - 1)
    for m in consumer.members:
        ops = []
        for kind, v in m.operands:
            if kind == "load" and consumer.loads[v].arg.storage == storage:
                ops.append(value)
            elif kind == "member":
                ops.append((kind, v + shift))
            else:
                ops.append((kind, v))
        members.append(Member(m.fn, m.compute, m.out, ops, m.sc, m.nodes))
    loads, index = _renumber(consumer.loads + producer.loads, storage)
    for m in members:
        m.operands = [("load", index[v]) if kind == "load" else (kind, v) for kind, v in m.operands]
    consumer.members = members
    consumer.loads = loads
    consumer.block = max(consumer.block, producer.block)
    consumer.int64 = consumer.int64 or producer.int64
    consumer.first = min(consumer.first, producer.first)
    consumer.sources = sorted(producer.sources + consumer.sources)
    if producer.producer is not None:
        consumer.producer = producer.producer


# -- code generation -----------------------------------------------------------------------------------


_TL_SPELLING = {"int1": "tl.int1", "uint8": "tl.uint8", "int8": "tl.int8", "int16": "tl.int16", "int32": "tl.int32",
                "int64": "tl.int64", "fp16": "tl.float16", "bf16": "tl.bfloat16", "fp32": "tl.float32",
                "fp64": "tl.float64", "fp8e4nv": "tl.float8e4nv", "fp8e5": "tl.float8e5"}


def _tl_name(dtype: Any) -> str:
    """How the generated source spells a Triton dtype."""
    return _TL_SPELLING[dtype.name]


def _fn_alias(fn: Any) -> str:
    """The name generated source gives an imported math function (unique per module and name)."""
    module, name = _origin(fn)
    return "f_" + hashlib.sha256(f"{module}:{name}".encode()).hexdigest()[:10] + name


def _math(group: Group, full: str) -> tuple[list[str], list[tuple[str, str]]]:
    """Lines computing every member (``v0`` …) from the loads ``r<k>``, the epilogue's ``acc`` and
    the scalars, and the scalars' (name, Triton type) in argument order. ``full`` spells the shape
    a scalar is broadcast to."""
    body, scalars = [], []
    for j, m in enumerate(group.members):
        args = []
        for a, (kind, v) in enumerate(m.operands):
            if kind == "load":
                src = f"r{v}"
            elif kind == "member":
                src = f"v{v}"
            elif kind == "acc":
                src = "acc"
            elif kind == "float":
                scalars.append((f"f{j}_{a}", "tl.float64"))
                src = f"tl.full({full}, f{j}_{a}, tl.float64)"
            else:
                scalars.append((f"i{j}_{a}", "tl.int64"))
                src = f"tl.full({full}, i{j}_{a}, tl.int64)"
            args.append(src if m.fn is None else f"cast_to({src}, {_tl_name(m.compute)})")
        if m.fn is None:
            body.append(f"    v{j} = cast_to({args[0]}, {_tl_name(m.out)})")
        else:
            body.append(f"    v{j} = cast_to({_fn_alias(m.fn)}({', '.join(args)}, sc{j}), {_tl_name(m.out)})")
    return body, scalars


def _offsets(load: Load, shape: str, strides: str) -> str:
    return f"offsets(idx, {shape}, {strides}, {len(load.shape)}, {_flat(load)})"


def _header(group: Group, what: str) -> list[str]:
    return [
        f'"""{what} generated by nbx_core.fusion."""',
        "import nbx_core.runtime.launch  # noqa: F401",
        "import triton",
        "import triton.language as tl",
        "from nbx_core.runtime.kernels.copy import cast_to",
        "from nbx_core.runtime.kernels.indexing import block_indices, offsets",
        *sorted({"from {} import {} as ".format(*_origin(m.fn)) + _fn_alias(m.fn)
                 for m in group.members if m.fn is not None}),
        "",
        "",
        "@triton.jit",
    ]


def _source(group: Group) -> str:
    """The fused kernel's source: it imports its members' math functions by name, so a source
    names one kernel wherever it is generated."""
    params = ["out_ptr", "n", "o_shape", "o_strides"]
    body = ["    idx, mask = block_indices(n, BLOCK, INT64)"]
    for k, ld in enumerate(group.loads):
        params += [f"p{k}", f"sh{k}", f"st{k}"]
        off = _offsets(ld, f"sh{k}", f"st{k}")
        body += ["    if EVEN:", f"        r{k} = tl.load(p{k} + {off})", "    else:",
                 f"        r{k} = tl.load(p{k} + {off}, mask=mask)"]
    math, scalars = _math(group, "[BLOCK]")
    body += math
    last = len(group.members) - 1
    off = _offsets(group.sink, "o_shape", "o_strides")
    body += ["    if EVEN:", f"        tl.store(out_ptr + {off}, v{last})", "    else:",
             f"        tl.store(out_ptr + {off}, v{last}, mask=mask)"]
    params += [f"{name}: {ty}" for name, ty in scalars]
    params += [f"sc{j}" for j in range(len(group.members))]
    params += ["BLOCK: tl.constexpr", "INT64: tl.constexpr", "EVEN: tl.constexpr"]
    head = _header(group, "A fused elementwise kernel") + [f"def fused({', '.join(params)}):"]
    return "\n".join(head + body) + "\n"


def _epilogue_source(group: Group) -> str:
    """An epilogue ``fused(acc, idx, mask, epi)`` for a kernel that computed ``acc`` (already in its
    output dtype) at the dense element indices ``idx``; ``epi`` holds :func:`_epilogue_args`."""
    body = []
    for k, ld in enumerate(group.loads):
        body.append(f"    r{k} = tl.load(p{k} + {_offsets(ld, f'sh{k}', f'st{k}')}, mask=mask)")
    math, _ = _math(group, "idx.shape")
    unpack, at = [], 0
    for name, value in _values(group):
        if type(value) is tuple:
            items = [f"epi[{at + i}]" for i in range(len(value))]
            unpack.append(f"    {name} = ({', '.join(items)}{',' if len(items) == 1 else ''})")
            at += len(value)
        else:
            unpack.append(f"    {name} = epi[{at}]")
            at += 1
    last = len(group.members) - 1
    store = [f"    tl.store(out_ptr + {_offsets(group.sink, 'o_shape', 'o_strides')}, v{last}, mask=mask)"]
    head = _header(group, "A fused epilogue") + ["def fused(acc, idx, mask, epi):"]
    return "\n".join(head + unpack + body + math + store) + "\n"


def _values(group: Group) -> list[tuple[str, Any]]:
    """The values a fused kernel or epilogue reads, by the names its source gives them: the output,
    each load, the members' scalars and parameters. An epilogue takes them spread over ``epi``
    (every tuple too, see :func:`_epilogue_args`); a fused kernel as its arguments."""
    values: list[tuple[str, Any]] = [("out_ptr", group.sink.arg), ("o_shape", tuple(group.sink.shape)),
                                     ("o_strides", tuple(group.sink.strides))]
    for k, ld in enumerate(group.loads):
        values += [(f"p{k}", ld.arg), (f"sh{k}", tuple(ld.shape)), (f"st{k}", tuple(ld.strides))]
    for j, m in enumerate(group.members):
        values += [(f"{kind[0]}{j}_{a}", v) for a, (kind, v) in enumerate(m.operands) if kind in ("float", "int")]
    values += [(f"sc{j}", tuple(m.sc)) for j, m in enumerate(group.members)]
    return values


def _epilogue_args(group: Group) -> tuple:
    """``epi``: the values of :func:`_values`, with every tuple (a shape, strides, an op's parameters)
    spread out. Triton 3.6 loses the entries it specialised (ints equal to 1) of a tuple nested in an
    argument that a loop keeps live, and the kernels taking epilogues reduce in loops."""
    args: list[Any] = []
    for _, value in _values(group):
        args.extend(value if type(value) is tuple else (value,))
    return tuple(args)


def _with_epilogue(group: Group, op: Launch) -> Launch:
    """``op`` running ``group`` as its epilogue; its own output's placeholders become the group's."""
    output = _epilogue_output(op)
    assert output is not None, "only a launch that takes an epilogue is given one"
    dropped = op.args[output[0]].storage
    args, kwargs = op.kernel.nbx_epilogue.attach(op.args, op.kwargs, kernel_for(_epilogue_source(group)),
                                                 _epilogue_args(group))
    args = [group.sink.arg if type(a) is TensorArg and a.storage == dropped else a for a in args]
    nodes = tuple(sorted({op.where, *(w for m in group.members for w in m.nodes)}))
    return Launch(op.kernel, op.grid, tuple(args), kwargs, nodes[-1], nodes)


def _args(group: Group) -> tuple[list[Any], dict[str, Any]]:
    """The fused kernel's arguments (its values, and the element count after the output) and its
    constexprs and options."""
    values = [value for _, value in _values(group)]
    args: list[Any] = [values[0], group.n, *values[1:]]
    kwargs = {"BLOCK": group.block, "INT64": group.int64, "EVEN": group.n % group.block == 0,
              "num_warps": group.warps}
    return args, kwargs


_kernels: dict[str, Any] = {}


def cache_dir() -> Path:
    """Where generated kernels are written: ``NBX_CACHE_DIR`` or ``~/.cache/nbx``, then ``fused/``."""
    root = os.environ.get("NBX_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "nbx")
    return Path(root) / "fused"


def kernel_for(source: str) -> Any:
    """The ``fused`` kernel of ``source``, written to the cache directory and imported once."""
    digest = hashlib.sha256(source.encode()).hexdigest()[:24]
    kernel = _kernels.get(digest)
    if kernel is None:
        folder = cache_dir()
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"fused_{digest}.py"
        if not path.exists() or path.read_text() != source:
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(source)
            os.replace(tmp, path)
        name = f"nbx_fused_{digest}"
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None, "a .py file always has a source loader"
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        kernel = _kernels[digest] = module.fused
    return kernel


def _launch_of(group: Group) -> Launch:
    args, kwargs = _args(group)
    grid = (-(-group.n // group.block),)
    nodes = tuple(sorted({w for m in group.members for w in m.nodes}))
    return Launch(kernel_for(_source(group)), grid, tuple(args), kwargs, nodes[-1] if nodes else -1, nodes)
