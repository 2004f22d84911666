"""The tuning harness: time a tunable's candidate configurations on the GPU and keep the fastest.

A plugin that tunes keeps its sweeps in a ``tuning`` module next to its plugin module
(``nbx_norm.tuning`` beside ``nbx_norm.plugin``): ``SWEEPS``, a list of :class:`Sweep`. A sweep
names a :class:`~nbx_core.runtime.tuning.Tunable`, the shapes it is tuned at by default, and how to
build a :class:`Case` for a shape: inputs (random normal values: zeros would flatter the GPU's
clocks), the lookup arguments of the launch and the candidates to try. :func:`measure` times every
candidate of a case through the launcher's ``config=``; ``nbx tune`` keeps each case's fastest in
the user cache (:func:`tune`), and ``benchmarks/sweep.py`` times the same cases against torch and
writes the winners into the plugins' tables.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

import numpy as np

from ..errors import BackendError, NbxValueError
from ..tensor import NBXTensor
from .tuning import Config, Tunable, arch

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
    meaning ``shape_doc`` gives, e.g. "rows x columns"); ``shapes`` are tuned when none are given."""

    tunable: Tunable
    shapes: Sequence[Shape]
    cases: Callable[[Shape, str], list[Case]]
    shape_doc: str
    dtype: str = "bfloat16"


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


def measure(case: Case, reps: int = 20,
            timer: Callable[[Callable[[], Any], int], float] = wall_clock) -> list[Timing]:
    """Every candidate of ``case`` timed by ``timer``."""
    out = []
    for config in case.candidates:
        try:
            out.append(Timing(dict(config), timer(lambda c=config: case.run(c), reps)))
        except Exception as exc:  # a candidate this GPU cannot run is reported, not fatal
            out.append(Timing(dict(config), error=f"{type(exc).__name__}: {exc}"))
    return out


def fastest(timings: Sequence[Timing]) -> Timing | None:
    """The fastest timing that ran, or None."""
    ran = [t for t in timings if t.seconds is not None]
    return min(ran, key=lambda t: t.seconds) if ran else None


def require_gpu(what: str) -> None:
    """Refuse to tune off the cuda backend: the interpreter's timings say nothing of a GPU's."""
    from .. import backend

    if backend.current() != "cuda":
        raise BackendError(f"{what}: tuning needs the cuda backend (a GPU), this process runs on "
                           f"{backend.current()!r}; run it on the GPU you tune for")


def tune(sweep: Sweep, shapes: Sequence[Shape] | None = None, dtype: str | None = None, reps: int = 20,
         report: Callable[[Case, list[Timing], Timing], None] | None = None) -> list[tuple[Case, Timing]]:
    """Time every candidate of ``sweep`` at ``shapes`` (default: the sweep's) and store each case's
    fastest in the user cache; returns (case, fastest) pairs. Needs the cuda backend."""
    require_gpu(f"tuning {sweep.tunable.plugin}.{sweep.tunable.name}")
    gpu = arch()
    won = []
    for shape in shapes or sweep.shapes:
        for case in sweep.cases(tuple(shape), dtype or sweep.dtype):
            timings = measure(case, reps)
            best = fastest(timings)
            if best is None:
                raise NbxValueError(f"tuning {sweep.tunable.name} {case.label}: no candidate ran on this GPU: "
                                    + "; ".join(t.error or "" for t in timings[:3]))
            source = f"nbx tune on {gpu}, {date.today().isoformat()}: {best.seconds * 1e3:.4f} ms"
            sweep.tunable.remember(sweep.tunable.key(*case.args), best.config, source)
            if report:
                report(case, timings, best)
            won.append((case, best))
    return won


def parse_shapes(text: str) -> list[Shape]:
    """``"8192x4096,4096x32768"`` as [(8192, 4096), (4096, 32768)]."""
    try:
        shapes = [tuple(int(d) for d in part.split("x")) for part in text.split(",") if part.strip()]
    except ValueError:
        shapes = []
    if not shapes or any(d < 1 for s in shapes for d in s):
        raise NbxValueError(f"shapes {text!r}: write positive sizes joined by 'x', shapes by ',' (8192x4096,16x768)")
    return shapes
