"""Compile the ops at GPU-sized shapes and in every dtype, without a GPU: which would fail to launch.

    python scripts/compile_catalogue.py [FAMILY ...]

The tests use small shapes, and the kernels' tiles depend on the shape and dtype, so a configuration
that needs more shared memory than an SM has (or that a Triton version cannot compile) can pass
every test and still fail on the H200. This runs a catalogue of op calls (``CATALOGUE``: attention
in every dtype, mask kind, head dim and query length; float64 and half-type convolutions; FFT
lengths up to the longest plan; reductions and norms over long rows) on the aot backend, which
compiles each kernel for sm_90a and refuses one over the SM's shared memory, and prints every call
that failed. Run it under both Triton versions the project supports (3.6 is the H200's). Inputs are
uninitialised host tensors: nothing is computed. Exit status 1 when a call failed.
"""

from __future__ import annotations

import itertools
import os
import sys
from collections.abc import Callable, Iterator

if __name__ == "__main__":
    os.environ["NBX_BACKEND"] = "aot"

import nbx_core  # noqa: E402, F401, I001  (chooses how Triton runs before Triton is imported)
from nbx_core import dtypes as D  # noqa: E402
from nbx_core.backend import default_device  # noqa: E402
from nbx_core.registry import get_registry  # noqa: E402
from nbx_core.tensor import NBXTensor, empty_tensor  # noqa: E402

FLOATS = (D.float16, D.bfloat16, D.float32, D.float64)
Call = tuple[str, Callable[[], tuple[tuple, dict]]]


def T(*shape: int, dtype: D.DType = D.bfloat16) -> NBXTensor:
    """An uninitialised tensor where the backend's kernels read (the host on aot)."""
    return empty_tensor(shape, dtype, default_device())


def _attention() -> Iterator[Call]:
    for dt, mask, causal, L, E, gqa in itertools.product(
        FLOATS, (None, "bool", "float"), (False, True), (1, 70), (16, 80, 128, 256), (False, True)
    ):

        def args(dt=dt, mask=mask, causal=causal, L=L, E=E, gqa=gqa):
            m = None if mask is None else T(L, 300, dtype=D.bool_ if mask == "bool" else dt)
            return (
                T(2, 4, L, E, dtype=dt),
                T(2, 2 if gqa else 4, 300, E, dtype=dt),
                T(2, 2 if gqa else 4, 300, E, dtype=dt),
                m,
                0.0,
                causal,
            ), {"enable_gqa": gqa}

        yield "aten::scaled_dot_product_attention", args


def _conv() -> Iterator[Call]:
    for dt, (c, k, r, s, g) in itertools.product(
        FLOATS, [(3, 64, 7, 2, 1), (64, 64, 3, 1, 1), (64, 64, 3, 1, 64), (256, 512, 1, 2, 1), (512, 512, 3, 1, 1)]
    ):
        yield (
            "aten::conv2d",
            lambda dt=dt, c=c, k=k, r=r, s=s, g=g: (
                (
                    T(4, c, 28, 28, dtype=dt),
                    T(k, c // g, r, r, dtype=dt),
                    T(k, dtype=dt),
                    [s, s],
                    [r // 2] * 2,
                    [1, 1],
                    g,
                ),
                {},
            ),
        )
        yield (
            "aten::conv_transpose2d.input",
            lambda dt=dt, c=c, k=k, r=r, s=s, g=g: (
                (T(4, c, 14, 14, dtype=dt), T(c, k // g, r, r, dtype=dt), None, [s, s], [r // 2] * 2, [0, 0], g),
                {},
            ),
        )


def _spectral() -> Iterator[Call]:
    for e, (op, dt) in itertools.product(range(4, 20), (("aten::fft_rfft", D.float32), ("aten::fft_fft", D.complex64))):
        yield op, lambda e=e, op=op, dt=dt: ((T(2, 1 << e, dtype=dt),), {})
    for n in (400, 401, 1009, 65537):
        yield "aten::fft_fft", lambda n=n: ((T(2, n, dtype=D.complex64),), {})


def _rows() -> Iterator[Call]:
    for dt, (m, n) in itertools.product(FLOATS, [(64, 100), (16, 4096), (8, 32768), (2, 1 << 20)]):
        yield "aten::sum.dim_IntList", lambda dt=dt, m=m, n=n: ((T(m, n, dtype=dt), [1]), {})
        yield "aten::sum.dim_IntList", lambda dt=dt, m=m, n=n: ((T(m, n, dtype=dt), [0]), {})
        yield "aten::argmax", lambda dt=dt, m=m, n=n: ((T(m, n, dtype=dt), 1), {})
        yield "aten::var.correction", lambda dt=dt, m=m, n=n: ((T(m, n, dtype=dt), [1]), {"correction": 1})
        yield "aten::cumsum", lambda dt=dt, m=m, n=n: ((T(m, n, dtype=dt), 1), {})
        yield "aten::softmax.int", lambda dt=dt, m=m, n=n: ((T(m, n, dtype=dt), 1), {})
        yield "aten::layer_norm", lambda dt=dt, m=m, n=n: ((T(m, n, dtype=dt), [n], T(n, dtype=dt), T(n, dtype=dt)), {})
        yield "aten::sort", lambda dt=dt, m=m, n=n: ((T(m, n, dtype=dt), 1), {})
        yield "aten::topk", lambda dt=dt, m=m, n=n: ((T(m, n, dtype=dt), 5, 1), {})


CATALOGUE: dict[str, Callable[[], Iterator[Call]]] = {
    "attention": _attention,
    "conv": _conv,
    "spectral": _spectral,
    "rows": _rows,
}


def run(families: list[str]) -> list[str]:
    """Run the catalogue's calls of ``families``; the failures, one line each."""
    registry = get_registry()
    failed = []
    for family in families:
        for op, make in CATALOGUE[family]():
            args, kwargs = make()
            try:
                registry.lookup(op)(*args, **kwargs)
            except Exception as e:  # noqa: BLE001 - every failure is reported, the run goes on
                shapes = [list(a.shape) if isinstance(a, NBXTensor) else a for a in args]
                dtypes = sorted({a.dtype.name for a in args if isinstance(a, NBXTensor)})
                failed.append(f"{op} {shapes} {kwargs or ''} {dtypes}: {type(e).__name__}: {str(e)[:200]}")
    return failed


def main(argv: list[str]) -> int:
    families = argv[1:] or list(CATALOGUE)
    unknown = [f for f in families if f not in CATALOGUE]
    if unknown:
        print(f"compile_catalogue: unknown families {unknown}; choose from {list(CATALOGUE)}", file=sys.stderr)
        return 2
    failed = run(families)
    for line in failed:
        print(line)
    print(f"{len(failed)} failed", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
