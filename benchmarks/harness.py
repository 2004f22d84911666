"""Benchmark harness: NBX against torch eager on one GPU, in the same process.

Each comparison warms both sides up, then alternates NBX and torch runs, timing each with CUDA
events, and reports medians two ways:

- device time (``nbx_ms``, ``torch_ms``, ``ratio``): the calls are queued behind a GPU sleep, so the
  host has enqueued them before the GPU reaches the first, and each event pair brackets only the
  GPU's work for one call, as when a model runs eagerly ahead of its GPU or replays a CUDA graph
  (``triton.testing.do_bench`` measures the same way). An op that synchronizes inside cannot hide
  its host time and is charged for it.
- one call from an idle GPU (``nbx_sync_ms``, ``torch_sync_ms``, ``ratio_sync``): the host time of
  the call (checks, allocation, launch) is inside the measurement, as for a lone call.

Host time per op is also measured on its own (``bench_core.host_overhead``). Inputs are random
(never zeros); pass lists of callables to rotate over several input sets when one set would fit in
L2 (50 MB on an H200). The harness measures its own ceilings first: device copy bandwidth (bytes
read + written) and cuBLAS bf16 throughput.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch

Fn = Callable[[], Any]


class Harness:
    """Times callables on the current CUDA device; collects one result dict per comparison."""

    def __init__(self, reps: int = 50, warmup: int = 5, quick: bool = False) -> None:
        self.reps = 10 if quick else reps
        self.warmup = 2 if quick else warmup
        self.results: list[dict[str, Any]] = []
        self.errors: list[dict[str, str]] = []
        self.ceilings: dict[str, float] = {}
        self._seed = 0
        self._sleep_cycles_per_ms: float | None = None

    # -- inputs ---------------------------------------------------------------------------------
    def randn(self, shape: Sequence[int], dtype: str = "bfloat16") -> torch.Tensor:
        """A random tensor on the GPU: normal floats, small integers, random bools."""
        self._seed += 1
        g = torch.Generator(device="cuda").manual_seed(self._seed)
        dt = getattr(torch, dtype)
        if dt == torch.bool:
            return torch.rand(tuple(shape), device="cuda", generator=g) > 0.5
        if dt.is_floating_point:
            return torch.randn(tuple(shape), device="cuda", generator=g, dtype=torch.float32).to(dt)
        return torch.randint(0, 100, tuple(shape), device="cuda", generator=g, dtype=dt)

    @staticmethod
    def nbx(t: torch.Tensor) -> Any:
        """A zero-copy NBXTensor viewing ``t`` (DLPack)."""
        import nbx_core

        return nbx_core.from_dlpack(t)

    # -- timing ---------------------------------------------------------------------------------
    def _time_once(self, fn: Fn) -> float:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end)

    def _sleep(self, ms: float) -> None:
        """Keep the GPU busy for about ``ms`` so that what the host queues next waits behind it."""
        if self._sleep_cycles_per_ms is None:
            torch.cuda.synchronize()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            cycles = 20_000_000
            start.record()
            torch.cuda._sleep(cycles)
            end.record()
            end.synchronize()
            self._sleep_cycles_per_ms = cycles / start.elapsed_time(end)
        torch.cuda._sleep(int(ms * self._sleep_cycles_per_ms))

    def _host_ms(self, fns: Sequence[Fn]) -> float:
        """Host milliseconds one call takes to return (the GPU kept busy, so no call waits for it)."""
        self._sleep(5.0)
        t = []
        for f in fns:
            t0 = time.perf_counter()
            f()
            t.append((time.perf_counter() - t0) * 1e3)
        torch.cuda.synchronize()
        return max(t)

    def _time_queued(self, a: Sequence[Fn], b: Sequence[Fn]) -> tuple[float, float]:
        """Median device milliseconds of ``a`` and ``b`` with every call queued behind a GPU sleep."""
        host = max(self._host_ms(a), self._host_ms(b))
        batch = max(1, min(self.reps, int(20.0 / max(2 * host, 1e-3))))
        ta, tb = [], []
        for lo in range(0, self.reps, batch):
            self._sleep(3 * batch * 2 * host + 1.0)
            events = []
            for i in range(lo, min(lo + batch, self.reps)):
                for times, fns in ((ta, a), (tb, b)):
                    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    start.record()
                    fns[i % len(fns)]()
                    end.record()
                    events.append((times, start, end))
            torch.cuda.synchronize()
            for times, start, end in events:
                times.append(start.elapsed_time(end))
        return statistics.median(ta), statistics.median(tb)

    def time_pair(self, a: Sequence[Fn], b: Sequence[Fn]) -> tuple[float, float, float, float]:
        """Median milliseconds of ``a`` and ``b``, alternating runs and rotating input sets:
        (a device, b device, a one call from idle, b one call from idle)."""
        for _ in range(self.warmup):
            for f in (*a, *b):
                f()
        torch.cuda.synchronize()
        ta, tb = [], []
        for i in range(self.reps):
            ta.append(self._time_once(a[i % len(a)]))
            tb.append(self._time_once(b[i % len(b)]))
        qa, qb = self._time_queued(a, b)
        return qa, qb, statistics.median(ta), statistics.median(tb)

    def compare(
        self,
        name: str,
        *,
        nbx: Fn | Sequence[Fn],
        torch: Fn | Sequence[Fn],
        shape: Any = None,
        dtype: str = "",
        bytes: float | None = None,
        flops: float | None = None,
        note: str = "",
    ) -> dict[str, Any] | None:
        """Time NBX against torch and record op, shapes, dtype, ms, ratio, GB/s or TFLOP/s, ceiling share.

        ``ratio`` is torch_ms / nbx_ms (device time): above 1 means NBX is faster; ``ratio_sync`` the
        same for one call from an idle GPU, host time included. Rates are from device time.
        """
        fa = list(nbx) if isinstance(nbx, Sequence) else [nbx]
        fb = list(torch) if isinstance(torch, Sequence) else [torch]
        try:
            nbx_ms, torch_ms, nbx_sync, torch_sync = self.time_pair(fa, fb)
        except Exception as e:  # a failing case is reported, and the other cases still run
            self.errors.append({"name": name, "error": f"{type(e).__name__}: {e}"})
            print(f"  {name}: FAILED {type(e).__name__}: {e}", flush=True)
            return None
        res: dict[str, Any] = {
            "op": name,
            "shape": shape,
            "dtype": dtype,
            "nbx_ms": round(nbx_ms, 5),
            "torch_ms": round(torch_ms, 5),
            "ratio": round(torch_ms / nbx_ms, 3),
            "nbx_sync_ms": round(nbx_sync, 5),
            "torch_sync_ms": round(torch_sync, 5),
            "ratio_sync": round(torch_sync / nbx_sync, 3),
            "note": note,
        }
        # Bytes per ms / 1e6 is GB/s, flops per ms / 1e9 TFLOP/s; each against its measured ceiling.
        for amount, unit, per_ms, ceiling in (
            (bytes, "GBps", 1e6, "copy_GBps"),
            (flops, "TFLOPs", 1e9, "bf16_mm_TFLOPs"),
        ):
            if amount:
                rate = amount / nbx_ms / per_ms
                res[f"nbx_{unit}"] = round(rate, 1)
                res[f"torch_{unit}"] = round(amount / torch_ms / per_ms, 1)
                if ceiling in self.ceilings:
                    res["ceiling_fraction"] = round(rate / self.ceilings[ceiling], 3)
        self.results.append(res)
        extra = f" {res.get('nbx_GBps', res.get('nbx_TFLOPs', ''))}"
        print(
            f"  {name} {shape} {dtype}: nbx {nbx_ms:.4f} ms torch {torch_ms:.4f} ms ratio {res['ratio']}{extra}"
            f" | one call: nbx {nbx_sync:.4f} torch {torch_sync:.4f} ratio {res['ratio_sync']}",
            flush=True,
        )
        return res

    def measure_ceilings(self) -> dict[str, float]:
        """Device copy bandwidth (read + write) and cuBLAS bf16 8192³ throughput, medians."""
        n = 1 << 28
        srcs = [torch.randn(n, device="cuda", dtype=torch.bfloat16) for _ in range(2)]
        dsts = [torch.empty_like(s) for s in srcs]
        fns = [lambda s=s, d=d: d.copy_(s) for s, d in zip(srcs, dsts, strict=True)]
        ms = self.time_pair(fns, fns)[0]
        self.ceilings["copy_GBps"] = round(2 * n * 2 / ms / 1e6, 1)
        m = 8192
        mats = [torch.randn(m, m, device="cuda", dtype=torch.bfloat16) for _ in range(2)]
        mm = [lambda: mats[0] @ mats[1]]
        ms = self.time_pair(mm, mm)[0]
        self.ceilings["bf16_mm_TFLOPs"] = round(2 * m**3 / ms / 1e9, 1)
        srcs.clear()
        dsts.clear()
        mats.clear()
        torch.cuda.empty_cache()
        return self.ceilings


def probe_main(
    doc: str, name: str, run: Callable[[Harness], None], argv: list[str] | None = None, reps: int = 20
) -> int:
    """The command line of a probe script (``python -m benchmarks.probe_<name> --out DIR``): times
    ``run(h)``'s comparisons and writes them to ``DIR/probe-<name>.json``."""
    import argparse
    import json
    from pathlib import Path

    p = argparse.ArgumentParser(description=doc)
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    import triton

    # Kernels that build tensor descriptors take their global memory from Triton's allocator.
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
    h = Harness(reps=reps)
    run(h)
    (args.out / f"probe-{name}.json").write_text(
        json.dumps({"gpu": torch.cuda.get_device_name(), "results": h.results, "errors": h.errors}, indent=1) + "\n"
    )
    return 0
