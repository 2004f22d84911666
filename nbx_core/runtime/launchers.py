"""Host launchers of a bundle's kernels, built in parallel when a bundled program is made.

Before its first launch, a kernel variant needs a host-side launcher, which Triton makes when it
loads the variant (``CompiledKernel._init_handles`` calls ``driver.active.launcher_cls(src,
metadata)``). On Triton 3.6 the CUDA launcher is a C module per argument signature
(``triton/backends/nvidia/driver.py``: ``CudaLauncher`` compiles ``make_launcher``'s source with
``compile_module_from_src``), built by the system C compiler, a fraction of a second each and cached
in Triton's cache directory. A bundle removes the kernel compiles but not these, which otherwise run
one after another as each kernel is first launched. Triton 3.9's launcher is generic (``cuda_utils``'s
``launch``), so there this builds nothing.

:func:`warm` makes the launcher of every bundled variant through the same ``launcher_cls``, in a
thread pool (the compiler runs as a subprocess, so the builds overlap), from the index's argument
types in parameter order and the variant's stored metadata: Triton keys a built module by its
source, so the first launch then finds it in its cache. It is host code Triton generates and
caches on this machine, never part of a bundle. Any failure leaves that launcher to be built at its
first launch, as without the warm-up: it is logged at debug level and never raised.
"""

from __future__ import annotations

import json
import logging
import os
from collections import namedtuple
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as _wait_all
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from .. import backend as _backend

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Launcher:
    """What a variant's host launcher is made from: the kernel (for messages), its arguments' Triton
    types in parameter order (name -> type, a tuple argument's as a tuple) and its metadata (Triton's
    JSON, read)."""

    kernel: str
    signature: dict[str, Any]
    metadata: dict[str, Any]


def launchers(kernels: Sequence[Any]) -> list[Launcher]:
    """The launchers to build for a bundle's kernels (:class:`nbx_core.graph.bundle.Kernel`), one per
    distinct launcher: variants that differ only in constexprs, specialisation or compile options
    share one, and building it twice at once would only race for the same cache entry. A kernel
    whose index entry has no ``params`` (a bundle from an older NBX) is left to its first launch."""
    found: dict[str, Launcher] = {}
    for k in kernels:
        params = k.entry.get("params")
        path = next((p for name, p in k.files.items() if name.endswith(".json")), None)
        if not isinstance(params, list) or path is None:
            continue
        metadata = json.loads(Path(path).read_text())
        signature = {p: _tuples(k.entry["signature"][p]) for p in params}
        key = json.dumps([list(signature.values()), metadata.get("tensordesc_meta")])
        found.setdefault(key, Launcher(k.entry.get("kernel", k.hash), signature, metadata))
    return list(found.values())


def _tuples(kind: Any) -> Any:
    """A signature entry as Triton has it: JSON stores a tuple argument's types as a list."""
    return tuple(_tuples(k) for k in kind) if isinstance(kind, list) else kind


def build(launcher: Launcher) -> None:
    """Make one variant's host launcher as its first launch would, leaving it in Triton's cache."""
    import triton
    from triton.backends.compiler import GPUTarget

    metadata = dict(launcher.metadata)
    # As CompiledKernel reads the file: the target back to a GPUTarget, the fields as a namedtuple.
    target = metadata["target"]
    metadata["target"] = GPUTarget(target["backend"], target["arch"], target["warp_size"])
    fields = namedtuple("KernelMetadata", sorted(metadata))(**metadata)
    # The parts of Triton's ASTSource a launcher reads: its types; constexprs are in them already.
    source = SimpleNamespace(
        signature=dict(launcher.signature), constants={}, fn=SimpleNamespace(arg_names=list(launcher.signature))
    )
    triton.runtime.driver.active.launcher_cls(source, fields)


class Warmup:
    """Launchers being built in the background; :meth:`wait` returns once all are done."""

    def __init__(self, futures: Sequence[Future[None]] = ()) -> None:
        self._futures = list(futures)

    def wait(self) -> None:
        """Block until every launcher is built or has failed (failures are only logged)."""
        _wait_all(self._futures)


def warm(kernels: Sequence[Any]) -> Warmup:
    """Start building the host launchers of these bundled kernels (:class:`nbx_core.graph.bundle.Kernel`)
    when they launch on a GPU here; otherwise, and on any failure to start, nothing is built ahead."""
    try:
        todo = launchers(kernels) if _driver_ready() else []
        return start(todo) if todo else Warmup()
    except Exception:
        log.debug("bundled kernels: host launchers not built ahead; each is built at its first launch", exc_info=True)
        return Warmup()


def _driver_ready() -> bool:
    """Whether kernels launch on a GPU (the cuda backend), with Triton's driver created: Triton
    creates it on first use, unguarded, so here, once, rather than racing in each worker."""
    if _backend.current() != "cuda":
        return False
    import triton

    triton.runtime.driver.active.launcher_cls  # noqa: B018
    return True


def start(todo: Sequence[Launcher]) -> Warmup:
    """Build ``todo`` with :func:`build` on a pool of up to ``os.cpu_count()`` threads."""
    pool = ThreadPoolExecutor(
        max_workers=max(1, min(len(todo), os.cpu_count() or 1)), thread_name_prefix="nbx-launchers"
    )
    futures = [pool.submit(_quietly, launcher) for launcher in todo]
    pool.shutdown(wait=False)
    return Warmup(futures)


def _quietly(launcher: Launcher) -> None:
    try:
        build(launcher)
    except Exception:
        log.debug(
            "bundled kernel %s: host launcher not built ahead; it is built at its first launch",
            launcher.kernel,
            exc_info=True,
        )
