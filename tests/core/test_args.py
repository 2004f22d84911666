"""nbx_core.tensor.args: the argument checks every op wrapper shares, and their messages."""

import pytest

import nbx_core as nbx
from nbx_core import dtypes as D
from nbx_core.backend import kernel_device_type
from nbx_core.errors import DeviceError, NbxTypeError, NbxValueError, ShapeError
from nbx_core.tensor import args as A
from nbx_core.testing import on_other_device

X = nbx.tensor([[1.5, -2.0, 3.0], [4.0, 0.5, -6.0]])


def test_describe_names_whole_categories_and_single_dtypes():
    assert A.describe(A.FLOATING) == "floating (float16, bfloat16, float32, float64)"
    assert A.describe(A.FLOATING | A.FLOAT8) == "floating"
    assert A.describe(A.REAL) == "bool, integer or floating"
    assert A.describe(A.REAL - A.FLOAT8) == "bool, integer or floating (float16, bfloat16, float32, float64)"
    assert A.describe({D.float32, D.float64}) == "float32 or float64"
    assert A.describe(A.INDEX) == "int32 or int64"
    assert A.describe(A.COMPLEX) == "complex64"


def test_tensor_arg_names_op_argument_type_and_fix():
    assert A.tensor_arg("aten::mm", X, "mat2") is X
    with pytest.raises(NbxTypeError, match=r"^aten::mm: mat2 must be a tensor, got list: pass an NBXTensor"):
        A.tensor_arg("aten::mm", [[1.0]], "mat2")


def test_tensor_arg_checks_dtype_and_rank_when_asked():
    with pytest.raises(
        NbxTypeError,
        match=r"aten::gelu: self has dtype int64, expected floating \(float16, "
        r"bfloat16, float32, float64\): cast it with \.to\(float32\) first",
    ):
        A.tensor_arg("aten::gelu", X.to(D.int64), dtypes=A.FLOATING)
    with pytest.raises(
        ShapeError,
        match=r"aten::mv: vec must be 1-D \(a vector\), got a 2-D tensor of shape "
        r"\[2, 3\]",
    ):
        A.tensor_arg("aten::mv", X, "vec", ndim=1)
    with pytest.raises(ShapeError, match=r"batch_norm: input must have at least 3 dims, got shape \[2, 3\]"):
        A.tensor_arg("batch_norm", X, "input", min_ndim=3)


def test_the_suggested_cast_is_one_the_op_takes():
    with pytest.raises(
        NbxTypeError,
        match=r"index has dtype float32, expected int32 or int64: cast it with "
        r"\.to\(int64\)",
    ):
        A.check_dtype("aten::gather", X, "index", A.INDEX)
    with pytest.raises(NbxTypeError, match="cast it with .to.complex64."):
        A.check_dtype("aten::istft", X, "self", A.COMPLEX)
    with pytest.raises(NbxTypeError, match="use a float input"):
        A.check_dtype("aten::cdist", X.to(D.int32), "x1", {D.float32}, fix="use a float input")


def test_a_python_number_is_checked_by_its_scalar_dtype():
    assert A.check_dtype("aten::bitwise_and", 3, "other", A.INTEGRAL | A.BOOL) == 3
    with pytest.raises(
        NbxTypeError,
        match=r"aten::bitwise_and: other is the float 1\.5, expected bool or integer "
        "values: pass one of those",
    ):
        A.check_dtype("aten::bitwise_and", 1.5, "other", A.INTEGRAL | A.BOOL)


def test_optional_tensor():
    assert A.optional_tensor("aten::linear", None, "bias") is None
    assert A.optional_tensor("aten::linear", X, "bias", dtypes=A.FLOATING) is X
    with pytest.raises(NbxTypeError, match="bias must be a tensor or None, got int"):
        A.optional_tensor("aten::linear", 3, "bias")


def test_dtype_arg():
    assert A.dtype_arg("aten::sum", None) is None
    assert A.dtype_arg("aten::sum", "float64", A.REAL) is D.float64
    with pytest.raises(NbxTypeError, match=r"aten::sum: dtype=complex64 is not supported, expected bool, integer"):
        A.dtype_arg("aten::sum", D.complex64, A.REAL)


def test_same_dtype_names_every_argument():
    assert A.same_dtype("op", ("a", X), ("b", X)) is D.float32
    with pytest.raises(
        NbxTypeError,
        match=r"sdpa: key has dtype float64 but query has float32: query, key and "
        r"value must have the same dtype, cast them to one dtype",
    ):
        A.same_dtype("sdpa", ("query", X), ("key", X.to(D.float64)), ("value", X))
    many = [(f"params[{i}]", X) for i in range(5)] + [("params[5]", X.to(D.float16))]
    with pytest.raises(NbxTypeError, match=r"params\[5\] has dtype float16 but params\[0\] has float32: they must"):
        A.same_dtype("lstm", *many)


