"""The one seam every kernel launch goes through.

``launch(kernel, grid, *args, **meta)`` replaces ``kernel[grid](*args, **meta)``. NBXTensor
arguments become what the backend's launcher reads; the backend decides what a launch means:

- ``cpu``: the kernel runs under Triton's interpreter on host memory, one launch at a time
  (:mod:`nbx_core.runtime.interpreter`).
- ``cuda``: the first launch of a signature compiles through Triton; later launches of the same
  signature skip Triton's per-call binding and call the compiled kernel directly.
- ``aot``: the kernel is compiled for ``NBX_AOT_TARGET`` (default sm_90) and not run, through a
  stand-in Triton driver that reports that target, so no GPU is needed.

On cuda and aot, a variant a bundled program needs comes from its graph's bundle when it holds it
(:mod:`nbx_core.runtime.prebuilt`); ``nbx compile`` collects, on aot, the variants it stores.

Importing this module chooses the backend and configures Triton before any kernel is defined, so a
kernel module must import it before its ``@triton.jit`` definitions run. Launches may come from
several threads at once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

from .. import backend as _backend
from ..errors import BackendError, DeviceError, NbxTypeError
from ..memory import events as _events
from ..tensor import NBXTensor
from .traits import TRAITS

BACKEND = TRAITS.name

import triton  # noqa: E402  (Triton must see the backend's settings when first imported)

from . import prebuilt as _prebuilt  # noqa: E402

Grid = tuple[int, ...] | Callable[[dict[str, Any]], tuple[int, ...]]


class _InterpArg:
    """What Triton's interpreter reads of a tensor argument (the torch storage protocol)."""

    __slots__ = ("_storage", "_offset", "_shape", "_strides", "dtype")

    def __init__(self, storage: Any, offset: int, shape: tuple, strides: tuple, dtype: Any) -> None:
        self._storage = storage
        self._offset = offset
        self._shape = shape
        self._strides = strides
        self.dtype = dtype

    def data_ptr(self) -> int:
        return self._storage.ptr + self._offset * self.dtype.itemsize

    def untyped_storage(self) -> Any:
        return self._storage

    def new_empty(self, *args: Any, **kwargs: Any) -> _InterpArg:
        return _InterpArg(self._storage, 0, (0,), (1,), self.dtype)

    def set_(self, storage: Any, offset: int, size: tuple, stride: tuple) -> _InterpArg:
        self._storage, self._offset, self._shape, self._strides = storage, offset, tuple(size), tuple(stride)
        return self

    def storage_offset(self) -> int:
        return self._offset

    def size(self) -> tuple:
        return self._shape

    def stride(self) -> tuple:
        return self._strides


def _wrong_device(t: NBXTensor, want: str) -> DeviceError:
    return DeviceError(
        f"a kernel on the {BACKEND} backend got a tensor on {t.device}: move it with .to('{want}') "
        f"or choose the backend with NBX_BACKEND"
    )


if BACKEND == "aot":
    from triton.backends.compiler import GPUTarget
    from triton.backends.driver import DriverBase

    class _AotDriver(DriverBase):
        """Reports the aot target so Triton compiles for it; it can launch nothing."""

        def __init__(self) -> None:
            cc, warp = _backend.aot_target()
            self.target = GPUTarget("cuda", cc, warp)

        @classmethod
        def is_active(cls) -> bool:
            return False

        def get_current_target(self) -> Any:
            return self.target

        def get_current_device(self) -> int:
            return 0

        def get_current_stream(self, device: Any = None) -> int:
            return 0

        def get_active_torch_device(self) -> Any:
            raise DeviceError("the aot backend has no device")

        def map_python_to_cpp_type(self, ty: str) -> str:
            raise DeviceError("the aot backend launches nothing")

        def get_benchmarker(self) -> Any:
            raise DeviceError("the aot backend cannot benchmark")

        def get_device_interface(self) -> Any:
            raise DeviceError("the aot backend has no device interface")

    triton.runtime.driver.set_active(_AotDriver())
