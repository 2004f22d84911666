"""Core benchmarks: strided copy/cast and the per-op host overhead against Triton and torch."""

from __future__ import annotations

import time

import torch


def _host_us(fn, n: int = 2000) -> float:
    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    elapsed = time.perf_counter() - t
    torch.cuda.synchronize()
    return elapsed / n * 1e6


def run(h) -> None:
    from nbx_core.ops.copy import _to_copy, contiguous

    n = 1 << 28
    xs = [h.randn((n,), "bfloat16") for _ in range(2)]
    X = [h.nbx(x) for x in xs]
    h.compare(
        "cast bf16->f32",
        nbx=[lambda x=x: _to_copy(x, dtype="float32") for x in X],
        torch=[lambda x=x: x.float() for x in xs],
        shape=(n,),
        dtype="bfloat16",
        bytes=n * 6,
    )
    m = h.randn((16384, 16384), "bfloat16")
    M = h.nbx(m)
    h.compare(
        "contiguous(transpose)",
        nbx=lambda: contiguous(M.t()),
        torch=lambda: m.t().contiguous(),
        shape=(16384, 16384),
        dtype="bfloat16",
        bytes=16384 * 16384 * 4,
    )
    host_overhead(h)
    graph_capture(h)


def graph_capture(h) -> None:
    """End-to-end time of the example encoder block with and without CUDA-graph capture."""
    from pathlib import Path

    import nbx_core

    prog = nbx_core.load(Path(__file__).parents[1] / "examples" / "encoder_block.nbx")
    x = h.nbx(h.randn((2, 8, 32), "float32"))
    mask = h.nbx(torch.zeros((2, 8), dtype=torch.bool, device="cuda"))
    captured = prog.capture(src=x, src_key_padding_mask=mask)
    # One call from an idle GPU: what capture saves is host time, which device time would hide.
    plain_ms, captured_ms = h.time_pair(
        [lambda: prog(src=x, src_key_padding_mask=mask)], [lambda: captured(src=x, src_key_padding_mask=mask)]
    )[2:]
    row = {
        "op": "encoder_block end to end",
        "nodes": len(prog.graph.nodes),
        "plain_ms": round(plain_ms, 4),
        "captured_ms": round(captured_ms, 4),
        "speedup": round(plain_ms / captured_ms, 2),
    }
    print(f"  {row}", flush=True)
    h.results.append(row)


def host_overhead(h) -> None:
    """Host microseconds per small op: NBX through the registry; Triton launching the same kernel
    (NBX's pointwise kernel, the same arguments, its output allocated beforehand); a minimal Triton
    add kernel; torch eager."""
    import triton
    import triton.language as tl

    from nbx_core.registry import get_registry
    from nbx_core.runtime import pointwise as pw

    @triton.jit
    def _add(a, b, c, n, BLOCK: tl.constexpr):
        i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = i < n
        tl.store(c + i, tl.load(a + i, mask=m) + tl.load(b + i, mask=m), mask=m)

    a, b = h.randn((1024,), "float32"), h.randn((1024,), "float32")
    c = torch.empty_like(a)
    A, B = h.nbx(a), h.nbx(b)
    reg = get_registry()
    rows = {
        "triton_minimal_add_us": _host_us(lambda: _add[(1,)](a, b, c, 1024, BLOCK=1024)),
        "torch_add_us": _host_us(lambda: torch.add(a, b)),
    }
    try:
        add = reg.lookup("aten::add")
        rows["nbx_add_registry_us"] = _host_us(lambda: reg.call("aten::add", A, B))
        rows["nbx_add_direct_us"] = _host_us(lambda: add(A, B))
        plan = next(p for k, p in pw._plans.items() if k[0] == "aten::add" and k[6][0][1] == (1024,))
        prep = plan.run
        targs = list(prep.args)
        for pos, v in zip(prep.varying, (c, a, b, c, c, ()), strict=True):
            targs[pos] = v
        kernel = prep.kernel[prep.grid]
        rows["triton_same_kernel_us"] = _host_us(lambda: kernel(*targs, **prep.kwargs))
        out = add(A, B)
        rows["nbx_prepared_launch_only_us"] = _host_us(lambda: prep(out, A, B, out, out, ()))
    except Exception as e:  # nbx-elementwise missing: the core copy stands in
        rows["nbx_add_error"] = f"{type(e).__name__}: {e}"
    from nbx_core.ops.copy import clone
    from nbx_core.tensor import empty_tensor

    rows["nbx_alloc_us"] = _host_us(lambda: empty_tensor((1024,), A.dtype, A.device))
    rows["nbx_clone_us"] = _host_us(lambda: clone(A))
    rows["torch_clone_us"] = _host_us(lambda: a.clone())
    for k, v in rows.items():
        print(f"  {k}: {v if isinstance(v, str) else round(v, 2)}", flush=True)
    h.results.append(
        {"op": "host_overhead", **{k: (round(v, 2) if isinstance(v, float) else v) for k, v in rows.items()}}
    )
