"""The generic elementwise launcher: broadcasting, strides, type promotion and the launch, once.

A plugin writes an op as its math, a ``@triton.jit`` function of the loaded operands and a tuple
of extra scalars, and calls :func:`pointwise`::

    @triton.jit
    def _silu(x, sc):
        return x / (1.0 + tl.exp(-x))

    def silu(self):
        return pointwise("aten::silu", _silu, self, float_op=True)

Operands are NBXTensors or Python numbers (up to four). Tensors broadcast together; numbers take
part in type promotion by torch's rules (they do not widen a tensor's dtype within its category)
and reach the math as values of the compute dtype. Half types and float8 compute in float32 and
round once at the store. A new result is laid out as its operands are (torch's rule, in
:func:`nbx_core.shape.result_strides`: channels-last in, channels-last out), and the kernel walks
the elements in memory order. ``sc`` carries op parameters (alpha, slopes, bounds); Triton types a
Python float parameter as float32, so an op that needs a float64-exact constant passes it as a
number operand instead.
"""


from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import triton
import triton.language as tl

from .. import dtypes as D
from ..errors import NbxTypeError, NbxValueError
from ..shape import (
    CHANNELS_LAST_ORDER,
    broadcast_shapes,
    broadcast_strides,
    coalesce_in_memory_order,
    contiguous_strides,
    is_contiguous,
    is_contiguous_in,
    numel,
    result_strides,
)
from ..tensor import NBXTensor, check_device, new_storage
from ..tensor.args import operand
from .kernels.copy import cast_to
from .kernels.indexing import Strided, block_indices, needs_int64, offsets
from .launch import block_size, cdiv, prepare
from .layouts import in_program
from .plans import PlanCache, geometry
from .tuning import Key, Tunable, frozen

MAX_OPERANDS = 4
_TL = {
    "bool": tl.int1, "uint8": tl.uint8, "int8": tl.int8, "int16": tl.int16, "int32": tl.int32,
    "int64": tl.int64, "float16": tl.float16, "bfloat16": tl.bfloat16, "float32": tl.float32,
    "float64": tl.float64, "float8_e4m3fn": tl.float8e4nv, "float8_e5m2": tl.float8e5,
}


def tl_dtype(dtype: D.DType) -> Any:
    """The Triton type of an NBX dtype (complex has none: kernels see complex as float32 pairs)."""
    try:
        return _TL[dtype.name]
    except KeyError:
        raise NbxTypeError(f"{dtype} has no Triton element type: view complex tensors as real first") from None


