"""Device memory through the CUDA driver API (NVIDIA's ``cuda-bindings``).

Allocations come from CUDA's stream-ordered pool (``cuMemAllocAsync``) on the legacy default
stream, the stream NBX launches on, so a free is ordered after every kernel that used the memory.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import cache

from ..device import Device
from ..errors import BackendError, DeviceError, OutOfMemoryError
from . import events

_lock = threading.Lock()
_contexts: dict[int, object] = {}
STREAM = 0  # the legacy default stream: what torch's current stream is unless a user changes it
_stream = threading.local()


def current_stream() -> int:
    """The stream NBX launches and allocates on: the legacy default stream unless ``use_stream`` says."""
    return getattr(_stream, "value", STREAM)


class use_stream:
    """``with use_stream(handle):`` launch and allocate on another stream (CUDA-graph capture needs one)."""

    def __init__(self, handle: int) -> None:
        self.handle = int(handle)

    def __enter__(self) -> int:
        self.prev = current_stream()
        _stream.value = self.handle
        return self.handle

    def __exit__(self, *exc: object) -> None:
        _stream.value = self.prev


_driver_module = None


def _driver():
    global _driver_module
    if _driver_module is None:
        try:
            from cuda.bindings import driver
        except ImportError as e:
            if isinstance(e, ModuleNotFoundError) and e.name in ("cuda", "cuda.bindings"):
                raise BackendError(
                    "NVIDIA's CUDA Python bindings are not installed (pip install 'nbx-core[cuda]')"
                ) from e
            raise BackendError(
                f"NVIDIA's CUDA Python bindings are installed but do not load ({e}; is an NVIDIA driver installed?)"
            ) from e
        _driver_module = driver
    return _driver_module


def _error_name(err) -> str:
    _, name = _driver().cuGetErrorName(err)
    return name.decode() if isinstance(name, bytes) else str(name)


def check(result, what: str):
    """Unpack a cuda-bindings result tuple, raising a clear error on a non-success status."""
    driver = _driver()
    err, *rest = result
    if err != driver.CUresult.CUDA_SUCCESS:
        name = _error_name(err)
        if err == driver.CUresult.CUDA_ERROR_OUT_OF_MEMORY:
            raise OutOfMemoryError(f"{what}: CUDA is out of device memory ({name})")
        raise DeviceError(f"{what} failed: {name}")
    if not rest:
        return None
    return rest[0] if len(rest) == 1 else tuple(rest)


@cache
def unavailable() -> str | None:
    """Why no CUDA device can be used in this process (no bindings, no driver, no device), or None."""
    try:
        driver = _driver()
    except BackendError as e:
        return str(e)
    try:
        (err,) = driver.cuInit(0)
    except Exception as e:  # cuda-bindings 13 raises when the driver library cannot be loaded
        return f"no CUDA device is visible (the NVIDIA driver does not load: {e})"
    if err != driver.CUresult.CUDA_SUCCESS:
        return f"no CUDA device is visible (cuInit: {_error_name(err)})"
    err, n = driver.cuDeviceGetCount()
    if err != driver.CUresult.CUDA_SUCCESS or n == 0:
        return "no CUDA device is visible"
    return None


def device_count() -> int:
    """How many CUDA devices are visible (0 when there is no driver, no device or no bindings)."""
    if unavailable():
        return 0
    driver = _driver()
    return check(driver.cuDeviceGetCount(), "cuDeviceGetCount")


_thread = threading.local()


def ensure_context(index: int) -> None:
    """Make the primary context of device ``index`` current on this thread (shared with torch)."""
    if getattr(_thread, "index", None) == index:
        return
    reason = unavailable()
    if reason:
        raise DeviceError(f"cuda:{index} cannot be used: {reason}; use the cpu device")
    driver = _driver()
    with _lock:
        ctx = _contexts.get(index)
        if ctx is None:
            n = check(driver.cuDeviceGetCount(), "cuDeviceGetCount")
            if index >= n:
                raise DeviceError(f"cuda:{index} does not exist: {n} CUDA device(s) are visible")
            dev = check(driver.cuDeviceGet(index), "cuDeviceGet")
            ctx = check(driver.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain")
            _contexts[index] = ctx
            check(driver.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
            # The pool's default release threshold (0) hands freed memory back to the driver at
            # every synchronisation, so each large allocation would map fresh pages: keep it.
            pool = check(driver.cuDeviceGetDefaultMemPool(dev), "cuDeviceGetDefaultMemPool")
            keep = driver.cuuint64_t(2**64 - 1)
            attr = driver.CUmemPool_attribute.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD
            check(driver.cuMemPoolSetAttribute(pool, attr, keep), "cuMemPoolSetAttribute")
    check(driver.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    _thread.index = index


_capture = threading.local()


def capture_id() -> int | None:
    """The CUDA-graph capture in progress on this thread (see nbx_core.graph.capture), or None."""
    return getattr(_capture, "value", None)


def set_capture_id(value: int | None) -> None:
    _capture.value = value


# Freed blocks of up to _CACHED_BLOCK bytes are kept per (device, stream, rounded size) and handed
# out again without a driver call: small ops would otherwise pay cuMemAllocAsync and cuMemFreeAsync
# on every result. Reuse is on the stream that freed the block, so stream order keeps it safe.
_ROUND = 512
_CACHED_BLOCK = 1 << 20
_CACHE_LIMIT = 1 << 28
_blocks: dict[tuple[int, int, int], list[int]] = {}
_cached = [0]  # bytes in _blocks
_in_use = [0, 0]  # bytes of live storages allocated here, and the most since reset_peak()


def memory_in_use() -> tuple[int, int]:
    """(bytes of NBX's device storages alive now, the most alive at once since :func:`reset_peak`):
    what tensors hold, not what NBX's block cache or CUDA's pool keep for reuse."""
    return _in_use[0], _in_use[1]


def reset_peak() -> None:
    """Start :func:`memory_in_use`'s peak again from the bytes alive now."""
    _in_use[1] = _in_use[0]


def empty_cache() -> None:
    """Give the blocks NBX keeps for reuse back to CUDA's pool (done before failing on OOM)."""
    driver = _driver()
    with _lock:
        for key in list(_blocks):
            index, stream, size = key
            ptrs = _blocks.pop(key, [])
            _cached[0] -= size * len(ptrs)
            ensure_context(index)
            for ptr in ptrs:
                driver.cuMemFreeAsync(ptr, stream)


def ordinal(device: Device | None) -> int:
    """The CUDA device number of ``device``: a cuda Device always carries one; None means device 0."""
    return (device.index or 0) if device is not None else 0


def _alloc(nbytes: int, index: int) -> int:
    driver = _driver()
    stream = current_stream()
    err, ptr = driver.cuMemAllocAsync(nbytes, stream)
    if err == driver.CUresult.CUDA_ERROR_OUT_OF_MEMORY and _cached[0]:
        empty_cache()
        err, ptr = driver.cuMemAllocAsync(nbytes, stream)
    return int(check((err, ptr), f"allocating {nbytes} bytes on cuda:{index}"))


class CudaStorage:
    """``nbytes`` of device memory on ``cuda:index``. Memory from :meth:`allocate` is owned and
    freed (or kept for reuse) when the storage is collected; a storage built from a pointer is not."""

    __slots__ = ("ptr", "nbytes", "device", "owner", "_size", "_captured_in", "__weakref__")

    def __init__(self, ptr: int, nbytes: int, device: Device, owner: object = None) -> None:
        self.ptr = ptr
        self.nbytes = nbytes
        self.device = device
        self.owner = owner
        self._size = 0  # the owned block's rounded size; 0: not owned
        self._captured_in: int | None = None

    @classmethod
    def allocate(cls, nbytes: int, device: Device, zero: bool = False) -> CudaStorage:
        index = ordinal(device)
        if getattr(_thread, "index", None) != index:
            ensure_context(index)
        if nbytes == 0:
            return cls(0, 0, device)
        size = -(-nbytes // _ROUND) * _ROUND
        captured_in = capture_id()
        ptr = None
        ptrs = _blocks.get((index, current_stream(), size)) if captured_in is None else None
        if ptrs:
            try:
                ptr = ptrs.pop()
                _cached[0] -= size
            except IndexError:  # another thread took the last one
                pass
        if ptr is None:
            ptr = _alloc(size, index)
        st = cls(ptr, nbytes, device)
        st._size = size
        _in_use[0] += size
        if _in_use[0] > _in_use[1]:
            _in_use[1] = _in_use[0]
        st._captured_in = captured_in
        if zero:
            check(_driver().cuMemsetD8Async(ptr, 0, nbytes, current_stream()), "cuMemsetD8Async")
        return st

    def __del__(self) -> None:
        size = self._size
        if not size:
            return
        _in_use[0] -= size
        captured_in = self._captured_in
        capturing = capture_id()
        # Memory allocated while capturing belongs to the CUDA graph: freeing it inside the same
        # capture records a free node; after the capture, the graph frees and reallocates it.
        if captured_in is not None and captured_in != capturing:
            return
        stream = current_stream()
        if capturing is None and size <= _CACHED_BLOCK and _cached[0] + size <= _CACHE_LIMIT:
            _blocks.setdefault((ordinal(self.device), stream, size), []).append(self.ptr)
            _cached[0] += size
            return
        try:
            if getattr(_thread, "index", None) != ordinal(self.device):
                ensure_context(ordinal(self.device))
            _driver().cuMemFreeAsync(self.ptr, stream)
        except Exception:  # interpreter shutdown: the driver module may be gone, the context too
            pass

    def data_ptr(self) -> int:
        return self.ptr

    def copy_from_host(self, dst_offset: int, src_ptr: int, nbytes: int) -> None:
        if nbytes:
            ensure_context(ordinal(self.device))
            check(_driver().cuMemcpyHtoD(self.ptr + dst_offset, src_ptr, nbytes), "host-to-device copy")
            events.on_host_write(self)

    def copy_to_host(self, src_offset: int, dst_ptr: int, nbytes: int) -> None:
        if nbytes:
            events.on_host_read(self, "a device-to-host copy")
            ensure_context(ordinal(self.device))
            check(_driver().cuMemcpyDtoH(dst_ptr, self.ptr + src_offset, nbytes), "device-to-host copy")
            _after_host_wait()


class LentStorage(CudaStorage):
    """Bytes of a CUDA graph's memory lent to one run's output (nbx_core.graph.cudagraph).

    The graph writes there again at its next run, which first calls :meth:`settle` on every such
    storage still alive; so does anything that hands the address to other code (DLPack export,
    ``data_ptr()``). A storage dropped before then cost no copy at all."""

    __slots__ = ()

    def settle(self) -> None:
        """Move the bytes to memory of this storage's own (a device copy on the current stream),
        unless they were moved already."""
        with _settle_lock:
            if self._size or not self.nbytes:
                return
            own = CudaStorage.allocate(self.nbytes, self.device)
            check(_driver().cuMemcpyDtoDAsync(own.ptr, self.ptr, self.nbytes, current_stream()), "cuMemcpyDtoDAsync")
            # The storage takes the allocation over: it frees it when collected, and owes the graph nothing.
            self.ptr, self._size, self._captured_in, self.owner = own.ptr, own._size, own._captured_in, None
            own._size = 0


_settle_lock = threading.Lock()


def synchronize(device: Device | None = None) -> None:
    """Wait for every kernel queued on the NBX stream."""
    ensure_context(ordinal(device))
    check(_driver().cuCtxSynchronize(), "cuCtxSynchronize")
    _after_host_wait()


host_wait_hooks: list[Callable[[], None]] = []
"""Called after the host has waited for the device (nbx_core.runtime.checks reads its flags there)."""


def _after_host_wait() -> None:
    for hook in host_wait_hooks:
        hook()
