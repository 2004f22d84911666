"""NBX dtypes and torch's type-promotion rules.

``str(dtype)`` is the plain name ("bfloat16"): Triton reads it to type a pointer argument. Host
storage uses numpy dtypes, with ml_dtypes for bfloat16 and the float8 formats.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

from .errors import NbxTypeError

_CATEGORY = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}


class DType:
    """A tensor element type. Instances are singletons; compare with ``is`` or ``==``."""

    __slots__ = ("name", "itemsize", "kind", "np", "triton")

    def __init__(self, name: str, kind: str, np_dtype: Any, triton: str) -> None:
        self.name = name
        self.kind = kind
        self.np = np.dtype(np_dtype)
        self.itemsize = self.np.itemsize
        self.triton = triton

    @property
    def is_floating_point(self) -> bool:
        return self.kind == "f"

    @property
    def is_complex(self) -> bool:
        return self.kind == "c"

    @property
    def is_signed(self) -> bool:
        return self.kind in "ifc"

    @property
    def is_integral(self) -> bool:
        """True for integer types and bool (torch's ``is_integral(include_bool=True)``)."""
        return self.kind in "biu"

    @property
    def category(self) -> int:
        """0 bool, 1 integer, 2 floating, 3 complex: the order promotion moves along."""
        return _CATEGORY[self.kind]

    @property
    def is_float8(self) -> bool:
        return self.name.startswith("float8")

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"nbx_core.{self.name}"

    def __reduce__(self) -> str:
        return self.name


bool_ = DType("bool", "b", np.bool_, "i1")
uint8 = DType("uint8", "u", np.uint8, "u8")
int8 = DType("int8", "i", np.int8, "i8")
int16 = DType("int16", "i", np.int16, "i16")
int32 = DType("int32", "i", np.int32, "i32")
int64 = DType("int64", "i", np.int64, "i64")
float16 = DType("float16", "f", np.float16, "fp16")
bfloat16 = DType("bfloat16", "f", ml_dtypes.bfloat16, "bf16")
float32 = DType("float32", "f", np.float32, "fp32")
float64 = DType("float64", "f", np.float64, "fp64")
complex64 = DType("complex64", "c", np.complex64, "c64")
float8_e4m3fn = DType("float8_e4m3fn", "f", ml_dtypes.float8_e4m3fn, "fp8e4nv")
float8_e5m2 = DType("float8_e5m2", "f", ml_dtypes.float8_e5m2, "fp8e5")

ALL: tuple[DType, ...] = (
    bool_,
    uint8,
    int8,
    int16,
    int32,
    int64,
    float16,
    bfloat16,
    float32,
    float64,
    complex64,
    float8_e4m3fn,
    float8_e5m2,
)
FLOATING: tuple[DType, ...] = (float16, bfloat16, float32, float64)
INTEGRAL: tuple[DType, ...] = (uint8, int8, int16, int32, int64)

_BY_NAME: dict[str, DType] = {d.name: d for d in ALL}
_BY_NAME.update(
    {
        "bool_": bool_,
        "half": float16,
        "float": float32,
        "double": float64,
        "long": int64,
        "int": int32,
        "short": int16,
        "cfloat": complex64,
    }
)
_BY_NP: dict[np.dtype, DType] = {d.np: d for d in ALL}
NAMES: frozenset[str] = frozenset(_BY_NAME)

default_float: DType = float32


def from_name(name: str) -> DType:
    """The dtype called ``name``; accepts torch spellings such as ``"torch.float32"``."""
    key = name.removeprefix("torch.")
    try:
        return _BY_NAME[key]
    except KeyError:
        known = ", ".join(d.name for d in ALL)
        raise NbxTypeError(f"unknown dtype {name!r}: NBX supports {known}") from None


def from_numpy(np_dtype: Any) -> DType:
    """The NBX dtype of a numpy dtype (ml_dtypes' bfloat16 and float8 included)."""
    key = np.dtype(np_dtype)
    try:
        return _BY_NP[key]
    except KeyError:
        raise NbxTypeError(
            f"numpy dtype {key} has no NBX equivalent: convert the array to one of "
            f"{', '.join(d.name for d in ALL)} first"
        ) from None


def as_dtype(value: Any) -> DType:
    """Coerce a DType, a name, a numpy dtype or a torch dtype to a DType."""
    if isinstance(value, DType):
        return value
    if isinstance(value, str):
        return from_name(value)
    if type(value).__module__ == "torch":
        return from_name(str(value))
    if value is bool:
        return bool_
    if value is int:
        return int64
    if value is float:
        return default_float
    if value is complex:
        return complex64
    return from_numpy(value)


def _promote_pair(a: DType, b: DType) -> DType:
    if a is b:
        return a
    if a.is_float8 or b.is_float8:
        raise NbxTypeError(
            f"type promotion between {a} and {b} is not defined (torch refuses float8 promotion): "
            "cast one operand explicitly"
        )
    ca, cb = a.category, b.category
    if ca != cb:
        hi, lo = (a, b) if ca > cb else (b, a)
        if hi.is_complex and lo is float64:
            raise NbxTypeError(f"promoting {a} with {b} needs complex128, which NBX does not support")
        return hi
    if ca == 1:
        if a.kind == "u" or b.kind == "u":
            other = b if a.kind == "u" else a
            if other.kind == "u":
                return uint8
            return other if other.itemsize > 1 else int16
        return a if a.itemsize > b.itemsize else b
    if ca == 2:
        if {a, b} == {float16, bfloat16}:
            return float32
        return a if a.itemsize > b.itemsize else b
    return complex64


def promote_types(*dtypes: DType) -> DType:
    """torch.promote_types folded over ``dtypes``."""
    out = dtypes[0]
    for d in dtypes[1:]:
        out = _promote_pair(out, d)
    return out


def scalar_dtype(value: Any) -> DType:
    """The dtype torch gives a Python scalar standing alone (bool, int64, default float, complex64)."""
    if isinstance(value, bool | np.bool_):
        return bool_
    if isinstance(value, int | np.integer):
        return int64
    if isinstance(value, float | np.floating):
        return default_float
    if isinstance(value, complex | np.complexfloating):
        return complex64
    raise NbxTypeError(f"{type(value).__name__} is not a scalar NBX can type: pass a bool, int, float or complex")


def _combine_categories(higher: DType | None, lower: DType | None) -> DType | None:
    # torch's combine_categories: a lower-priority group counts only if it raises the category.
    if higher is None:
        return lower
    if lower is None:
        return higher
    if higher.is_complex:
        return higher
    if lower.is_complex:
        if higher.is_floating_point:
            return _promote_pair(higher, complex64)
        return lower
    if higher.is_floating_point:
        return higher
    if higher is bool_ or lower.is_floating_point:
        return _promote_pair(higher, lower)
    return higher


def result_type(*operands: Any) -> DType:
    """torch.result_type over tensors and Python scalars.

    Dimensioned tensors decide first; 0-dim tensors, then Python scalars, count only when they
    raise the category (bool < integer < floating < complex). Scalars are typed bool, int64, the
    default float or complex64.
    """
    groups: list[DType | None] = [None, None, None]
    for op in operands:
        dt = getattr(op, "dtype", None)
        if isinstance(dt, DType):
            slot = 1 if op.ndim == 0 else 0
        else:
            dt, slot = scalar_dtype(op), 2
        cur = groups[slot]
        groups[slot] = dt if cur is None else _promote_pair(cur, dt)
    out = _combine_categories(groups[0], _combine_categories(groups[1], groups[2]))
    if out is None:
        raise NbxTypeError("result_type needs at least one operand")
    return out


def to_float(dtype: DType) -> DType:
    """The floating type an op that must return a float gives ``dtype`` (int → default float)."""
    return dtype if dtype.kind in "fc" else default_float


def compute_dtype(dtype: DType) -> DType:
    """The type kernels compute ``dtype`` in: half types and float8 widen to float32."""
    if dtype in (float16, bfloat16, float8_e4m3fn, float8_e5m2):
        return float32
    return dtype