elif BACKEND == "cuda":
    from ..memory import cuda as _cuda
else:
    from . import interpreter as _interpreter

    _interpreter.configure()

_compile_lock = threading.Lock()
"""Held while Triton compiles (cuda, aot): one compile per signature, whichever thread asks first."""

compiled_variants: set[tuple] = set()
"""Signatures the aot backend compiled in this process (tests read it to report coverage)."""


def _spec(value: Any) -> Any:
    """The part of an argument that selects a compiled variant (Triton's specialization rules:
    pointer alignment to 16 bytes; an int's equality to 1, divisibility by 16 and 32-bit range)."""
    t = type(value)
    if t is int:
        return (value == 1, value & 15 == 0, -2147483648 <= value <= 2147483647)
    if t is NBXTensor:
        return (value.dtype, value._data_ptr() & 15 == 0)
    if t is tuple:
        return tuple(map(_spec, value))
    if t is float:
        return t
    return (t, id(value)) if callable(value) else (t, value)


def _aot_spec(value: Any) -> Any:
    t = type(value)
    if t is NBXTensor:
        return value.dtype
    if t is int:
        return -2147483648 <= value <= 2147483647
    if t is tuple:
        return tuple(map(_aot_spec, value))
    return _spec(value)


class _CudaLauncher:
    """Per-kernel cache of compiled variants: one pass over the arguments builds the cache key and
    the raw launch arguments (tensors become device pointers), then the compiled kernel runs."""

    __slots__ = ("kernel", "names", "defaults", "cache")

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel
        self.names = list(kernel.arg_names)
        self.defaults = {p.name: p.default for p in kernel.params if p.has_default}
        self.cache: dict[tuple, tuple[Any, list[Any]]] = {}

    def __call__(self, grid: Sequence[int], args: tuple, kwargs: dict[str, Any]) -> None:
        _cuda.ensure_context(0)  # a no-op unless this thread has not launched yet
        key: list[Any] = []
        raw: list[Any] = []
        for a in args:
            if type(a) is NBXTensor:
                ptr = _device_ptr(a)
                key.append((a.dtype, ptr & 15 == 0))
                raw.append(ptr)
            else:
                key.append(_spec(a))
                raw.append(_raw(a) if type(a) is tuple else a)
        compiled, tail = self.compiled((tuple(key), tuple(kwargs.items())), grid, args, kwargs)
        g = (*grid, 1, 1)
        compiled.run(g[0], g[1], g[2], _cuda.current_stream(), compiled.function, compiled.packed_metadata,
                     None, None, None, *raw, *tail)

    def compiled(self, key: tuple, grid: Sequence[int], args: tuple, kwargs: dict[str, Any]) -> tuple[Any, list]:
        """The compiled variant for ``key`` (compiling it from ``args`` the first time) and the
        trailing arguments its launcher takes after ``args``."""
        hit = self.cache.get(key)
        if hit is None:
            with _compile_lock:
                hit = self.cache.get(key)
                if hit is None:
                    # Triton binds and compiles once per signature; every launch then goes straight to
                    # the compiled kernel's launcher on NBX's stream.
                    with _prebuilt.compiling(self.kernel, args, kwargs):  # from a bundle, if it has it
                        compiled = self.kernel.run(*[_cuda_arg(a) for a in args], grid=tuple(grid), warmup=True,
                                                   **kwargs)
                    # Triton loads a variant at its first ``.run``, setting the launcher before the
                    # function handle: load it here, before any other thread can see it half loaded.
                    compiled.run  # noqa: B018
                    tail = [kwargs[n] if n in kwargs else self.defaults[n] for n in self.names[len(args):]]
                    hit = self.cache[key] = (compiled, tail)
        return hit


