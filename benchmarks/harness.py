"""Benchmark harness: NBX against torch eager on one GPU, in the same process.

Each comparison warms both sides up, then alternates NBX and torch runs, timing each with CUDA
events, and reports medians. Inputs are random (never zeros); pass lists of callables to rotate
over several input sets when one set would fit in L2 (50 MB on an H200). The harness measures its
own ceilings first: device copy bandwidth (bytes read + written) and cuBLAS bf16 throughput.
"""

from __future__ import annotations

import statistics
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

    def time_pair(self, a: Sequence[Fn], b: Sequence[Fn]) -> tuple[float, float]:
        """Median milliseconds of ``a`` and ``b``, alternating runs and rotating input sets."""
        for _ in range(self.warmup):
            for f in (*a, *b):
                f()
        torch.cuda.synchronize()
        ta, tb = [], []
        for i in range(self.reps):
            ta.append(self._time_once(a[i % len(a)]))
            tb.append(self._time_once(b[i % len(b)]))
        return statistics.median(ta), statistics.median(tb)

    def compare(self, name: str, *, nbx: Fn | Sequence[Fn], torch: Fn | Sequence[Fn], shape: Any = None,
                dtype: str = "", bytes: float | None = None, flops: float | None = None,
                note: str = "") -> dict[str, Any] | None:
        """Time NBX against torch and record op, shapes, dtype, ms, ratio, GB/s or TFLOP/s, ceiling share.

        ``ratio`` is torch_ms / nbx_ms: above 1 means NBX is faster.
        """
        fa = list(nbx) if isinstance(nbx, Sequence) else [nbx]
        fb = list(torch) if isinstance(torch, Sequence) else [torch]
        try:
            nbx_ms, torch_ms = self.time_pair(fa, fb)
        except Exception as e:  # a failing case is reported, and the other cases still run
            self.errors.append({"name": name, "error": f"{type(e).__name__}: {e}"})
            print(f"  {name}: FAILED {type(e).__name__}: {e}", flush=True)
            return None
        res: dict[str, Any] = {
            "op": name, "shape": shape, "dtype": dtype, "nbx_ms": round(nbx_ms, 5),
            "torch_ms": round(torch_ms, 5), "ratio": round(torch_ms / nbx_ms, 3), "note": note,
        }
        if bytes:
            gbps = bytes / nbx_ms / 1e6
            res["nbx_GBps"] = round(gbps, 1)
            res["torch_GBps"] = round(bytes / torch_ms / 1e6, 1)
            if "copy_GBps" in self.ceilings:
                res["ceiling_fraction"] = round(gbps / self.ceilings["copy_GBps"], 3)
        if flops:
            tf = flops / nbx_ms / 1e9
            res["nbx_TFLOPs"] = round(tf, 1)
            res["torch_TFLOPs"] = round(flops / torch_ms / 1e9, 1)
            if "bf16_mm_TFLOPs" in self.ceilings:
                res["ceiling_fraction"] = round(tf / self.ceilings["bf16_mm_TFLOPs"], 3)
        self.results.append(res)
        extra = f" {res.get('nbx_GBps', res.get('nbx_TFLOPs', ''))}"
        print(f"  {name} {shape} {dtype}: nbx {nbx_ms:.4f} ms torch {torch_ms:.4f} ms ratio {res['ratio']}{extra}",
              flush=True)
        return res

    def measure_ceilings(self) -> dict[str, float]:
        """Device copy bandwidth (read + write) and cuBLAS bf16 8192³ throughput, medians."""
        n = 1 << 28
        srcs = [torch.randn(n, device="cuda", dtype=torch.bfloat16) for _ in range(2)]
        dsts = [torch.empty_like(s) for s in srcs]
        fns = [lambda s=s, d=d: d.copy_(s) for s, d in zip(srcs, dsts, strict=True)]
        ms, _ = self.time_pair(fns, fns)
        self.ceilings["copy_GBps"] = round(2 * n * 2 / ms / 1e6, 1)
        m = 8192
        mats = [torch.randn(m, m, device="cuda", dtype=torch.bfloat16) for _ in range(2)]
        mm = [lambda: mats[0] @ mats[1]]
        ms, _ = self.time_pair(mm, mm)
        self.ceilings["bf16_mm_TFLOPs"] = round(2 * m**3 / ms / 1e9, 1)
        srcs.clear()
        dsts.clear()
        mats.clear()
        torch.cuda.empty_cache()
        return self.ceilings