@triton.jit
def _operand(ptr, fval, ival, idx, mask, shape, strides, KIND: tl.constexpr, NDIM: tl.constexpr,
             CONTIG: tl.constexpr, COMPUTE: tl.constexpr, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    # KIND 1: a tensor; 2: a float scalar; 3: an integer or bool scalar.
    if KIND == 1:
        # EVEN: every program's block lies inside the tensor, so no lane is masked.
        if EVEN:
            v = tl.load(ptr + offsets(idx, shape, strides, NDIM, CONTIG))
        else:
            v = tl.load(ptr + offsets(idx, shape, strides, NDIM, CONTIG), mask=mask)
        v = cast_to(v, COMPUTE)
    elif KIND == 2:
        v = cast_to(tl.full([BLOCK], fval, tl.float64), COMPUTE)
    else:
        v = cast_to(tl.full([BLOCK], ival, tl.int64), COMPUTE)
    return v


@triton.jit
def _pointwise_kernel(
    out_ptr, n, shape, out_strides,
    p0, f0: tl.float64, i0: tl.int64, s0,
    p1, f1: tl.float64, i1: tl.int64, s1,
    p2, f2: tl.float64, i2: tl.int64, s2,
    p3, f3: tl.float64, i3: tl.int64, s3,
    sc,
    FN: tl.constexpr, ARITY: tl.constexpr, KINDS: tl.constexpr, COMPUTE: tl.constexpr,
    NDIM: tl.constexpr, CONTIG: tl.constexpr, BLOCK: tl.constexpr, INT64: tl.constexpr, EVEN: tl.constexpr,
):
    idx, mask = block_indices(n, BLOCK, INT64)
    x0 = _operand(p0, f0, i0, idx, mask, shape, s0, KINDS[0], NDIM, CONTIG, COMPUTE, BLOCK, EVEN)
    if ARITY == 1:
        y = FN(x0, sc)
    else:
        x1 = _operand(p1, f1, i1, idx, mask, shape, s1, KINDS[1], NDIM, CONTIG, COMPUTE, BLOCK, EVEN)
        if ARITY == 2:
            y = FN(x0, x1, sc)
        else:
            x2 = _operand(p2, f2, i2, idx, mask, shape, s2, KINDS[2], NDIM, CONTIG, COMPUTE, BLOCK, EVEN)
            if ARITY == 3:
                y = FN(x0, x1, x2, sc)
            else:
                x3 = _operand(p3, f3, i3, idx, mask, shape, s3, KINDS[3], NDIM, CONTIG, COMPUTE, BLOCK, EVEN)
                y = FN(x0, x1, x2, x3, sc)
    y = cast_to(y, out_ptr.dtype.element_ty)
    if EVEN:
        tl.store(out_ptr + offsets(idx, shape, out_strides, NDIM, CONTIG), y)
    else:
        tl.store(out_ptr + offsets(idx, shape, out_strides, NDIM, CONTIG), y, mask=mask)


def check_castable(op: str, result: D.DType, out: D.DType) -> None:
    """torch's rule for in-place and ``out=`` results: no lowering of the dtype's category."""
    if result.category > out.category:
        raise NbxTypeError(
            f"{op}: result type {result} can't be cast to the desired output type {out}: "
            "use the out-of-place op or cast the output first"
        )


class _Plan:
    """What a pointwise call computes from its operands' metadata, kept per geometry (host time):
    the result's shape, strides, dtype and device, and a prepared launch whose varying arguments are the
    output, the operands and ``sc`` (``sources`` says where each comes from)."""

    __slots__ = ("shape", "strides", "nbytes", "result", "device", "n", "sources", "run")

    def __init__(self, shape: tuple[int, ...], strides: tuple[int, ...], result: D.DType, device: Any, n: int,
                 sources: list[tuple[int, int]], run: Any) -> None:
        self.shape, self.strides, self.result, self.device, self.n = shape, strides, result, device, n
        self.nbytes = n * result.itemsize
        self.sources, self.run = sources, run


_plans: PlanCache[_Plan] = PlanCache()

POINTWISE = Tunable(
    "core", "pointwise", {"THREAD_BYTES": "pow2", "num_warps": "pow2"},
    key=lambda widest: Key({"itemsize": widest}), rule=lambda widest: {"THREAD_BYTES": 32, "num_warps": 4},
    interpreter=lambda widest: {"THREAD_BYTES": 32, "num_warps": 1}, tables=Path(__file__).with_name("configs"))
"""The generated kernel's launch, by the widest operand's itemsize: on a GPU a program is
``num_warps`` warps, each thread moving ``THREAD_BYTES`` of the widest operand (32: 16 bfloat16 or
8 float32, two 16-byte loads); the interpreter takes one block of the whole tensor (up to 2^16)."""


def pointwise(
    op: str,
    fn: Any,
    *operands: NBXTensor | bool | int | float,
    dtype: D.DType | None = None,
    compute: D.DType | None = None,
    out_dtype: D.DType | None = None,
    float_op: bool = False,
    sc: Sequence[int | float] = (),
    out: NBXTensor | None = None,
    config: Mapping[str, int] | None = None,
) -> NBXTensor:
    """Apply the ``@triton.jit`` math ``fn`` elementwise over broadcast ``operands``.

    ``dtype`` fixes the common dtype (default: torch's result_type of the operands; with
    ``float_op`` an integer or bool result becomes the default float, as for ``sqrt`` or true
    division). ``compute`` is the dtype the math sees (default: the common dtype, half types
    widened to float32). ``out_dtype`` is the stored dtype (default: the common dtype; comparisons
    pass bool). ``out`` writes in place into an existing tensor of the broadcast shape.

    Checks, promotion, broadcasting and dim coalescing depend only on the operands' metadata, so
    their outcome is kept per geometry and a repeated call only allocates and launches. ``config``
    replaces :data:`POINTWISE`'s lookup.
    """
    key = (op, fn, dtype, compute, out_dtype, float_op, tuple(map(geometry, operands)),
           None if out is None else geometry(out), in_program(), frozen(config))
    plan = _plans.get(key, lambda: _make_plan(op, fn, operands, dtype, compute, out_dtype, float_op, out, config))
    if out is None:
        out = NBXTensor(new_storage(plan.nbytes, plan.device), plan.shape, plan.strides, 0, plan.result)
    if plan.n == 0:
        return out
    values: list[Any] = [out]
    for kind, i in plan.sources:
        if kind == 1:
            values.append(operands[i])
        elif kind == 2:
            values.append(float(operands[i]))
        elif kind == 3:
            values.append(int(operands[i]))
        else:
            values.append(out)
    values.append(tuple(sc))
    plan.run(*values)
    return out


def _kept_in_programs(shape: tuple[int, ...], strides: tuple[int, ...], tensors: list[NBXTensor]) -> bool:
    """Whether a Program keeps torch's layout for a result (:mod:`nbx_core.runtime.layouts`): when it
    is row-major, or channels-last like an operand of the result's whole shape (a convolution's
    output), not only like a broadcast one (an attention bias of one sample, say)."""
    if is_contiguous(shape, strides):
        return True
    order = CHANNELS_LAST_ORDER.get(len(shape))
    return (order is not None and is_contiguous_in(shape, strides, order)
            and any(t.shape == shape and is_contiguous_in(shape, t.stride(), order) for t in tensors))


def _make_plan(op: str, fn: Any, operands: tuple, dtype: D.DType | None, compute: D.DType | None,
               out_dtype: D.DType | None, float_op: bool, out: NBXTensor | None,
               config: Mapping[str, int] | None) -> _Plan:
    if not 1 <= len(operands) <= MAX_OPERANDS:
        raise NbxValueError(f"{op}: pointwise takes 1 to {MAX_OPERANDS} operands, got {len(operands)}")
    tensors = [t for t in operands if isinstance(t, NBXTensor)]
    for i, v in enumerate(operands):
        operand(op, v, f"operand {i}")
    if not tensors and out is None:
        raise NbxTypeError(f"{op}: needs at least one tensor operand")
    device = check_device(op, *tensors, *([out] if out is not None else []))
    common = dtype if dtype is not None else D.result_type(*operands)
    if float_op and not dtype and common.category < 2:
        common = D.default_float
    if common.is_complex:
        raise NbxTypeError(f"{op}: complex inputs are not supported by this op in NBX")
    comp = compute if compute is not None else D.compute_dtype(common)
    result = out_dtype if out_dtype is not None else common
    shape = broadcast_shapes(op, *(t.shape for t in tensors))
    if out is not None:
        if out.shape != shape:
            if broadcast_shapes(op, out.shape, shape) != out.shape:
                raise NbxValueError(f"{op}: output of shape {out.shape} cannot hold the result of shape {shape}")
            shape = out.shape
        check_castable(op, result, out.dtype)
        out_strides = out.stride()
    else:
        # Laid out as the operands are (torch's TensorIterator rule), so a channels-last or
        # transposed input gives a result of the same layout, walked in memory order.
        numbers = len(tensors) < len(operands)
        out_strides = result_strides(shape, [(t.shape, t.stride()) for t in tensors], numbers)
        if in_program() and not _kept_in_programs(shape, out_strides, tensors):
            out_strides = contiguous_strides(shape)
    n = numel(shape)
    strides = [out_strides]
    for t in tensors:
        strides.append(broadcast_strides(t.shape, t.stride(), shape))
    cshape, cstrides = coalesce_in_memory_order(shape, *strides)
    # Argument layout: out, n, shape, out strides, then (pointer, float, int, strides) per operand
    # slot, then sc. A slot without a tensor points at the output, which it never reads.
    args: list[Any] = [None, n, cshape, cstrides[0]]
    varying = [0]
    sources: list[tuple[int, int]] = []  # (0 out | 1 tensor | 2 float | 3 int, operand index)
    kinds: list[int] = []
    k = 1
    for slot in range(MAX_OPERANDS):
        v = operands[slot] if slot < len(operands) else None
        base = 4 + 4 * slot
        kind = 0 if v is None else 1 if isinstance(v, NBXTensor) else 2 if isinstance(v, float) else 3
        kinds.append(kind)
        if kind == 1:
            args += (None, 0.0, 0, cstrides[k])
            k += 1
        else:
            args += (None, 0.0, 0, cstrides[0])
        varying.append(base)
        sources.append((1 if kind == 1 else 0, slot))
        if kind in (2, 3):
            varying.append(base + kind - 1)
            sources.append((kind, slot))
    varying.append(len(args))
    args.append(())
    widest = max(result.itemsize, *(t.dtype.itemsize for t in tensors))
    cfg = POINTWISE.choose(config, widest)
    block = block_size(n, gpu=cfg["num_warps"] * 32 * max(cfg["THREAD_BYTES"] // widest, 1))
    # int64 offsets when any operand's reach (or the output's) can pass 2**31
    reach: list[Strided] = [_Reach(shape, out_strides), *tensors]
    run = prepare(
        _pointwise_kernel, (cdiv(n, block),), args, varying, FN=fn,
        ARITY=len(operands), KINDS=tuple(kinds), COMPUTE=tl_dtype(comp), NDIM=len(cshape),
        CONTIG=all(st == (1,) for st in cstrides), BLOCK=block, INT64=needs_int64(n, *reach),
        EVEN=n % block == 0, num_warps=cfg["num_warps"],
    )
    return _Plan(shape, out_strides, result, device, n, sources, run)


class _Reach:
    """Shape and strides of an output not allocated yet, for needs_int64."""

    def __init__(self, shape: tuple[int, ...], strides: tuple[int, ...]) -> None:
        self.shape = shape
        self._strides = strides

    def stride(self) -> tuple[int, ...]:
        return self._strides
