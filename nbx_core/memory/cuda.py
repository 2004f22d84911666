"""Device memory through the CUDA driver API (NVIDIA's ``cuda-bindings``).

Allocations come from CUDA's stream-ordered pool (``cuMemAllocAsync``) on the legacy default
stream, the stream NBX launches on, so a free is ordered after every kernel that used the memory.
"""

from __future__ import annotations

import threading
import weakref

from ..device import Device
from ..errors import BackendError, DeviceError, OutOfMemoryError

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


def _driver():
    try:
        from cuda.bindings import driver
    except ImportError as e:
        raise BackendError(
            "CUDA device memory needs NVIDIA's CUDA Python bindings: pip install 'nbx-core[cuda]'"
        ) from e
    return driver


def check(result, what: str):
    """Unpack a cuda-bindings result tuple, raising a clear error on a non-success status."""
    driver = _driver()
    err, *rest = result
    if err != driver.CUresult.CUDA_SUCCESS:
        _, name = driver.cuGetErrorName(err)
        name = name.decode() if isinstance(name, bytes) else str(name)
        if err == driver.CUresult.CUDA_ERROR_OUT_OF_MEMORY:
            raise OutOfMemoryError(f"{what}: CUDA is out of device memory ({name})")
        raise DeviceError(f"{what} failed: {name}")
    if not rest:
        return None
    return rest[0] if len(rest) == 1 else tuple(rest)


def device_count() -> int:
    """How many CUDA devices are visible (0 when there is no driver or no bindings)."""
    try:
        driver = _driver()
    except BackendError:
        return 0
    err, = driver.cuInit(0)
    if err != driver.CUresult.CUDA_SUCCESS:
        return 0
    err, n = driver.cuDeviceGetCount()
    return n if err == driver.CUresult.CUDA_SUCCESS else 0


_thread = threading.local()


def ensure_context(index: int) -> None:
    """Make the primary context of device ``index`` current on this thread (shared with torch)."""
    if getattr(_thread, "index", None) == index:
        return
    driver = _driver()
    with _lock:
        ctx = _contexts.get(index)
        if ctx is None:
            check(driver.cuInit(0), "cuInit")
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


def _free(ptr: int, index: int, captured_in: int | None) -> None:
    # Memory allocated while capturing belongs to the CUDA graph: freeing it inside the same capture
    # records a free node; after the capture, the graph frees and reallocates it at each launch.
    if captured_in is not None and captured_in != capture_id():
        return
    driver = _driver()
    ensure_context(index)
    driver.cuMemFreeAsync(ptr, current_stream())


class CudaStorage:
    """``nbytes`` of device memory on ``cuda:index``; freed when the storage is collected."""

    __slots__ = ("ptr", "nbytes", "device", "owner", "_finalizer", "__weakref__")

    def __init__(self, ptr: int, nbytes: int, device: Device, owner: object = None) -> None:
        self.ptr = ptr
        self.nbytes = nbytes
        self.device = device
        self.owner = owner
        self._finalizer = None

    @classmethod
    def allocate(cls, nbytes: int, device: Device, zero: bool = False) -> CudaStorage:
        driver = _driver()
        ensure_context(device.index)
        if nbytes == 0:
            return cls(0, 0, device)
        ptr = int(check(driver.cuMemAllocAsync(nbytes, current_stream()), f"allocating {nbytes} bytes on {device}"))
        st = cls(ptr, nbytes, device)
        st._finalizer = weakref.finalize(st, _free, ptr, device.index, capture_id())
        if zero:
            check(driver.cuMemsetD8Async(ptr, 0, nbytes, current_stream()), "cuMemsetD8Async")
        return st

    def data_ptr(self) -> int:
        return self.ptr

    def copy_from_host(self, dst_offset: int, src_ptr: int, nbytes: int) -> None:
        if nbytes:
            ensure_context(self.device.index)
            check(_driver().cuMemcpyHtoD(self.ptr + dst_offset, src_ptr, nbytes), "host-to-device copy")

    def copy_to_host(self, src_offset: int, dst_ptr: int, nbytes: int) -> None:
        if nbytes:
            ensure_context(self.device.index)
            check(_driver().cuMemcpyDtoH(dst_ptr, self.ptr + src_offset, nbytes), "device-to-host copy")


def synchronize(device: Device | None = None) -> None:
    """Wait for every kernel queued on the NBX stream."""
    ensure_context(device.index if device is not None else 0)
    check(_driver().cuCtxSynchronize(), "cuCtxSynchronize")
