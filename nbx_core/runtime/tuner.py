"""The tuning harness: time a tunable's candidate configurations on the GPU and keep the fastest.

A plugin that tunes keeps its sweeps in a ``tuning`` module next to its plugin module
(``nbx_norm.tuning`` beside ``nbx_norm.plugin``): ``SWEEPS``, a list of :class:`Sweep`. A sweep
names a :class:`~nbx_core.runtime.tuning.Tunable`, the shapes it is tuned at by default, and how to
build a :class:`Case` for a shape: inputs (random normal values: zeros would flatter the GPU's
clocks), the lookup arguments of the launch and the candidates to try. :func:`measure` times every
candidate of a case through the launcher's ``config=`` (GPU time, :func:`kernel_clock`), and
:func:`choose` picks, for each lookup key, the configuration fastest in total over the cases that
share the key. ``nbx tune`` keeps those choices in the user cache (:func:`tune`);
``benchmarks/sweep.py`` times the same cases against torch and writes its choices into the
plugins' tables.
"""

from __future__ import annotations

import functools
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

import numpy as np

from ..errors import BackendError, NbxValueError
from ..tensor import NBXTensor
from .tuning import Config, Key, Tunable, arch

Shape = tuple[int, ...]


@dataclass
class Case:
    """One launch to tune: ``run(config)`` launches it once with ``config`` (None: what the lookup
    gives), ``args`` are the tunable's lookup arguments for it. ``reference`` names what a
    benchmark times it against: a torch function's path under ``torch`` and its arguments, the
    case's tensors among them (``("nn.functional.layer_norm", (x, [n], w, b))``)."""

    label: str
    args: tuple
    run: Callable[[Config | None], Any]
    candidates: list[Config]
    reference: tuple[str, tuple] | None = None


@dataclass
class Sweep:
    """How to tune ``tunable``: ``cases(shape, dtype)`` builds the cases of one shape (whose
    meaning ``shape_doc`` gives, e.g. "rows x columns"); ``shapes`` and ``dtypes`` are tuned when
    none are given."""

    tunable: Tunable
    shapes: Sequence[Shape]
    cases: Callable[[Shape, str], list[Case]]
    shape_doc: str
    dtypes: Sequence[str] = ("bfloat16",)


@dataclass
class Timing:
    """A candidate's median time in seconds, or why it could not run (it did not compile, or needs
    more shared memory than the GPU has)."""

    config: Config
    seconds: float | None = None
    error: str | None = None


def randn(shape: Shape, dtype: str, rng: np.random.Generator) -> NBXTensor:
    """A tensor of random normal values of ``dtype`` on the backend's device (a case's input)."""
    from .. import dtypes
    from ..backend import default_device
    from ..tensor import tensor

    return tensor(rng.standard_normal(shape, dtype=np.float32), dtype=dtypes.as_dtype(dtype), device=default_device())


def sweep_shape(shape: Shape, what: str, doc: str, ranks: tuple[int, ...]) -> Shape:
    """``shape`` when it has one of ``ranks`` sizes, for a sweep's cases; otherwise an NbxValueError
    saying what ``what`` shapes are (``doc``, e.g. ``"ROWSxN"``)."""
    if len(shape) not in ranks:
        raise NbxValueError(f"{what} shapes are {doc}, got {'x'.join(map(str, shape))}")
    return shape


