"""The conformance kit: run an op on NBX and the same ATen op on torch (CPU), and compare.

Plugin authors test with it::

    from nbx_core.testing import check_op, make

    def test_gelu():
        x = make((4, 5), "float32")
        check_op("aten::gelu", x, approximate="tanh")

``check_op`` converts torch tensors in the arguments to NBXTensors with the same shape, strides
and offset (so transposed, stepped and stride-0 inputs stay so), runs the registered NBX kernel
and ``torch.ops.aten.<op>.<overload>`` on the originals, and compares every output with the
tolerance of its dtype. On the ``aot`` backend kernels compile and do not run, so comparisons
are skipped there: that pass proves the kernels the tests reach compile for the target GPU.

Torch is needed only here (``pip install nbx-core[test]``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, cast

import numpy as np
import torch

from .. import dtypes as D
from ..backend import current as _backend
from ..backend import kernel_device_type
from ..memory.host import HostStorage
from ..tensor import NBXTensor

__all__ = [
    "TOLERANCES", "assert_close", "check_op", "check_raises", "from_torch", "layouts", "make", "numeric",
    "on_other_device",
    "registered_by", "run_op", "to_torch", "torch_dtype", "untested_names",
]

# (rtol, atol) per dtype: half types round once at the store, so one ulp of the output.
TOLERANCES: dict[str, tuple[float, float]] = {
    "float16": (1e-3, 1e-3), "bfloat16": (1.6e-2, 1e-2), "float32": (1.3e-6, 1e-5),
    "float64": (1e-7, 1e-7), "complex64": (1.3e-6, 1e-5),
    "float8_e4m3fn": (1.25e-1, 1e-1), "float8_e5m2": (2.5e-1, 1e-1),
}


def numeric() -> bool:
    """Whether kernels produce values on this backend (``cpu``, ``cuda``), unlike ``aot``."""
    return _backend() != "aot"


def torch_dtype(dtype: Any) -> torch.dtype:
    return getattr(torch, D.as_dtype(dtype).name)


def to_torch(value: Any) -> Any:
    """NBXTensors (nested in lists or tuples too) to torch CPU tensors; other values unchanged."""
    if isinstance(value, NBXTensor):
        arr = value.numpy().copy(order="C")
        dt = value.dtype
        if dt.np.kind == "V" or dt in (D.bfloat16, D.float8_e4m3fn, D.float8_e5m2):
            raw = torch.from_numpy(arr.view(np.uint8 if dt.itemsize == 1 else np.int16).copy())
            return raw.view(torch_dtype(dt))
        return torch.from_numpy(arr.copy())
    if isinstance(value, tuple | list):
        return type(value)(to_torch(v) for v in value)
    if isinstance(value, D.DType):
        return torch_dtype(value)
    return value


def from_torch(value: Any, device: Any = None) -> Any:
    """torch tensors to NBXTensors with identical shape, strides and offset over a copy of the storage.

    Placed on the backend's kernel device unless ``device`` is given.
    """
    if isinstance(value, torch.Tensor):
        t = value.detach()
        if t.is_conj():
            t = t.resolve_conj()
        dt = D.from_name(str(t.dtype))
        nbytes = t.untyped_storage().nbytes()
        raw = torch.empty(nbytes, dtype=torch.uint8)
        raw.untyped_storage().copy_(t.untyped_storage())
        storage = HostStorage(raw.numpy().copy())
        out = NBXTensor(storage, tuple(t.shape), tuple(t.stride()), int(t.storage_offset()), dt)
        want = device if device is not None else kernel_device_type()
        if str(want).startswith("cuda"):
            out = _to_device_same_layout(out, want)
        return out
    if isinstance(value, tuple | list):
        return type(value)(from_torch(v, device) for v in value)
    if isinstance(value, torch.dtype):
        return D.from_name(str(value))
    return value


def _to_device_same_layout(t: NBXTensor, device: Any) -> NBXTensor:
    from ..device import as_device
    from ..memory import allocate
    from ..memory.cuda import CudaStorage

    storage = cast(CudaStorage, allocate(t.storage.nbytes, as_device(device)))  # a cuda device's
    storage.copy_from_host(0, t.storage.ptr, t.storage.nbytes)
    return NBXTensor(storage, t.shape, t.stride(), t.storage_offset(), t.dtype)


class _StandInDeviceStorage:
    """Claims to live on cuda:0 and holds nothing: for device checks, which run before any launch."""

    def __init__(self, nbytes: int) -> None:
        from ..device import Device

        self.device = Device("cuda", 0)
        self.ptr = 0
        self.nbytes = nbytes


def on_other_device(t: NBXTensor) -> NBXTensor:
    """``t`` on a device the backend's kernels do not use, to test mixed-device errors anywhere.

    On the cuda backend that is a real host copy; elsewhere a stand-in cuda:0 tensor whose memory
    must never be read (an op has to refuse it before launching).
    """
    if kernel_device_type() == "cuda":
        return t.to("cpu")
    return NBXTensor(_StandInDeviceStorage(t.storage.nbytes), t.shape, t.stride(), t.storage_offset(), t.dtype)


def make(shape: Iterable[int], dtype: Any = "float32", *, low: float | None = None, high: float | None = None,
         seed: int = 0, nonzero: bool = False) -> torch.Tensor:
    """A random torch tensor (never all zeros): normal floats, integers in [low, high), random bools."""
    g = torch.Generator().manual_seed(seed)
    shape = tuple(shape)
    dt = torch_dtype(dtype)
    if dt == torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    if dt.is_floating_point or dt.is_complex:
        base = torch.randn(shape, generator=g, dtype=torch.float64)
        if low is not None or high is not None:
            lo, hi = (-3.0 if low is None else low), (3.0 if high is None else high)
            base = lo + (hi - lo) * torch.rand(shape, generator=g, dtype=torch.float64)
        if nonzero:
            base = torch.where(base.abs() < 0.1, torch.full_like(base, 0.5), base)
        if dt.is_complex:
            imag = torch.randn(shape, generator=g, dtype=torch.float64)
            return torch.complex(base.float(), imag.float())
        return base.to(dt)
    info = torch.iinfo(dt)
    lo = int(low) if low is not None else max(info.min, -50)
    hi = int(high) if high is not None else min(info.max, 50)
    out = torch.randint(lo, hi, shape, generator=g, dtype=torch.int64)
    if nonzero:
        out = torch.where(out == 0, torch.ones_like(out), out)
    return out.to(dt)


def layouts(t: torch.Tensor) -> Iterator[tuple[str, torch.Tensor]]:
    """The same values in several layouts: contiguous, transposed, stepped slice, stride-0 expand."""
    yield "contiguous", t
    if t.ndim >= 2:
        yield "transposed", t.transpose(0, 1).contiguous().transpose(0, 1)
    if t.ndim >= 1 and t.shape[-1] > 0:
        wide = torch.empty((*t.shape[:-1], t.shape[-1] * 2), dtype=t.dtype)
        wide[..., ::2] = t
        yield "stepped", wide[..., ::2]
    if t.ndim >= 1 and t.shape[0] > 0:
        yield "expanded", t[:1].expand(t.shape)


def run_op(name: str, *args: Any, **kwargs: Any) -> Any:
    """Call ``name`` through the registry with torch tensors converted to NBXTensors; errors found
    on the device (see :mod:`nbx_core.runtime.checks`) are raised here on every backend."""
    from ..registry import get_registry
    from ..runtime.checks import verify

    out = get_registry().call(name, *from_torch(list(args)), **{k: from_torch(v) for k, v in kwargs.items()})
    verify()
    return out


def _aten(name: str) -> Callable[..., Any]:
    ns, _, rest = name.partition("::")
    op, _, overload = rest.partition(".")
    packet = getattr(getattr(torch.ops, ns), op)
    return getattr(packet, overload) if overload else packet


def assert_close(actual: Any, expected: Any, *, rtol: float | None = None, atol: float | None = None,
                 equal_nan: bool = True, check_dtype: bool = True, check_stride: bool = False,
                 what: str = "output") -> None:
    """Compare an NBX result with torch's: structure, shapes, dtypes and values within tolerance."""
    if not numeric():
        return
    if isinstance(expected, tuple | list):
        if not isinstance(actual, tuple | list) or len(actual) != len(expected):
            raise AssertionError(f"{what}: expected a sequence of {len(expected)} results, got {actual!r}")
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            assert_close(a, e, rtol=rtol, atol=atol, equal_nan=equal_nan, check_dtype=check_dtype,
                         check_stride=check_stride, what=f"{what}[{i}]")
        return
    if isinstance(expected, torch.Tensor):
        if not isinstance(actual, NBXTensor):
            raise AssertionError(f"{what}: expected a tensor, got {type(actual).__name__}")
        if tuple(actual.shape) != tuple(expected.shape):
            raise AssertionError(f"{what}: shape {actual.shape} != torch's {tuple(expected.shape)}")
        if check_dtype and actual.dtype.name != str(expected.dtype).removeprefix("torch."):
            raise AssertionError(f"{what}: dtype {actual.dtype} != torch's {expected.dtype}")
        if check_stride and expected.numel() > 1 and tuple(actual.stride()) != tuple(expected.stride()):
            raise AssertionError(f"{what}: strides {actual.stride()} != torch's {tuple(expected.stride())}")
        got = to_torch(actual)
        r, a = TOLERANCES.get(str(expected.dtype).removeprefix("torch."), (0.0, 0.0))
        if expected.dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
            # torch compares float8 only bitwise; compare the values in float32 instead.
            got, expected = got.float(), expected.float()
        torch.testing.assert_close(
            got.to(expected.dtype) if not check_dtype else got, expected,
            rtol=r if rtol is None else rtol, atol=a if atol is None else atol,
            equal_nan=equal_nan, msg=lambda m: f"{what}: {m}",
        )
        return
    if isinstance(expected, float) and isinstance(actual, float):
        if not (np.isnan(expected) and np.isnan(actual)) and abs(actual - expected) > (atol or 1e-6) + (
                rtol or 1e-6) * abs(expected):
            raise AssertionError(f"{what}: {actual} != torch's {expected}")
        return
    if actual != expected:
        raise AssertionError(f"{what}: {actual!r} != torch's {expected!r}")


