"""Which backend this process runs kernels on: ``cpu``, ``cuda`` or ``aot``.

Chosen once, before the first kernel module is imported: ``NBX_BACKEND`` when set, else ``cuda``
when a GPU is visible, else ``cpu``. ``NBX_AOT_TARGET`` (default ``sm_90``) names the GPU the
``aot`` backend compiles for. This module imports no Triton.
"""

from __future__ import annotations

import glob
import os

from .device import CPU, Device
from .errors import BackendError

BACKENDS = ("cpu", "cuda", "aot")
_current: str | None = None


def requested() -> str:
    """``NBX_BACKEND`` as set (lower case; "" when unset), unchecked: it probes no device and never raises."""
    return os.environ.get("NBX_BACKEND", "").strip().lower()


def current() -> str:
    """The backend of this process, choosing it on first call.

    Raises BackendError when ``NBX_BACKEND`` names no backend, or names ``cuda`` where no CUDA device
    can be used (the message says why: no bindings, no driver, no device).
    """
    global _current
    if _current is None:
        want = requested() or None
        if want is not None and want not in BACKENDS:
            raise BackendError(f"NBX_BACKEND={want!r} is not a backend: use one of {', '.join(BACKENDS)}")
        if want in (None, "cuda"):
            from .memory.cuda import unavailable

            reason = unavailable()
            if want is None:
                want = "cpu" if reason else "cuda"
            elif reason:
                raise BackendError(
                    f"NBX_BACKEND=cuda, but {reason}; unset NBX_BACKEND or set NBX_BACKEND=cpu to run on the CPU"
                )
        # Triton 3.9 warns unless told; keep its default (fused multiply-add on).
        os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
        if want in ("cpu", "aot"):
            # Triton reads this when a kernel is decorated; it must be set before any kernel module.
            os.environ["TRITON_INTERPRET"] = "1" if want == "cpu" else "0"
        _current = want
    return _current


def preconfigure() -> None:
    """Tell Triton about the interpreter before anything imports it; cheap, for ``import nbx_core``.

    Triton builds its own helpers (``tl.sum`` …) when first imported, interpreted or compiled
    according to ``TRITON_INTERPRET`` at that moment, so the choice cannot wait for the first kernel.
    Without ``NBX_BACKEND``, a machine with no NVIDIA device node can only use the cpu backend.
    """
    want = requested()
    if not want and not glob.glob("/dev/nvidia[0-9]*"):
        want = "cpu"
    if want in ("cpu", "aot"):
        os.environ["TRITON_INTERPRET"] = "1" if want == "cpu" else "0"
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")


def default_device() -> Device:
    """Where new tensors go unless told otherwise: ``cuda:0`` on the cuda backend, else the host."""
    return Device("cuda", 0) if current() == "cuda" else CPU


def kernel_device_type() -> str:
    """The device type the backend's kernels read and write."""
    return "cuda" if current() == "cuda" else "cpu"


def aot_target() -> tuple[int, int]:
    """(compute capability, warp size) the aot backend compiles for, from ``NBX_AOT_TARGET``."""
    spec = os.environ.get("NBX_AOT_TARGET", "sm_90").strip().lower()
    if not spec.startswith("sm_") or not spec[3:].rstrip("a").isdigit():
        raise BackendError(f"NBX_AOT_TARGET={spec!r}: write sm_NN, for example sm_90")
    return int(spec[3:].rstrip("a")), 32