def wall_clock(fn: Callable[[], Any], reps: int) -> float:
    """Median seconds of ``fn`` over ``reps`` runs, each synchronized (host clock, no torch)."""
    from ..memory.cuda import synchronize

    fn()
    synchronize()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        synchronize()
        times.append(time.perf_counter() - t0)
    return sorted(times)[len(times) // 2]


def kernel_clock(fn: Callable[[], Any], reps: int) -> float:
    """Mean seconds of GPU work per run of ``fn`` over ``reps`` runs queued behind a GPU sleep and
    bracketed by CUDA events: the host's launch time is not in it, as it would be on the host clock
    for kernels shorter than their launch. Falls back to :func:`wall_clock`, with a warning, where
    the events or the sleep fail."""
    from ..memory import cuda as _cuda
    from .kernels.sleep import gpu_sleep

    fn()
    _cuda.synchronize()
    t0 = time.perf_counter()
    fn()
    _cuda.synchronize()
    one = time.perf_counter() - t0  # launch plus GPU time: the sleep outlasts enqueuing every run
    driver = _cuda._driver()
    events: list[Any] = []
    try:
        events = [_cuda.check(driver.cuEventCreate(0), "cuEventCreate") for _ in range(2)]
        stream = _cuda.current_stream()
        gpu_sleep(2 * one * reps + 1e-3)
        _cuda.check(driver.cuEventRecord(events[0], stream), "cuEventRecord")
        for _ in range(reps):
            fn()
        _cuda.check(driver.cuEventRecord(events[1], stream), "cuEventRecord")
        _cuda.check(driver.cuEventSynchronize(events[1]), "cuEventSynchronize")
        elapsed = getattr(driver, "cuEventElapsedTime_v2", None) or driver.cuEventElapsedTime
        ms = _cuda.check(elapsed(events[0], events[1]), "cuEventElapsedTime")
    except Exception as exc:  # the host clock still ranks long kernels correctly
        warnings.warn(
            f"tuning: GPU event timing failed ({type(exc).__name__}: {exc}); timing on the host clock, "
            "which counts the launch of kernels shorter than it",
            stacklevel=2,
        )
        return wall_clock(fn, reps)
    finally:
        for event in events:
            driver.cuEventDestroy(event)
    return float(ms) / 1e3 / reps


def measure(
    case: Case, reps: int = 20, timer: Callable[[Callable[[], Any], int], float] = kernel_clock
) -> list[Timing]:
    """Every candidate of ``case`` timed by ``timer``."""
    out = []
    for config in case.candidates:
        try:
            out.append(Timing(dict(config), timer(functools.partial(case.run, config), reps)))
        except Exception as exc:  # a candidate this GPU cannot run is reported, not fatal
            out.append(Timing(dict(config), error=f"{type(exc).__name__}: {exc}"))
    return out


@dataclass
class Choice:
    """The configuration chosen for one key: the fastest in total over the cases that share the key
    (layer norm and RMS norm rows of one length; add, gelu... of one itemsize), with every
    configuration's total seconds (only those that ran in every case)."""

    key: Key
    cases: list[Case]
    config: Config
    seconds: float
    totals: dict[tuple, float]


def choose(tunable: Tunable, timed: Sequence[tuple[Case, Sequence[Timing]]]) -> list[Choice]:
    """Group ``timed`` cases by their key and choose each key's configuration; a key none of whose
    configurations ran in all its cases raises an NbxValueError with the first errors."""
    groups: dict[str, list[tuple[Case, Sequence[Timing]]]] = {}
    for case, timings in timed:
        groups.setdefault(tunable.key(*case.args).text(), []).append((case, timings))
    out = []
    for text, group in groups.items():
        totals: dict[tuple, float] = {}
        counts: dict[tuple, int] = {}
        configs: dict[tuple, Config] = {}
        for _, timings in group:
            for t in timings:
                if t.seconds is not None:
                    f = tuple(sorted(t.config.items()))
                    totals[f] = totals.get(f, 0.0) + t.seconds
                    counts[f] = counts.get(f, 0) + 1
                    configs[f] = t.config
        totals = {f: v for f, v in totals.items() if counts[f] == len(group)}
        if not totals:
            errors = [t.error for _, timings in group for t in timings if t.error]
            raise NbxValueError(
                f"tuning {tunable.name} {text}: no candidate ran in every case on this GPU: " + "; ".join(errors[:3])
            )
        best = min(totals, key=totals.__getitem__)
        out.append(Choice(tunable.key(*group[0][0].args), [c for c, _ in group], configs[best], totals[best], totals))
    return out


def require_gpu(what: str) -> None:
    """Refuse to tune off the cuda backend: the interpreter's timings say nothing of a GPU's."""
    from .. import backend

    if backend.current() != "cuda":
        raise BackendError(
            f"{what}: tuning needs the cuda backend (a GPU), this process runs on "
            f"{backend.current()!r}; run it on the GPU you tune for"
        )


def tune(sweep: Sweep, shapes: Sequence[Shape] | None = None, dtype: str | None = None, reps: int = 20) -> list[Choice]:
    """Time every candidate of ``sweep`` at ``shapes`` (default: the sweep's) in ``dtype`` (default:
    the sweep's dtypes) and store each key's choice in the user cache. Needs the cuda backend."""
    require_gpu(f"tuning {sweep.tunable.plugin}.{sweep.tunable.name}")
    timed = [
        (case, measure(case, reps))
        for shape in shapes or sweep.shapes
        for dt in ([dtype] if dtype else sweep.dtypes)
        for case in sweep.cases(tuple(shape), dt)
    ]
    chosen = choose(sweep.tunable, timed)
    for c in chosen:
        source = f"nbx tune on {arch()}, {date.today().isoformat()}: {c.seconds * 1e3:.4f} ms over {len(c.cases)} cases"
        sweep.tunable.remember(c.key, c.config, source)
    return chosen


def parse_shapes(text: str) -> list[Shape]:
    """``"8192x4096,4096x32768"`` as [(8192, 4096), (4096, 32768)]."""
    try:
        shapes = [tuple(int(d) for d in part.split("x")) for part in text.split(",") if part.strip()]
    except ValueError:
        shapes = []
    if not shapes or any(d < 1 for s in shapes for d in s):
        raise NbxValueError(f"shapes {text!r}: write positive sizes joined by 'x', shapes by ',' (8192x4096,16x768)")
    return shapes