def _raw(value: Any) -> Any:
    """A launch argument as the compiled kernel's launcher takes it: tensors (in tuples too) as
    device pointers."""
    t = type(value)
    if t is NBXTensor:
        return _device_ptr(value)
    if t is tuple:
        return tuple(map(_raw, value))
    return value


def _device_ptr(t: NBXTensor) -> int:
    st = t._storage
    if st.device.type != "cuda":
        raise _wrong_device(t, "cuda")
    return st.ptr + t._offset * t.dtype.itemsize


class _CudaPtr:
    """A device pointer with the dtype Triton types it by (first launch of a signature only)."""

    __slots__ = ("ptr", "dtype")

    def __init__(self, t: NBXTensor) -> None:
        self.ptr = t._data_ptr()
        self.dtype = t.dtype

    def data_ptr(self) -> int:
        return self.ptr


def _cuda_arg(a: Any) -> Any:
    return _CudaPtr(a) if isinstance(a, NBXTensor) else a


def _check_args(args: Sequence[Any], kwargs: dict[str, Any]) -> None:
    want = "cuda" if BACKEND == "cuda" else "cpu"
    for a in (*args, *kwargs.values()):
        if isinstance(a, NBXTensor) and a.device.type != want:
            raise _wrong_device(a, want)


@cache
def _float64_params(kernel: Any) -> frozenset[int]:
    """Positions of ``kernel``'s parameters annotated ``tl.float64`` (or its string, under postponed
    annotations)."""
    import inspect

    import triton.language as tl

    def wide(note: Any) -> bool:
        return note is tl.float64 or (isinstance(note, str) and note.split(".")[-1] in ("float64", "fp64"))

    params = inspect.signature(kernel.fn).parameters.values()
    return frozenset(i for i, p in enumerate(params) if wide(p.annotation))


def _interp_args(kernel: Any, args: Sequence[Any]) -> list[Any]:
    # Triton's interpreter takes a Python float as float32 even where the parameter says float64
    # (a compiled kernel keeps all 53 bits); such floats go in as float64 scalars.
    wide = _float64_params(kernel)
    return [_float64_scalar(a) if i in wide and isinstance(a, float) else _interp_arg(a) for i, a in enumerate(args)]


def _interp_arg(a: Any) -> Any:
    if isinstance(a, NBXTensor):
        return _InterpArg(a._storage, a._offset, a._shape, a._strides, a.dtype)
    if type(a) is tuple:
        return tuple(map(_interp_arg, a))
    return a


def _float64_scalar(value: float) -> Any:
    import numpy as np
    import triton.language as tl
    from triton.runtime.interpreter import TensorHandle

    return tl.tensor(TensorHandle(np.array([value], dtype=np.float64), tl.float64), tl.float64)


def launch(kernel: Any, grid: Sequence[int], *args: Any, **kwargs: Any) -> None:
    """Launch ``kernel`` over ``grid`` with ``args``; a grid with a zero dimension launches nothing.

    Tensor arguments must be passed positionally; keywords carry constexprs and compile options
    (``num_warps``, ``num_stages``).
    """
    if not isinstance(grid, tuple):
        raise NbxTypeError(f"launch: grid must be a tuple of ints, got {type(grid).__name__}")
    if any(g == 0 for g in grid):
        return
    observer = _events.observer()
    if observer is not None:  # a run being recorded (nbx_core.runtime.trace)
        observer.launched(kernel, grid, args, kwargs)
    if BACKEND == "cuda":
        _cuda_launcher(kernel)(grid, args, kwargs)
    elif BACKEND == "cpu":
        _check_args(args, kwargs)
        _interpreter.launch(kernel, grid, _interp_args(kernel, args), kwargs)
    else:
        _check_args(args, kwargs)
        # One compile per kernel, argument types and constexprs: integer specialisations (== 1,
        # divisible by 16) multiply the variants without changing what is proven to compile. nbx
        # compile needs every variant a GPU will ask for, so it keys them as the cuda backend does.
        spec = _spec if _prebuilt.collecting() else _aot_spec
        key = (id(kernel), tuple(map(spec, args)), tuple(kwargs.items()))
        if key not in compiled_variants:
            with _compile_lock:
                if key not in compiled_variants:
                    with _prebuilt.compiling(kernel, args, kwargs):
                        compiled = kernel.warmup(*args, grid=grid, **kwargs)
                    _check_shared(kernel, compiled)
                    _prebuilt.compiled(compiled)
                    compiled_variants.add(key)


