"""Random ops: rand, randn, rand_like, randn_like, uniform, normal, bernoulli, dropout, native_dropout.

Reproducibility: every op draws from one module-level counter-based stream, Triton's Philox
(``tl.rand`` / ``tl.randn``, 10 rounds). Element ``i`` of a draw of ``n`` values reads counter
``offset + i`` under key ``seed``; the draw then advances ``offset`` by ``n``, so successive calls
differ and the same seed replays the same sequence of calls exactly. The stream starts at seed
0 and offset 0 when the module is imported; ``manual_seed(s)`` resets it to seed ``s``, offset 0.
Values depend only on (seed, offset, element index): the same on every backend and GPU, and
independent of block sizes. The numbers differ from torch's generator (tests check statistics).

A ``generator=`` argument is refused: NBX has one stream per process.
"""

from typing import Any

import triton
import triton.language as tl

from nbx_core import dtypes as D
from nbx_core.backend import default_device
from nbx_core.device import as_device
from nbx_core.errors import NbxTypeError, NbxValueError
from nbx_core.ops.copy import clone
from nbx_core.ops.creation import ones_like
from nbx_core.runtime.kernels.copy import cast_to
from nbx_core.runtime.kernels.indexing import block_indices, needs_int64
from nbx_core.runtime.launch import block_size, cdiv, launch
from nbx_core.runtime.pointwise import pointwise
from nbx_core.shape import as_shape, broadcast_shapes, check_shape
from nbx_core.tensor import NBXTensor, empty_tensor
from nbx_core.tensor.args import (
    FLOAT8,
    FLOATING,
    REAL,
    check_broadcasts_to,
    check_dtype,
    dtype_arg,
    int_arg,
    number_arg,
    probability,
    tensor_arg,
)

_SEED_LIMIT = 2**63
# The largest float32 below 1: keeps uniform draws in [0, 1) (Triton's conversion can round up to 1).
_BELOW_ONE = tl.constexpr(0.99999994)


class PhiloxStream:
    """The process's random stream: a Philox key (the seed) and the next unused counter."""

    __slots__ = ("seed", "offset")

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed
        self.offset = 0

    def take(self, n: int) -> tuple[int, int]:
        """The (seed, first counter) for a draw of ``n`` values; advances the stream past them."""
        start = self.offset
        self.offset += n
        return self.seed, start


_stream = PhiloxStream()


def manual_seed(seed: int) -> None:
    """Restart the stream at key ``seed`` (0 <= seed < 2**63) and counter 0."""
    int_arg("manual_seed", seed, "seed")
    if not 0 <= seed < _SEED_LIMIT:
        raise NbxValueError(f"manual_seed: seed must be in [0, 2**63), got {seed}")
    _stream.seed = seed
    _stream.offset = 0


def initial_seed() -> int:
    """The seed the stream was last started with."""
    return _stream.seed


@triton.jit
def _random_kernel(out_ptr, n, seed: tl.int64, offset: tl.int64, a: tl.float64, b: tl.float64,
                   NORMAL: tl.constexpr, BLOCK: tl.constexpr, INT64: tl.constexpr):
    idx, mask = block_indices(n, BLOCK, INT64)
    counter = offset + idx.to(tl.int64)
    if NORMAL:
        v = tl.randn(seed, counter)
    else:
        v = tl.minimum(tl.rand(seed, counter), _BELOW_ONE)
    tl.store(out_ptr + idx, cast_to(a + b * v, out_ptr.dtype.element_ty), mask=mask)


def _fill(out: NBXTensor, normal: bool, a: float = 0.0, b: float = 1.0) -> NBXTensor:
    """Fill the contiguous ``out`` with ``a + b * U[0, 1)`` or ``a + b * N(0, 1)``."""
    n = out.numel()
    if n == 0:
        return out
    seed, offset = _stream.take(n)
    block = block_size(n, gpu=1024)
    launch(_random_kernel, (cdiv(n, block),), out, n, seed, offset, float(a), float(b), NORMAL=normal,
           BLOCK=block, INT64=needs_int64(n + offset, out), num_warps=4)
    return out


