"""Kernels compiled ahead of time (``nbx compile``), handed to Triton instead of compiling them.

Triton finds a compiled kernel variant in its cache under a hash of everything the binary depends
on: the kernel's source and that of every function it calls, the argument types and their
specialisation (alignment, ints equal to 1 or divisible by 16), the constexprs, the compile options,
the target, Triton's own sources and ptxas's version. A cache entry is a group of files, of which a
launch needs two: the binary (cubin) and the metadata JSON Triton launches it from (kernel name,
shared memory, warps, ...). A bundle stores those two files under that hash.

:func:`serve` adds a bundle's files to a process-wide table and makes Triton's cache manager
(``triton.knobs.cache.manager_class``) one that answers from the table first. Triton's JIT then finds a
bundled variant as it finds a cached one and builds its ``CompiledKernel`` from the files: no
compile, nothing written, so Triton's cache directory may be empty and read-only. Any other lookup
goes to the manager Triton would have used. Serving through Triton's own lookup, rather than
building ``CompiledKernel`` objects here, keeps NBX off Triton's internal constructors and argument
binding, which change between releases (3.6 and 3.9 share the cache manager interface).

Within :func:`scope` (a bundled program's runs), a kernel variant that Triton is about to compile
is reported first (:func:`compiling` marks the launches that may compile): a :class:`BundleWarning`,
or a :class:`~nbx_core.errors.BundleError` with ``NBX_REQUIRE_BUNDLE=1``.

On the aot backend, :func:`collect` gathers every variant the launches inside it compile or reuse,
for ``nbx compile`` to store.
"""

from __future__ import annotations

import base64
import contextvars
import os
import threading
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from .. import backend as _backend
from ..errors import BundleError
from ..tensor import NBXTensor

_backend.current()  # Triton reads the backend's settings when first imported

import triton  # noqa: E402
import triton.runtime.jit  # noqa: E402
from triton.runtime.cache import CacheManager, FileCacheManager  # noqa: E402


def _callee_keys_first() -> None:
    """Make a kernel's Triton cache key independent of what the process compiled before.

    A kernel's key covers the functions it calls and the constexpr globals they read. Triton 3.6
    merges a callee's globals before computing the callee's key, so while the callee has no key
    yet its globals are left out: the same kernel got another key (a bundle miss, a recompile)
    depending on whether some other kernel calling the same helper was compiled first. Triton 3.9
    computes the callee's key first; this does the same on earlier versions (a no-op on 3.9).
    """
    finder = getattr(triton.runtime.jit, "DependenciesFinder", None)
    original = getattr(finder, "_update_hash", None)
    if finder is None or original is None or getattr(original, "nbx_callee_keys_first", False):
        return

    def _update_hash(self: Any, func: Any) -> Any:
        func.cache_key  # noqa: B018  (computes the callee's key and the globals it reads)
        return original(self, func)

    _update_hash.nbx_callee_keys_first = True  # type: ignore[attr-defined]
    finder._update_hash = _update_hash


_callee_keys_first()


class BundleWarning(UserWarning):
    """A kernel a bundled program launches is not in its bundle, so Triton compiles it at run time."""


def require() -> bool:
    """Whether ``NBX_REQUIRE_BUNDLE`` forbids compiling a kernel at run time (``1``, ``true``, ``yes``)."""
    return os.environ.get("NBX_REQUIRE_BUNDLE", "").strip().lower() in ("1", "true", "yes")


def target_name(arch: int) -> str:
    """The name a bundle gives a compute capability: ``sm_90``."""
    return f"sm_{arch}"


def current_target() -> str:
    """The target this process compiles for: the aot target on aot, else the GPU's."""
    if _backend.current() == "aot":
        return target_name(_backend.aot_target()[0])
    return target_name(triton.runtime.driver.active.get_current_target().arch)


def triton_version() -> str:
    """The version of the Triton this process runs."""
    return triton.__version__


# -- serving ---------------------------------------------------------------------------------------

_served: dict[str, dict[str, str]] = {}  # Triton's cache key (base32 of the hash) -> group file -> path
_serve_lock = threading.Lock()
_fallback: Any = None  # the manager class Triton used before serving began