def test_ranks():
    assert A.check_ndim("op", X, "self", (2, 3)) is X
    with pytest.raises(ShapeError, match=r"op: self must be 3-D or 4-D, got a 2-D tensor"):
        A.check_ndim("op", X, "self", (4, 3))
    with pytest.raises(ShapeError, match=r"self must be a matrix \(2-D\), got a 1-D"):
        A.check_ndim("aten::mm", X[0], "self", 2, "a matrix (2-D)")
    with pytest.raises(ShapeError, match=r"query must have at least 3 dims \(\.\.\., L, E\), got shape \[2, 3\]"):
        A.check_min_ndim("sdpa", X, "query", 3, "(..., L, E)")


def test_devices():
    x = X.to(kernel_device_type())  # on_other_device moves a tensor off the device kernels use
    assert A.check_device("op", x, 2.0, None, x) == x.device
    with pytest.raises(DeviceError, match="op: expected all tensors on one device"):
        A.check_device("op", x, on_other_device(x))


def test_broadcasting():
    assert A.broadcast_shapes("op", (2, 1), (3,)) == (2, 3)
    A.check_broadcasts_to("op", X[0], "p", (4, 2, 3))
    with pytest.raises(ShapeError, match=r"op: p of shape \[2, 3\] does not broadcast to self's shape \[3, 3\]"):
        A.check_broadcasts_to("op", X, "p", (3, 3), "self")
    with pytest.raises(ShapeError, match="does not broadcast"):
        A.check_broadcasts_to("op", X, "p", (3,))


def test_out_arg():
    assert A.out_arg("op", None, (2, 3), D.float32) is None
    assert A.out_arg("op", X, (2, 3), D.float32) is X
    with pytest.raises(
        NbxTypeError,
        match=r"out is a float32 tensor of shape \[2, 3\], but the result is float64 "
        r"of shape \[2, 3\]",
    ):
        A.out_arg("op", X, (2, 3), D.float64)
    with pytest.raises(
        ShapeError,
        match=r"out is a float32 tensor of shape \[2, 3\], but the result is float32 of "
        r"shape \[3\]",
    ):
        A.out_arg("op", X, (3,), D.float32)


def test_operands_and_their_dtypes():
    assert A.operand("op", 2, "other") == 2 and A.operand("op", X, "other") is X
    with pytest.raises(NbxTypeError, match="op: other is complex; NBX's op takes real numbers only"):
        A.operand("op", 1j, "other")
    with pytest.raises(NbxTypeError, match="other must be a tensor or a number, got str"):
        A.operand("op", "2", "other")
    assert A.dtype_of(True) is D.bool_ and A.dtype_of(2) is D.int64 and A.dtype_of(2.0) is D.float32
    assert A.dtype_of(X) is D.float32


def test_ints_and_numbers():
    assert A.int_arg("op", 3, "groups") == 3
    with pytest.raises(NbxTypeError, match="op: groups must be an int, got bool"):
        A.int_arg("op", True, "groups")
    assert A.int_list("op", 2, 3, "stride") == (2, 2, 2)
    assert A.int_list("op", [1, 2], 2, "stride") == (1, 2)
    assert A.int_list("op", [], 2, "stride", default=(5, 5)) == (5, 5)
    with pytest.raises(NbxValueError, match=r"stride must be a single int or a list of 2 ints, got \[1, 2, 3\]"):
        A.int_list("op", [1, 2, 3], 2, "stride")
    with pytest.raises(NbxTypeError, match="stride must hold ints"):
        A.int_list("op", [1.0, 2], 2, "stride")
    with pytest.raises(NbxValueError, match=r"stride must be positive, got \[1, 0\]"):
        A.positive("op", (1, 0), "stride")
    with pytest.raises(NbxValueError, match=r"padding must be non-negative, got \[-1\]"):
        A.non_negative("op", (-1,), "padding")
    assert A.number_arg("op", 0.5, "alpha") == 0.5
    with pytest.raises(NbxTypeError, match="alpha must be a number, got NoneType"):
        A.number_arg("op", None, "alpha")
    with pytest.raises(NbxTypeError, match="alpha must be a number, got bool"):
        A.number_arg("op", True, "alpha")
    assert A.number_arg("op", True, "alpha", allow_bool=True) is True
    assert A.probability("op", 1) == 1.0
    with pytest.raises(NbxValueError, match=r"p must be in the range \[0, 1\], got 1.5"):
        A.probability("op", 1.5)