_SHARED_LIMIT = {80: 166912, 86: 101376, 87: 166912, 89: 101376, 90: 232448, 100: 232448}
"""Bytes of shared memory one program may use, by compute capability (what a launch would allow)."""


def _check_shared(kernel: Any, compiled: Any) -> None:
    # A kernel that compiles but needs more shared memory than the device has fails only at launch:
    # the aot backend reports it at compile time instead.
    cc, _ = _backend.aot_target()
    limit = _SHARED_LIMIT.get(cc)
    used = compiled.metadata.shared
    if limit is not None and used > limit:
        name = getattr(kernel, "__name__", None) or kernel.fn.__name__
        raise BackendError(f"{name}: needs {used} bytes of shared memory, over the {limit} of sm_{cc}: "
                           "use smaller tiles or fewer pipeline stages for this case")


_cuda_launchers: dict[Any, _CudaLauncher] = {}


def _cuda_launcher(kernel: Any) -> _CudaLauncher:
    launcher = _cuda_launchers.get(kernel)
    if launcher is None:
        _cuda.ensure_context(0)
        launcher = _cuda_launchers.setdefault(kernel, _CudaLauncher(kernel))  # one per kernel, for every thread
    return launcher


class Prepared:
    """A launch of one kernel over one grid whose arguments are fixed except at some positions.

    Build it with :func:`prepare`; calling it with the values of the varying positions (in order)
    launches. What a launch derives from the fixed arguments (their specialization, the grid, the
    trailing constexprs) is computed once, so a call costs a pass over the varying values only.
    """

    __slots__ = ("kernel", "grid", "args", "varying", "kwargs", "raw", "tail", "variants", "launcher")

    def __init__(self, kernel: Any, grid: tuple[int, ...], args: Sequence[Any], varying: Sequence[int],
                 kwargs: dict[str, Any]) -> None:
        self.kernel, self.grid, self.kwargs = kernel, grid, kwargs
        self.args = list(args)
        self.varying = tuple(varying)
        self.variants: dict[tuple, Any] = {}
        self.launcher = _cuda_launcher(kernel) if BACKEND == "cuda" and all(grid) else None
        self.raw = list(args)
        self.tail: list[Any] = []

    def _full(self, values: Sequence[Any]) -> list[Any]:
        args = list(self.args)
        for pos, v in zip(self.varying, values, strict=True):
            args[pos] = v
        return args

    def __call__(self, *values: Any) -> None:
        launcher = self.launcher
        if launcher is None:
            launch(self.kernel, self.grid, *self._full(values), **self.kwargs)
            return
        observer = _events.observer()
        if observer is not None:
            observer.launched(self.kernel, self.grid, tuple(self._full(values)), self.kwargs)
        _cuda.ensure_context(0)  # a no-op unless this thread has not launched yet
        raw = self.raw.copy()  # a copy per call: threads may launch one plan at once
        parts: list[Any] = []
        last = ptr = None
        for pos, v in zip(self.varying, values, strict=True):
            if v is last:  # a tensor passed again (pointwise's unused slots): same pointer, same key
                raw[pos] = ptr
            elif type(v) is NBXTensor:
                last = v
                ptr = raw[pos] = _device_ptr(v)
                parts.append((v.dtype, ptr & 15 == 0))
            else:
                raw[pos] = v
                parts.append(_spec(v))
        key = tuple(parts)
        compiled = self.variants.get(key)
        if compiled is None:
            args = self._full(values)
            full_key = (tuple(map(_spec, args)), tuple(self.kwargs.items()))
            compiled, self.tail = launcher.compiled(full_key, self.grid, tuple(args), self.kwargs)
            self.variants[key] = compiled
        g = self.grid
        compiled.run(g[0], g[1] if len(g) > 1 else 1, g[2] if len(g) > 2 else 1, _cuda.current_stream(),
                     compiled.function, compiled.packed_metadata, None, None, None, *raw, *self.tail)


