"""``aten::_fft_r2c``, ``_fft_c2r``, ``_fft_c2c`` and the ``fft_rfft/irfft/fft/ifft`` wrappers.

A multi-dimensional transform is a sequence of one-dimensional ones, each over the rows of a 2-D
view with the transformed dim last (a copy only where the other dims do not collapse to one
stride). ``normalization`` is torch's: 0 none, 1 by 1/sqrt(n), 2 by 1/n, n the product of the
transformed lengths (applied per dim as the matching per-dim factor).

dtypes: float32 in (complex64 out) and complex64 in. NBX has no complex128, so float64 input is
refused rather than silently computed in single precision; float16/bfloat16 are refused as torch
CPU refuses them. The ``fft_*`` wrappers promote integer and bool input to float32, as torch does.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from nbx_core import dtypes as D
from nbx_core.errors import NbxTypeError, NbxValueError, ShapeError
from nbx_core.ops import views
from nbx_core.ops.copy import _to_copy, clone, contiguous, copy_
from nbx_core.shape import wrap_dim, wrap_dims
from nbx_core.tensor import NBXTensor, empty_tensor
from nbx_core.tensor.args import BOOL, COMPLEX, INTEGRAL, check_dtype, tensor_arg

from .fft import fft_rows, irfft_rows

_FORWARD_NORM = {None: 0, "backward": 0, "ortho": 1, "forward": 2}
_INVERSE_NORM = {None: 2, "backward": 2, "ortho": 1, "forward": 0}


def fft_operand(
    op: str, x: NBXTensor, *, complex_only: bool = False, promote: bool = False, arg: str = "self"
) -> NBXTensor:
    """``x`` as float32 or complex64 (integers promoted to float32 with ``promote``), or a clear error
    for what NBX cannot transform."""
    dt = tensor_arg(op, x, arg).dtype
    if dt == D.float64:
        raise NbxTypeError(
            f"{op}: float64 input would give complex128, but NBX supports complex64 only: cast the input to float32"
        )
    if dt in (D.float16, D.bfloat16):
        raise NbxTypeError(
            f"{op}: {dt} FFTs are not supported (torch's CPU FFT refuses them too): cast the input to float32"
        )
    if promote and dt in BOOL | INTEGRAL:
        return _to_copy(x, dtype=D.float32)
    return check_dtype(op, x, arg, COMPLEX if complex_only else COMPLEX | {D.float32})


def scale_for(normalization: int, n: int) -> float:
    """The per-dim factor of torch's normalization mode (0 none, 1 1/sqrt(n), 2 1/n)."""
    return (1.0, 1.0 / math.sqrt(n), 1.0 / n)[normalization]


def _check_dims(op: str, x: NBXTensor, dim: Sequence[int], normalization: int) -> tuple[int, ...]:
    if normalization not in (0, 1, 2):
        raise NbxValueError(f"{op}: normalization must be 0 (none), 1 (1/sqrt(n)) or 2 (1/n), got {normalization}")
    dims = wrap_dims(op, list(dim), x.ndim)
    if len(set(dims)) != len(dims):
        raise NbxValueError(f"{op}: dim {list(dim)} repeats a dimension: list each at most once")
    for d in dims:
        if x.shape[d] < 1:
            raise NbxValueError(f"{op}: dim {d} has length 0; an FFT needs at least 1 point (pass n >= 1)")
    return dims


def rows_of(x: NBXTensor) -> NBXTensor:
    """``x`` as a 2-D (batch, last dim) view when its leading dims collapse to one stride, else a copy."""
    shape, strides = x.shape, x.stride()
    lead = [(s, st) for s, st in zip(shape[:-1], strides[:-1], strict=True) if s != 1]
    ok = all(lead[i][1] == lead[i + 1][1] * lead[i + 1][0] for i in range(len(lead) - 1))
    if not ok:
        x = contiguous(x)
        strides = x.stride()
        lead = [(s, st) for s, st in zip(shape[:-1], strides[:-1], strict=True) if s != 1]
    b = math.prod(shape[:-1])
    row_stride = lead[-1][1] if lead else shape[-1] * strides[-1]
    return views.as_strided(x, (b, shape[-1]), (row_stride, strides[-1]), x.storage_offset())