def _float_dtype(op: str, dtype: Any, default: D.DType) -> D.DType:
    return dtype_arg(op, dtype if dtype is not None else default, FLOATING)


def _no_generator(op: str, generator: Any) -> None:
    """NBX's random ops draw from the plugin's own Philox stream, not a torch Generator."""
    if generator is not None:
        raise NbxTypeError(
            f"{op}: NBX does not take a generator argument; seed the stream with "
            "nbx_elementwise.random.manual_seed(seed) instead"
        )


def _new(op: str, size: Any, dtype: Any, device: Any) -> NBXTensor:
    shape = check_shape(op, as_shape(op, size))
    dev = as_device(device) if device is not None else default_device()
    return empty_tensor(shape, _float_dtype(op, dtype, D.default_float), dev)


def _like(op: str, self: NBXTensor, dtype: Any, device: Any) -> NBXTensor:
    tensor_arg(op, self)
    dt = _float_dtype(op, dtype, self.dtype)
    return empty_tensor(self.shape, dt, as_device(device) if device is not None else self.device)


def rand(*size: Any, generator: Any = None, dtype: Any = None, layout: Any = None, device: Any = None,
         pin_memory: Any = None) -> NBXTensor:
    """``aten::rand``: uniform on [0, 1) of shape ``size``."""
    _no_generator("aten::rand", generator)
    return _fill(_new("aten::rand", size, dtype, device), normal=False)


def randn(*size: Any, generator: Any = None, dtype: Any = None, layout: Any = None, device: Any = None,
          pin_memory: Any = None) -> NBXTensor:
    """``aten::randn``: standard normal of shape ``size``."""
    _no_generator("aten::randn", generator)
    return _fill(_new("aten::randn", size, dtype, device), normal=True)


def rand_like(self: NBXTensor, *, dtype: Any = None, layout: Any = None, device: Any = None,
              pin_memory: Any = None, memory_format: Any = None) -> NBXTensor:
    """``aten::rand_like``: uniform on [0, 1) with self's shape (and dtype unless given)."""
    return _fill(_like("aten::rand_like", self, dtype, device), normal=False)


def randn_like(self: NBXTensor, *, dtype: Any = None, layout: Any = None, device: Any = None,
               pin_memory: Any = None, memory_format: Any = None) -> NBXTensor:
    """``aten::randn_like``: standard normal with self's shape (and dtype unless given)."""
    return _fill(_like("aten::randn_like", self, dtype, device), normal=True)


def uniform(self: NBXTensor, from_: float = 0.0, to: float = 1.0, *, generator: Any = None,
            **kwargs: Any) -> NBXTensor:
    """``aten::uniform``: a new tensor like self, uniform on [from, to)."""
    op = "aten::uniform"
    _no_generator(op, generator)
    lo = kwargs.pop("from", from_)
    if kwargs:
        raise NbxTypeError(f"{op}: unexpected arguments {sorted(kwargs)}")
    tensor_arg(op, self, dtypes=FLOATING | FLOAT8)
    if lo > to:
        raise NbxValueError(f"{op}: expects a [from, to) range, but found from={lo} > to={to}")
    return _fill(empty_tensor(self.shape, self.dtype, self.device), False, lo, to - lo)


@triton.jit
def _affine(z, mean, std, sc):
    return mean + std * z


