"""Logical ops (any real dtype → bool, nonzero is true) and bitwise ops (integer and bool only),
including shifts with torch's out-of-range rules: a left shift by a negative amount or by at least
the bit width gives 0, a right shift by such an amount gives the sign fill."""

from collections.abc import Callable
from typing import Any

import triton
import triton.language as tl

from nbx_core import dtypes as D
from nbx_core.errors import NbxTypeError
from nbx_core.runtime.pointwise import pointwise
from nbx_core.tensor import NBXTensor
from nbx_core.tensor.args import BOOL, INTEGRAL, REAL, check_dtype, operand, tensor_arg


@triton.jit
def _logical_and(x, y, sc):
    return (x != 0) & (y != 0)


@triton.jit
def _logical_or(x, y, sc):
    return (x != 0) | (y != 0)


@triton.jit
def _logical_xor(x, y, sc):
    return (x != 0) != (y != 0)


@triton.jit
def _logical_not(x, sc):
    return x == 0


@triton.jit
def _bitwise_and(x, y, sc):
    return x & y


@triton.jit
def _bitwise_or(x, y, sc):
    return x | y


@triton.jit
def _bitwise_xor(x, y, sc):
    return x ^ y


@triton.jit
def _bitwise_not(x, sc):
    return ~x


@triton.jit
def _left_shift(x, y, sc):
    bits: tl.constexpr = x.dtype.primitive_bitwidth
    out_of_range = (y < 0) | (y >= bits)
    return tl.where(out_of_range, 0, x << tl.where(out_of_range, 0, y))


@triton.jit
def _right_shift(x, y, sc):
    bits: tl.constexpr = x.dtype.primitive_bitwidth
    out_of_range = (y < 0) | (y >= bits)
    return x >> tl.where(out_of_range, bits - 1, y)


def _logical(name: str, fn: Any) -> Callable[..., NBXTensor]:
    op = f"aten::{name}"

    def wrapper(self: NBXTensor, other: NBXTensor, *, out: NBXTensor | None = None) -> NBXTensor:
        tensor_arg(op, self, dtypes=REAL)
        tensor_arg(op, other, "other", dtypes=REAL)
        return pointwise(op, fn, self, other, out_dtype=D.bool_, out=out)

    wrapper.__name__ = wrapper.__qualname__ = name
    wrapper.__doc__ = f"``{op}``: a bool tensor; any nonzero value (NaN included) is true."
    return wrapper


logical_and = _logical("logical_and", _logical_and)
logical_or = _logical("logical_or", _logical_or)
logical_xor = _logical("logical_xor", _logical_xor)


def logical_not(self: NBXTensor, *, out: NBXTensor | None = None) -> NBXTensor:
    """``aten::logical_not``: a bool tensor, true where ``self`` is zero."""
    op = "aten::logical_not"
    tensor_arg(op, self, dtypes=REAL)
    return pointwise(op, _logical_not, self, out_dtype=D.bool_, out=out)


def _bitwise(name: str, fn: Any, bool_result: bool = True) -> Callable[..., NBXTensor]:
    op = f"aten::{name}"

    def wrapper(self: Any, other: Any, *, out: NBXTensor | None = None) -> NBXTensor:
        x, y = operand(op, self, "self"), operand(op, other, "other")
        if not isinstance(x, NBXTensor) and not isinstance(y, NBXTensor):
            tensor_arg(op, x)
        check_dtype(op, x, "self", BOOL | INTEGRAL)
        check_dtype(op, y, "other", BOOL | INTEGRAL)
        if not bool_result and D.result_type(x, y) is D.bool_:
            # As torch: a bool operand promotes with an integer one, but two bools have no shift.
            raise NbxTypeError(
                f"{op}: both operands are bool, and {op} takes integer values: cast one to an integer dtype"
            )
        return pointwise(op, fn, x, y, out=out)

    wrapper.__name__ = wrapper.__qualname__ = name
    kinds = "integer and bool dtypes" if bool_result else "integer dtypes (a bool operand beside an integer one)"
    wrapper.__doc__ = f"``{op}`` (Tensor, Scalar, Scalar_Tensor): {kinds} only."
    return wrapper


bitwise_and = _bitwise("bitwise_and", _bitwise_and)
bitwise_or = _bitwise("bitwise_or", _bitwise_or)
bitwise_xor = _bitwise("bitwise_xor", _bitwise_xor)
bitwise_left_shift = _bitwise("bitwise_left_shift", _left_shift, bool_result=False)
bitwise_right_shift = _bitwise("bitwise_right_shift", _right_shift, bool_result=False)


def bitwise_not(self: NBXTensor, *, out: NBXTensor | None = None) -> NBXTensor:
    """``aten::bitwise_not``: ``~self`` for integers, logical not for bool."""
    op = "aten::bitwise_not"
    tensor_arg(op, self, dtypes=BOOL | INTEGRAL)
    return pointwise(op, _logical_not if self.dtype is D.bool_ else _bitwise_not, self, out=out)