def along(x: NBXTensor, d: int, n_out: int, dtype: D.DType, run) -> NBXTensor:
    """Apply ``run(rows_in, rows_out)`` to dim ``d`` of ``x``; the result has ``n_out`` there."""
    moved = views.movedim(x, d, -1)
    out_shape = (*moved.shape[:-1], n_out)
    out = empty_tensor(out_shape, dtype, x.device)
    if out.numel() > 0:
        run(rows_of(moved), views.view(out, math.prod(out_shape[:-1]), n_out))
    return views.movedim(out, -1, d)


def _c2c_dims(x: NBXTensor, dims: Sequence[int], normalization: int, sign: int) -> NBXTensor:
    for d in dims:
        n = x.shape[d]

        def run(a: NBXTensor, b: NBXTensor, n: int = n) -> None:
            fft_rows(a, b, n=n, n_out=n, sign=sign, scale=scale_for(normalization, n))

        x = along(x, d, n, D.complex64, run)
    return x


def _fft_c2c(self: NBXTensor, dim: Sequence[int], normalization: int, forward: bool) -> NBXTensor:
    """``aten::_fft_c2c``: complex-to-complex FFT over ``dim`` (forward: exp(-2*pi*i*jk/n))."""
    x = fft_operand("_fft_c2c", self, complex_only=True)
    dims = _check_dims("_fft_c2c", x, dim, normalization)
    if not dims:
        return clone(x)
    return _c2c_dims(x, dims, normalization, -1 if forward else 1)


def _r2c_dim(x: NBXTensor, d: int, normalization: int, onesided: bool, sign: int) -> NBXTensor:
    n = x.shape[d]
    n_out = n // 2 + 1 if onesided else n

    def run(a: NBXTensor, b: NBXTensor) -> None:
        fft_rows(a, b, n=n, n_out=n_out, sign=sign, scale=scale_for(normalization, n))

    return along(x, d, n_out, D.complex64, run)


def _fft_r2c(self: NBXTensor, dim: Sequence[int], normalization: int, onesided: bool) -> NBXTensor:
    """``aten::_fft_r2c``: real-to-complex forward FFT; the last of ``dim`` is halved when ``onesided``."""
    if isinstance(self, NBXTensor) and self.dtype.is_complex:
        raise NbxTypeError("_fft_r2c: expects a real (float32) input, got complex64: use _fft_c2c")
    x = fft_operand("_fft_r2c", self)
    dims = _check_dims("_fft_r2c", x, dim, normalization)
    if not dims:
        raise NbxValueError("_fft_r2c: dim must name at least one dimension")
    y = _r2c_dim(x, dims[-1], normalization, onesided, -1)
    return _c2c_dims(y, dims[:-1], normalization, -1)


def _c2r_dim(x: NBXTensor, d: int, normalization: int, n: int) -> NBXTensor:
    def run(a: NBXTensor, b: NBXTensor) -> None:
        irfft_rows(a, b, n=n, scale=scale_for(normalization, n))

    return along(x, d, n, D.float32, run)


def _fft_c2r(self: NBXTensor, dim: Sequence[int], normalization: int, last_dim_size: int) -> NBXTensor:
    """``aten::_fft_c2r``: inverse FFT of a Hermitian half spectrum to ``last_dim_size`` real samples."""
    x = fft_operand("_fft_c2r", self, complex_only=True)
    dims = _check_dims("_fft_c2r", x, dim, normalization)
    if not dims:
        raise NbxValueError("_fft_c2r: dim must name at least one dimension")
    n = int(last_dim_size)
    if n < 1:
        raise NbxValueError(f"_fft_c2r: last_dim_size must be >= 1, got {n}")
    if x.shape[dims[-1]] != n // 2 + 1:
        raise ShapeError(
            f"_fft_c2r: dim {dims[-1]} must have last_dim_size // 2 + 1 = {n // 2 + 1} bins, "
            f"got {x.shape[dims[-1]]}: trim or pad the half spectrum first"
        )
    y = _c2c_dims(x, dims[:-1], normalization, 1)
    return _c2r_dim(y, dims[-1], normalization, n)