def normal(mean: Any, std: Any = 1.0, size: Any = None, *, generator: Any = None, dtype: Any = None,
           layout: Any = None, device: Any = None, pin_memory: Any = None) -> NBXTensor:
    """``aten::normal`` (Tensor_float, float_Tensor, Tensor_Tensor, float_float): ``mean + std * N(0, 1)``.

    The output takes the tensor argument's shape (both, broadcast) and dtype (mean's when both are
    tensors); float_float needs ``size``. A negative float std is refused; negative entries of a
    std tensor are not checked (that needs the data before launch).
    """
    op = "aten::normal"
    _no_generator(op, generator)
    for arg, v in (("mean", mean), ("std", std)):
        if isinstance(v, NBXTensor):
            check_dtype(op, v, arg, FLOATING | FLOAT8)
        else:
            number_arg(op, v, arg)
    if not isinstance(std, NBXTensor) and std < 0:
        raise NbxValueError(f"{op}: expects std >= 0.0, but found std {std}")
    tensors = [t for t in (mean, std) if isinstance(t, NBXTensor)]
    if not tensors:
        if size is None:
            raise NbxTypeError(f"{op}: with float mean and std, pass 'size' (the float_float overload)")
        return _fill(_new(op, size, dtype, device), True, float(mean), float(std))
    if size is not None:
        raise NbxTypeError(f"{op}: 'size' is only taken when mean and std are both floats")
    shape = broadcast_shapes(op, *(t.shape for t in tensors))
    z = _fill(empty_tensor(shape, D.float32, tensors[0].device), normal=True)
    out_dtype = mean.dtype if isinstance(mean, NBXTensor) else std.dtype
    return pointwise(op, _affine, z, mean, std, dtype=out_dtype)


@triton.jit
def _below(u, p, sc):
    return u < p


def bernoulli(self: NBXTensor, p: Any = None, *, generator: Any = None) -> NBXTensor:
    """``aten::bernoulli`` (default, p float, p Tensor): 1 with probability p (self's values when p
    is None), else 0, in self's dtype and shape."""
    op = "aten::bernoulli"
    _no_generator(op, generator)
    tensor_arg(op, self)
    if p is None:
        check_dtype(op, self, "self", FLOATING | FLOAT8)
        prob: Any = self
    elif isinstance(p, NBXTensor):
        check_dtype(op, p, "p", FLOATING | FLOAT8)
        check_broadcasts_to(op, p, "p", self.shape, "self")
        prob = p
    else:
        prob = probability(op, p)
    check_dtype(op, self, "self", REAL)
    u = _fill(empty_tensor(self.shape, D.float32, self.device), normal=False)
    wide = isinstance(prob, NBXTensor) and prob.dtype is D.float64
    return pointwise(op, _below, u, prob, dtype=D.float64 if wide else D.float32, out_dtype=self.dtype)


@triton.jit
def _apply_mask(x, keep, scale, sc):
    # x * (mask * scale), as torch: a dropped NaN stays NaN.
    return x * (keep * scale)


@triton.jit
def _dropout(x, u, keep_p, scale, sc):
    return x * (tl.where(u < keep_p, 1.0, 0.0) * scale)


def _scale(p: float) -> float:
    return 0.0 if p == 1.0 else 1.0 / (1.0 - p)


def dropout(input: NBXTensor, p: float, train: bool) -> NBXTensor:  # noqa: A002
    """``aten::dropout``: zero each element with probability p and scale the rest by 1/(1-p) when
    ``train``; otherwise (or with p 0 or an empty input) ``input`` itself, as ATen returns it."""
    op = "aten::dropout"
    tensor_arg(op, input, "input", dtypes=FLOATING | FLOAT8)
    p = probability(op, p)
    if not train or p == 0.0 or input.numel() == 0:
        return input
    u = _fill(empty_tensor(input.shape, D.float32, input.device), normal=False)
    return pointwise(op, _dropout, input, u, 1.0 - p, _scale(p), dtype=input.dtype)


def native_dropout(input: NBXTensor, p: float, train: bool | None) -> tuple[NBXTensor, NBXTensor]:  # noqa: A002
    """``aten::native_dropout``: ``(output, mask)`` with a bool keep-mask; when not training a copy
    of input and an all-true mask."""
    op = "aten::native_dropout"
    tensor_arg(op, input, "input", dtypes=FLOATING | FLOAT8)
    p = probability(op, p)
    if input.numel() == 0:
        return input, empty_tensor(input.shape, D.bool_, input.device)
    if train is False:
        return clone(input), ones_like(input, dtype=D.bool_)
    u = _fill(empty_tensor(input.shape, D.float32, input.device), normal=False)
    mask = pointwise(op, _below, u, 1.0 - p, dtype=D.float32, out_dtype=D.bool_)
    return pointwise(op, _apply_mask, input, mask, _scale(p), dtype=input.dtype), mask