def cache_key(digest: str) -> str:
    """The name Triton's cache gives the entry of hash ``digest`` (hex): its base32, unpadded."""
    return base64.b32encode(bytes.fromhex(digest)).decode("ascii").rstrip("=")


def serve(groups: Mapping[str, Mapping[str, str]]) -> None:
    """Hand Triton these variants from now on: hash (hex) -> the group's files (file name as Triton
    names it -> path of the stored file). Installs the serving cache manager on first use."""
    global _fallback
    with _serve_lock:
        for digest, files in groups.items():
            _served[cache_key(digest)] = dict(files)
        if triton.knobs.cache.manager_class is not _ServingManager:
            _fallback = triton.knobs.cache.manager_class or FileCacheManager
            triton.knobs.cache.manager_class = _ServingManager


class _ServingManager(CacheManager):
    """Triton's cache manager while bundles are served: a served variant's group from its stored
    files; every other request from the manager Triton used before, created only when needed
    (Triton's file cache creates its directory when created)."""

    def __init__(self, key: str, override: bool = False, dump: bool = False) -> None:
        self.key = key
        self._options = {"override": override, "dump": dump}
        self._plain = override or dump
        self._inner: CacheManager | None = None

    def _delegate(self) -> CacheManager:
        if self._inner is None:
            self._inner = _fallback(self.key, **self._options)
        return self._inner

    def get_group(self, filename: str) -> dict[str, str] | None:
        if not self._plain:
            group = _served.get(self.key)
            if group is not None and filename in group:
                return dict(group)
            _report_miss()
        return self._delegate().get_group(filename)

    def get_file(self, filename: str) -> str | None:
        return self._delegate().get_file(filename)

    def put(self, data: Any, filename: str, binary: bool = True) -> str:
        return self._delegate().put(data, filename, binary=binary)

    def put_group(self, filename: str, group: dict[str, str]) -> Any:
        return self._delegate().put_group(filename, group)


# -- reporting what a bundled program compiles -------------------------------------------------------


@dataclass(frozen=True)
class Scope:
    """A bundled program's run, for messages: its graph, the run's inputs and the bundle's target."""

    graph: str
    inputs: str
    target: str
    require: bool


_scope: contextvars.ContextVar[Scope | None] = contextvars.ContextVar("nbx_bundle_scope", default=None)
_pending = threading.local()  # the launch whose variant Triton is looking up, in a scope


@contextmanager
def scope(graph: str, inputs: str, target: str) -> Iterator[None]:
    """Report the kernels Triton compiles inside this block as missing from ``graph``'s bundle."""
    token = _scope.set(Scope(graph, inputs, target, require()))
    try:
        yield
    finally:
        _scope.reset(token)


@contextmanager
def compiling(kernel: Any, args: tuple, kwargs: Mapping[str, Any]) -> Iterator[None]:
    """Mark a launch whose variant Triton is about to look up (and compile if nothing has it)."""
    current = _scope.get()
    if current is None:
        yield
        return
    _pending.value = (current, kernel, args, kwargs)
    try:
        yield
    finally:
        _pending.value = None


def _report_miss() -> None:
    pending = getattr(_pending, "value", None)
    if pending is None:
        return
    _pending.value = None
    current, kernel, args, kwargs = pending
    message = (
        f"{current.graph}: {describe(kernel, args, kwargs)} is not in the graph's kernel bundle for "
        f"{current.target}, so Triton compiles it now, for a run on {current.inputs}"
    )
    fix = (
        f"to bundle it, run nbx compile {current.graph} --target {current.target} with this run's sizes of its "
        "symbolic dims (--dim NAME=SIZE,...), under the Triton and NBX of this process"
    )
    if current.require:
        raise BundleError(f"{message}; NBX_REQUIRE_BUNDLE=1 forbids compiling at run time: {fix}")
    warnings.warn(f"{message}: {fix}", BundleWarning, stacklevel=2)