def check_op(name: str, *args: Any, torch_fn: Callable[..., Any] | None = None, rtol: float | None = None,
             atol: float | None = None, check_dtype: bool = True, check_stride: bool = False,
             equal_nan: bool = True, **kwargs: Any) -> Any:
    """Run ``name`` on NBX and on torch with the same arguments; assert the results agree.

    ``torch_fn`` replaces ``torch.ops.aten.<op>`` as the reference when given. Returns the NBX result.
    """
    ref = (torch_fn or _aten(name))(*args, **kwargs)
    got = run_op(name, *args, **kwargs)
    assert_close(got, ref, rtol=rtol, atol=atol, check_dtype=check_dtype, check_stride=check_stride,
                 equal_nan=equal_nan, what=name)
    return got


def check_raises(name: str, *args: Any, match: str | None = None, **kwargs: Any) -> Exception:
    """Assert that NBX raises a clear NbxError where torch raises: before any kernel runs, or for
    data only the device sees (indices out of range) when the op's checks are read."""
    from ..errors import NbxError

    try:
        _aten(name)(*args, **kwargs)
    except Exception:
        pass
    else:
        raise AssertionError(f"{name}: torch accepted the arguments, so NBX should too")
    try:
        run_op(name, *args, **kwargs)
    except NbxError as e:
        if match is not None and not re.search(match, str(e)):
            raise AssertionError(f"{name}: error {str(e)!r} does not match {match!r}") from e
        return e
    raise AssertionError(f"{name}: NBX accepted arguments torch refuses")


def registered_by(plugin: str) -> list[str]:
    """The names the process-wide registry has from ``plugin``, sorted. Each is looked up, which
    imports its module and resolves its target: a target that is missing or not callable raises."""
    from ..registry import get_registry

    registry = get_registry()
    names = sorted(e.name for e in registry.entries() if e.plugin == plugin)
    for name in names:
        registry.lookup(name)
    return names


def untested_names(names: Iterable[str], test_dir: str | Path) -> list[str]:
    """The op names no test file under ``test_dir`` mentions as a quoted string ("aten::gelu")."""
    text = "\n".join(p.read_text() for p in Path(test_dir).rglob("test_*.py"))
    return sorted(n for n in names if f'"{n}"' not in text and f"'{n}'" not in text)