def resize(x: NBXTensor, d: int, n: int) -> NBXTensor:
    """``x`` truncated or zero-padded to length ``n`` along dim ``d``."""
    size = x.shape[d]
    if size >= n:
        return views.narrow(x, d, 0, n)
    shape = list(x.shape)
    shape[d] = n
    out = empty_tensor(shape, x.dtype, x.device, zero=True)
    copy_(views.narrow(out, d, 0, size), x)
    return out


def to_complex(x: NBXTensor) -> NBXTensor:
    """A complex64 copy of real ``x`` (zero imaginary part); complex ``x`` unchanged."""
    if x.dtype.is_complex:
        return x
    out = empty_tensor(x.shape, D.complex64, x.device, zero=True)
    copy_(views.select(views.view_as_real(out), -1, 0), x)
    return out


def _args(
    op: str, self: NBXTensor, n: int | None, dim: int, norm: str | None, table: dict
) -> tuple[NBXTensor, int, int | None, int]:
    x = fft_operand(op, self, promote=True)
    if x.ndim == 0:
        raise ShapeError(f"{op}: expects a tensor with at least one dimension, got a 0-dim tensor")
    d = wrap_dim(op, dim, x.ndim)
    if n is not None and n < 1:
        raise NbxValueError(f"{op}: Invalid number of data points ({n}) specified: n must be >= 1")
    if norm not in table:
        raise NbxValueError(f"{op}: Invalid normalization mode {norm!r}: use 'backward', 'ortho' or 'forward'")
    return x, d, n, table[norm]


def fft_fft(self: NBXTensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> NBXTensor:
    """``aten::fft_fft``: 1-D forward FFT; real input gives the full complex spectrum."""
    x, d, n, mode = _args("fft_fft", self, n, dim, norm, _FORWARD_NORM)
    x = resize(x, d, n if n is not None else x.shape[d])
    if x.dtype.is_complex:
        return _fft_c2c(x, [d], mode, True)
    return _fft_r2c(x, [d], mode, False)


def fft_ifft(self: NBXTensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> NBXTensor:
    """``aten::fft_ifft``: 1-D inverse FFT (exp(+2*pi*i*jk/n)); real input is taken as complex."""
    x, d, n, mode = _args("fft_ifft", self, n, dim, norm, _INVERSE_NORM)
    x = resize(x, d, n if n is not None else x.shape[d])
    _check_dims("fft_ifft", x, [d], mode)
    if x.dtype.is_complex:
        return _fft_c2c(x, [d], mode, False)
    return _r2c_dim(x, d, mode, False, 1)


def fft_rfft(self: NBXTensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> NBXTensor:
    """``aten::fft_rfft``: 1-D FFT of a real signal, the n // 2 + 1 non-negative frequencies."""
    if isinstance(self, NBXTensor) and self.dtype.is_complex:
        raise NbxTypeError("fft_rfft: expects a real input tensor, got complex64: use fft_fft")
    x, d, n, mode = _args("fft_rfft", self, n, dim, norm, _FORWARD_NORM)
    x = resize(x, d, n if n is not None else x.shape[d])
    return _fft_r2c(x, [d], mode, True)


def fft_irfft(self: NBXTensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> NBXTensor:
    """``aten::fft_irfft``: real inverse of ``fft_rfft``; ``n`` defaults to 2 * (bins - 1)."""
    x, d, n, mode = _args("fft_irfft", self, n, dim, norm, _INVERSE_NORM)
    if n is None:
        n = 2 * (x.shape[d] - 1)
        if n < 1:
            raise NbxValueError(
                f"fft_irfft: Invalid number of data points ({n}) specified: dim has one bin, so pass n explicitly"
            )
    x = resize(to_complex(x), d, n // 2 + 1)
    return _fft_c2r(x, [d], mode, n)