def prepare(kernel: Any, grid: tuple[int, ...], args: Sequence[Any], varying: Sequence[int],
            **kwargs: Any) -> Prepared:
    """A :class:`Prepared` launch of ``kernel`` over ``grid``: ``args`` are its positional arguments,
    of which those at the indices ``varying`` are given at each call (their values in ``args`` are
    ignored); keywords carry constexprs and compile options, as for :func:`launch`."""
    if not isinstance(grid, tuple):
        raise NbxTypeError(f"prepare: grid must be a tuple of ints, got {type(grid).__name__}")
    return Prepared(kernel, grid, args, varying, kwargs)


class Bound:
    """One launch with every argument fixed, for replaying it many times (cuda backend).

    ``raw`` holds the compiled kernel's launch arguments in order (a tensor's device pointer where
    the launch took a tensor); :meth:`launch` may be given another list of the same layout whose
    pointers point at other memory of the same 16-byte alignment.
    """

    __slots__ = ("grid", "raw", "run", "function", "metadata")

    def __init__(self, kernel: Any, grid: tuple[int, ...], args: Sequence[Any], kwargs: dict[str, Any]) -> None:
        compiled, tail = _cuda_launcher(kernel).compiled(
            (tuple(map(_spec, args)), tuple(kwargs.items())), grid, tuple(args), kwargs)
        self.grid = (*grid, 1, 1)[:3]
        self.raw = [_raw(a) for a in args] + list(tail)
        self.run = compiled.run
        self.function = compiled.function
        self.metadata = compiled.packed_metadata

    def launch(self, raw: Sequence[Any], stream: int) -> None:
        g = self.grid
        self.run(g[0], g[1], g[2], stream, self.function, self.metadata, None, None, None, *raw)


H200_MULTIPROCESSORS = 132
"""What :func:`multiprocessors` answers off the cuda backend: an H200's count, the aot target's GPU."""


@cache
def multiprocessors(index: int = 0) -> int:
    """Streaming multiprocessors of CUDA device ``index``, for kernels that size their grid to the GPU
    (persistent programs, split reductions): queried on the cuda backend, the H200's otherwise, so
    the aot backend compiles the same launches and the interpreter runs them."""
    if BACKEND != "cuda":
        return H200_MULTIPROCESSORS
    from triton.runtime import driver

    return int(driver.active.utils.get_device_properties(index)["multiprocessor_count"])


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def next_pow2(n: int) -> int:
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def row_blocks(rows: int, n: int, fused_max: int, chunk: int, tile: int) -> tuple[int, int, bool]:
    """(BLOCK, ROWS, CHUNKED) of a kernel over ``rows`` rows of ``n`` elements: a row that fits
    ``fused_max`` is one block, and several rows share a program up to ``tile`` elements; a longer
    row is walked ``chunk`` elements at a time, one row per program."""
    block = next_pow2(n)
    if block > fused_max:
        return min(chunk, fused_max), 1, True
    return block, min(next_pow2(rows), max(1, tile // block)), False


def block_size(n: int, gpu: int = 1024, cpu_cap: int = 1 << 16) -> int:
    """A 1-D block for ``n`` elements: ``gpu`` on a GPU; on the interpreter, as few programs as the
    host memory of one program allows, since each program costs Python time there."""
    if BACKEND == "cpu":
        return min(next_pow2(n), cpu_cap)
    return gpu
