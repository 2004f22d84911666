"""float32 matmul precision, mirroring ``torch.set_float32_matmul_precision``.

``"highest"`` (the default, as in torch) multiplies float32 in full IEEE float32. ``"high"`` and
``"medium"`` allow TensorFloat-32 tensor-core products, which keep 10 mantissa bits: faster, and
no longer equal to torch's default results. Other dtypes are unaffected.
"""

from __future__ import annotations

from nbx_core.errors import NbxValueError

_TRITON_PRECISION = {"highest": "ieee", "high": "tf32", "medium": "tf32"}
_current = "highest"


def set_float32_matmul_precision(precision: str) -> None:
    """Choose how float32 products are computed: "highest" (IEEE, default), "high" or "medium" (TF32)."""
    global _current
    if precision not in _TRITON_PRECISION:
        raise NbxValueError(
            f"set_float32_matmul_precision: precision={precision!r} is not one of "
            f"{', '.join(map(repr, _TRITON_PRECISION))}"
        )
    _current = precision


def get_float32_matmul_precision() -> str:
    """The current float32 matmul precision ("highest", "high" or "medium")."""
    return _current


def triton_input_precision() -> str:
    """The ``tl.dot`` ``input_precision`` that the current setting means for float32 operands."""
    return _TRITON_PRECISION[_current]