def describe(kernel: Any, args: tuple, kwargs: Mapping[str, Any]) -> str:
    """A launch's kernel and variant for messages: ``kernel _gemm_kernel(float32 tensor ×3, int ×9; BLOCK=64)``."""
    name = getattr(kernel, "__name__", None) or getattr(getattr(kernel, "fn", None), "__name__", "?")
    runs: list[list[Any]] = []  # [kind, count]: consecutive arguments of one kind, counted
    for a in args:
        kind = f"{a.dtype} tensor" if isinstance(a, NBXTensor) else type(a).__name__
        if runs and runs[-1][0] == kind:
            runs[-1][1] += 1
        else:
            runs.append([kind, 1])
    parts = [kind if count == 1 else f"{kind} ×{count}" for kind, count in runs]
    constexprs = [f"{k}={getattr(v, '__name__', v)}" for k, v in kwargs.items()]
    return f"kernel {name}({', '.join(parts)}{'; ' if constexprs else ''}{', '.join(constexprs)})"


# -- collecting what an aot run compiles ------------------------------------------------------------


@dataclass(frozen=True)
class Variant:
    """One compiled variant as a bundle stores it: Triton's ``hash``, what it was compiled from (for
    people and for checks; ``params`` keeps the order of the arguments, which the index's sorted
    ``signature`` loses and a host launcher depends on), and its files (Triton's name for each ->
    where it is now)."""

    hash: str
    kernel: str
    source: str
    params: list[str]
    signature: dict[str, Any]
    constexprs: dict[str, Any]
    attrs: dict[str, Any]
    num_warps: int
    num_stages: int
    num_ctas: int
    shared: int
    files: dict[str, str]


_collected: dict[str, Variant] | None = None
_on_variant: Callable[[Variant], None] | None = None
_collect_lock = threading.Lock()


@contextmanager
def collect(on_variant: Callable[[Variant], None] | None = None) -> Iterator[dict[str, Variant]]:
    """Gather, by hash, every variant :func:`compiled` reports inside this block (aot backend);
    ``on_variant`` is called with each new one."""
    global _collected, _on_variant
    with _collect_lock:
        if _collected is not None:
            raise BundleError("nbx compile: collecting kernels is already under way in this process")
        _collected, _on_variant = {}, on_variant
        found = _collected
    try:
        yield found
    finally:
        _collected = _on_variant = None


def collecting() -> bool:
    """Whether launches are being collected (launches then key variants as Triton does)."""
    return _collected is not None


def compiled(compiled_kernel: Any) -> None:
    """Note a variant a launch compiled (or found compiled), if collecting."""
    found = _collected
    if found is None or compiled_kernel.hash in found:
        return
    src, meta = compiled_kernel.src, compiled_kernel.metadata
    fn = src.fn
    json_name = f"{src.name[:150]}.json"  # Triton's file names: the kernel name cut to 150 characters
    binary = next(name for name in compiled_kernel.metadata_group if name.endswith(".cubin"))
    names = list(fn.arg_names)
    found[compiled_kernel.hash] = Variant(
        hash=compiled_kernel.hash,
        kernel=f"{fn.module}:{fn.__name__}",
        source=fn.cache_key,
        params=names,
        signature={name: plain(kind) for name, kind in src.signature.items()},
        constexprs={_path_name(names, path): plain(value) for path, value in sorted(src.constants.items())},
        attrs={_path_name(names, path): plain(value) for path, value in sorted(src.attrs.items()) if value},
        num_warps=meta.num_warps,
        num_stages=meta.num_stages,
        num_ctas=meta.num_ctas,
        shared=meta.shared,
        files={json_name: compiled_kernel.metadata_group[json_name], binary: compiled_kernel.metadata_group[binary]},
    )
    if _on_variant is not None:
        _on_variant(found[compiled_kernel.hash])


def _path_name(names: list[str], path: tuple) -> str:
    """An argument path (Triton's: a tuple of indices) as ``name`` or ``name[1][0]``."""
    return names[path[0]] + "".join(f"[{i}]" for i in path[1:])


def plain(value: Any) -> Any:
    """``value`` as JSON that reads the same in every process: a jit function as ``module:name``."""
    if isinstance(value, bool | int | str) or value is None:
        return value
    if isinstance(value, float):
        return value if value == value and abs(value) != float("inf") else repr(value)
    if isinstance(value, tuple | list):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    fn = getattr(value, "fn", None)
    if fn is not None and hasattr(value, "cache_key"):
        return f"{fn.__module__}:{fn.__qualname__}"
    return str(value)
