"""Execution plans: planned and fused runs equal node-by-node runs; the arena never aliases live values."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from nbx_core.backend import kernel_device_type
from nbx_core.graph import load
from nbx_core.graph.export import export_module
from nbx_core.graph.plan import Plan, Unplanned
from nbx_core.runtime import arena
from nbx_core.testing import numeric

from .conftest import write
from .models import CASES
from .torch_kernels import torch_registry

pytestmark = pytest.mark.skipif(not numeric(), reason="plans are compared by their values (cpu and cuda backends)")


def _outputs(value):
    return [v.numpy().copy() for v in (value if isinstance(value, tuple) else (value,))]


@pytest.mark.parametrize("model", list(CASES))
def test_planned_and_fused_runs_equal_node_by_node_runs(model, tmp_path):
    case = CASES[model]()
    path = export_module(
        case.module, case.args, tmp_path / f"{model}.nbx", case.dynamic_shapes, example_kwargs=case.kwargs
    )
    modes = {}
    for name, planning, fusion in (("nodes", False, False), ("planned", True, False), ("fused", True, True)):
        prog = load(path, device=kernel_device_type())
        prog.planning, prog.fusion = planning, fusion
        runs = []
        for args, kwargs in case.runs * 2:  # the second pass replays the plans the first made
            runs.append(_outputs(prog(*args, **kwargs)))
        modes[name] = runs
        if planning:
            plan = prog.plan_for(*case.runs[0][0], **case.runs[0][1])
            assert isinstance(plan, Plan), plan
    for name in ("planned", "fused"):
        for got, want in zip(modes[name], modes["nodes"], strict=True):
            for g, w in zip(got, want, strict=True):
                np.testing.assert_array_equal(g, w)


def test_a_replay_returns_fresh_outputs_and_takes_new_inputs(tmp_path):
    case = CASES["gpt_block"]()
    path = export_module(case.module, case.args, tmp_path / "g.nbx", case.dynamic_shapes)
    prog = load(path, device=kernel_device_type())
    x1, x2 = torch.randn(2, 5, 32), torch.randn(2, 5, 32)
    first = prog(x1)
    second = prog(x2)  # a replay
    assert isinstance(prog.plan_for(x1), Plan)
    assert first.storage is not second.storage
    with torch.no_grad():
        np.testing.assert_allclose(second.numpy(), case.module(x2).numpy(), rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(first.numpy(), case.module(x1).numpy(), rtol=1e-4, atol=1e-4)


def test_a_program_keeps_the_plans_of_its_latest_signatures(tmp_path, monkeypatch):
    import gc
    import weakref

    from nbx_core.graph import runner

    monkeypatch.setattr(runner, "PLANS_KEPT", 2)
    case = CASES["gpt_block"]()
    path = export_module(case.module, case.args, tmp_path / "g.nbx", case.dynamic_shapes)
    prog = load(path, device=kernel_device_type())
    xs = [torch.randn(2, n, 32) for n in (3, 4, 5)]
    want = [prog(xs[0]).numpy().copy()]
    first = weakref.ref(prog.plan_for(xs[0]))
    want += [prog(x).numpy().copy() for x in xs[1:]]
    gc.collect()
    assert prog.plan_for(xs[0]) is None and first() is None  # the least recently run of three: dropped
    assert all(isinstance(prog.plan_for(x), Plan) for x in xs[1:])
    prog(xs[1])  # now the most recently run: the next new signature drops xs[2]'s plan
    np.testing.assert_array_equal(prog(xs[0]).numpy(), want[0])
    assert prog.plan_for(xs[2]) is None
    assert isinstance(prog.plan_for(xs[1]), Plan)
    np.testing.assert_array_equal(prog(xs[2]).numpy(), want[2])


def test_a_run_steered_by_host_reads_is_not_planned(tmp_path, doc):
    # y = x * item(sum(x)): the scale is read back to the host during the run.
    doc["nodes"] = [
        {"name": "s", "op": "aten::sum.default", "args": [{"ref": "x"}], "kwargs": {}, "outputs": ["s"]},
        {
            "name": "v",
            "op": "aten::_local_scalar_dense.default",
            "args": [{"ref": "s"}],
            "kwargs": {},
            "outputs": ["v"],
        },
        {
            "name": "relu",
            "op": "aten::mul.Tensor",
            "args": [{"ref": "x"}, {"ref": "v"}],
            "kwargs": {},
            "outputs": ["relu"],
        },
    ]
    prog = load(write(tmp_path / "h.nbx", doc), device=kernel_device_type())
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    np.testing.assert_allclose(prog(x).numpy(), x * x.sum())
    plan = prog.plan_for(x)
    assert isinstance(plan, Unplanned) and "host" in plan.reason
    np.testing.assert_allclose(prog(-x).numpy(), x * x.sum())


def test_kernels_that_compute_outside_nbx_are_not_replayed(tmp_path):
    registry = torch_registry()
    path = export_module(CASES["gpt_block"]().module, (torch.randn(2, 5, 32),), tmp_path / "t.nbx", registry=registry)
    prog = load(path, registry=registry, device="cpu")
    x1, x2 = np.random.default_rng(0).standard_normal((2, 2, 5, 32), dtype=np.float32)
    a = prog(x1).numpy().copy()
    b = prog(x2).numpy().copy()
    assert isinstance(prog.plan_for(x1), Unplanned)
    assert not np.array_equal(a, b)


@given(st.lists(st.tuples(st.integers(1, 5000), st.integers(0, 40), st.integers(1, 20)), min_size=1, max_size=40))
def test_the_arena_never_overlaps_buffers_alive_at_once(buffers):
    sizes = [s for s, _, _ in buffers]
    lifetimes = [(start, start + length) for _, start, length in buffers]
    offsets, total = arena.place(sizes, lifetimes)
    for i in range(len(sizes)):
        assert offsets[i] % arena.ALIGN == 0 and offsets[i] + sizes[i] <= total
        for j in range(i):
            alive_together = lifetimes[i][0] < lifetimes[j][1] and lifetimes[j][0] < lifetimes[i][1]
            if alive_together:
                assert offsets[i] + sizes[i] <= offsets[j] or offsets[j] + sizes[j] <= offsets[i]
    peak = max(
        sum(
            -(-sizes[i] // arena.ALIGN) * arena.ALIGN
            for i in range(len(sizes))
            if lifetimes[i][0] <= t < lifetimes[i][1]
        )
        for t in range(61)
    )
    assert total <= 2 * peak


def test_batch_norm_folds_into_the_convolution_and_relu_runs_in_its_epilogue(tmp_path):
    # Each conv -> BN -> ReLU chain of the CNN becomes one convolution launch: the inference batch
    # norm folds into the convolution's weights at load, the ReLU is its epilogue.
    case = CASES["cnn"]()
    path = export_module(case.module, case.args, tmp_path / "cnn.nbx", case.dynamic_shapes)
    prog = load(path, device=kernel_device_type())
    for _ in range(2):
        prog(*case.args)
    plan = prog.describe(*case.args)
    assert plan["folded_batch_norms"] == 2 and plan["fused"]["epilogues"] == 2, plan
    assert plan["kernels"]["_conv_kernel"] == 2 and "_pointwise_kernel" not in plan["kernels"], plan
    np.testing.assert_allclose(
        _outputs(prog(*case.args))[0], case.module(*case.args).detach().numpy(), rtol=1e-5, atol=1e-5
    )


def test_without_fusion_batch_norm_runs_as_written(tmp_path):
    case = CASES["cnn"]()
    path = export_module(case.module, case.args, tmp_path / "cnn.nbx", case.dynamic_shapes)
    prog = load(path, device=kernel_device_type(), fusion=False)
    assert prog.describe(*case.args)["folded_batch_norms"] == 0
    assert sum(node.op.startswith("aten::batch_norm") for node in prog.graph.nodes) == 2
    np.testing.assert_allclose(
        _outputs(prog(*case.args))[0], case.module(*case.args).detach().numpy(), rtol=1e-5, atol=1e-5
    )


class _ConvBlocks(torch.nn.Module):
    """Convolutions of every kind the epilogue meets, each followed by batch norm and an activation."""

    def __init__(self, variant: str) -> None:
        super().__init__()
        nn = torch.nn
        self.variant = variant
        if variant == "grouped_with_bias":
            self.conv = nn.Conv2d(8, 12, 3, padding=1, groups=4, bias=True)
            self.bn = nn.BatchNorm2d(12)
        elif variant == "transposed":
            self.conv = nn.ConvTranspose2d(8, 6, 3, stride=2, padding=1, output_padding=1)
            self.bn = nn.BatchNorm2d(6)
        elif variant == "3d":
            self.conv = nn.Conv3d(8, 6, 3, padding=1, bias=False)
            self.bn = nn.BatchNorm3d(6)
        elif variant == "residual":  # conv -> BN, plus the input, then ReLU (ResNet's block end)
            self.conv = nn.Conv2d(8, 8, 1, bias=False)
            self.bn = nn.BatchNorm2d(8)
        else:  # residual_without_bn: an epilogue the convolution takes
            self.conv = nn.Conv2d(8, 8, 3, padding=1, bias=True)
            self.bn = nn.Identity()
            return
        self.bn.running_mean.uniform_(-0.5, 0.5)
        self.bn.running_var.uniform_(0.5, 2.0)
        self.bn.weight.data.uniform_(0.5, 1.5)
        self.bn.bias.data.uniform_(-0.5, 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.bn(self.conv(x))
        return torch.relu(y + x) if self.variant.startswith("residual") else torch.nn.functional.silu(y)


# (batch norms folded, epilogues) of each variant. A batch norm after a transposed convolution
# stays, and with its per-channel operands the chain is no epilogue (see _ConvEpilogue); the others
# fold, and the residual chains (the residual read at the output's own indices) become the
# epilogue. Whether a lone final SiLU does differs by backend (None: not compared).
_EPILOGUES = {
    "grouped_with_bias": (1, None),
    "transposed": (0, 0),
    "3d": (1, None),
    "residual": (1, 1),
    "residual_without_bn": (0, 1),
}


@pytest.mark.parametrize("variant", list(_EPILOGUES))
def test_convolution_epilogues_match_torch(variant, tmp_path):
    torch.manual_seed(5)
    module = _ConvBlocks(variant).eval()
    x = torch.randn(2, 8, 4, 5, 6) if variant == "3d" else torch.randn(2, 8, 6, 7)
    path = export_module(module, (x,), tmp_path / f"{variant}.nbx")
    prog = load(path, device=kernel_device_type())
    with torch.no_grad():
        want = module(x).numpy()
    for _ in range(2):  # the first run records the plan, the second replays it fused
        np.testing.assert_allclose(_outputs(prog(x))[0], want, rtol=1e-5, atol=1e-5)
    about = prog.describe(x)
    folded, epilogues = _EPILOGUES[variant]
    assert about["folded_batch_norms"] == folded, about
    assert epilogues is None or about["fused"]["epilogues"] == epilogues, about


class _BiasAfterMatmul(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(6, 5))
        self.b = torch.nn.Parameter(torch.randn(5))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(torch.matmul(x, self.w) + self.b)


def test_an_epilogue_takes_its_shapes_and_strides_spread_out(tmp_path):
    # The bias broadcasts over the product's rows with strides (0, 1). Triton 3.6 loses such an int-1
    # entry of a tuple nested in the epilogue's argument across the kernel's loops, so ``epi`` holds
    # no tuple; the epilogue's source rebuilds them.
    torch.manual_seed(2)
    module = _BiasAfterMatmul()
    x = torch.randn(2, 3, 6)
    prog = load(export_module(module, (x,), tmp_path / "bias.nbx"), device=kernel_device_type())
    with torch.no_grad():
        want = module(x).numpy()
    for _ in range(2):
        np.testing.assert_allclose(_outputs(prog(x))[0], want, rtol=1e-5, atol=1e-5)
    fused = [op for op in prog.plan_for(x).ops if getattr(op, "kwargs", {}).get("EPI") is not None]
    assert len(fused) == 1
    epi = next(a for a in fused[0].args if type(a) is tuple and len(a) > 4)
    assert not any(type(v) is tuple for v in epi), epi
    assert any(epi[i : i + 2] == (0, 1) for i in range(len(epi) - 1)), epi  # the bias's strides, spread


class _Head(torch.nn.Module):
    """Small temporaries, then one wide output: a language model's last layers in miniature."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b, self.head = torch.nn.Linear(64, 64), torch.nn.Linear(64, 64), torch.nn.Linear(64, 512)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.nn.functional.gelu(self.b(torch.relu(self.a(x)))))


def test_a_cuda_graphs_block_reuses_the_outputs_bytes_without_overlapping_live_values(tmp_path):
    x = torch.randn(32, 64)
    prog = load(export_module(_Head().eval(), (x,), tmp_path / "head.nbx"), device=kernel_device_type())
    prog(x)
    plan = prog.plan_for(x)
    storages = plan._graph_storages()  # the layout a CUDA graph captures over (here on host memory)

    def address(storage) -> int:
        return storage.ptr if hasattr(storage, "ptr") else storage.array.__array_interface__["data"][0]

    spans = {i: (address(storages[i]), storages[i].nbytes) for i in plan._lifetimes}
    for i, j in ((i, j) for i in spans for j in spans if i < j):
        (a, n), (b, m) = spans[i], spans[j]
        (s0, e0), (s1, e1) = plan._lifetimes[i], plan._lifetimes[j]
        if s0 < e1 and s1 < e0:
            assert a + n <= b or b + m <= a, (i, j)
    out_bytes = sum(nbytes for _, nbytes, _ in plan.fresh)
    assert out_bytes == 32 * 512 * 4
    assert plan.graph_bytes < plan.arena_bytes + out_bytes  # temporaries reused the output's bytes


def test_temporaries_live_in_an_output_written_after_them(tmp_path, monkeypatch):
    from nbx_core.graph import plan as plans

    monkeypatch.setattr(plans, "HOSTED_MIN_BYTES", 0)  # the real threshold is megabytes
    module = _Head().eval()
    prog = load(export_module(module, (torch.randn(32, 64),), tmp_path / "head.nbx"), device=kernel_device_type())
    xs = [torch.randn(32, 64) for _ in range(3)]
    outs = [prog(x) for x in xs]  # recorded, then two replays
    plan = prog.plan_for(xs[0])
    assert plan.hosted and plan.describe()["temporaries_in_outputs"] == len(plan.hosted)
    out = next(index for index, _, _ in plan.fresh)
    assert {o for o, _ in plan.hosted.values()} == {out}
    # Each run's temporaries used that run's output: earlier results are intact.
    with torch.no_grad():
        for x, got in zip(xs, outs, strict=True):
            np.testing.assert_allclose(got.numpy(), module(x).numpy(), rtol=1e-5, atol=1e-5)


def test_small_savings_keep_temporaries_in_the_arena(tmp_path):
    x = torch.randn(32, 64)
    prog = load(export_module(_Head().eval(), (x,), tmp_path / "head.nbx"), device=kernel_device_type())
    prog(x)
    assert prog.plan_for(x).hosted == {}  # kilobytes saved: not worth a pointer patch per launch


class _Heads(torch.nn.Module):
    """Attention as transformers writes it: heads split off, attended, merged back and projected."""

    def __init__(self) -> None:
        super().__init__()
        self.qkv, self.out = torch.nn.Linear(32, 96), torch.nn.Linear(32, 32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        q, k, v = (t.view(b, s, 4, 8).transpose(1, 2) for t in self.qkv(x).split(32, dim=-1))
        y = torch.nn.functional.scaled_dot_product_attention(q, k, v)
        return self.out(y.transpose(1, 2).reshape(b, s, 32))


def test_attention_heads_merge_back_without_a_copy(tmp_path):
    torch.manual_seed(6)
    module, x = _Heads().eval(), torch.randn(2, 5, 32)
    prog = load(export_module(module, (x,), tmp_path / "heads.nbx"), device=kernel_device_type())
    with torch.no_grad():
        want = module(x).numpy()
    for _ in range(2):
        np.testing.assert_allclose(prog(x).numpy(), want, rtol=1e-5, atol=1e-5)
    # Inside a program attention writes each position's heads side by side, so the reshape back to
    # (batch, sequence, features) is a view: the plan copies nothing.
    kernels = prog.describe(x)["kernels"]
    assert "_copy_kernel" not in kernels and "_attn_fwd_kernel" in kernels, kernels


class _MaskedLayers(torch.nn.Module):
    """Two attention layers reading one padding mask, as every layer of an encoder does."""

    def __init__(self, in_place: bool) -> None:
        super().__init__()
        self.a, self.b = torch.nn.Linear(16, 48), torch.nn.Linear(16, 48)
        self.in_place = in_place

    def _attend(self, layer: torch.nn.Linear, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        q, k, v = (t.view(b, s, 2, 8).transpose(1, 2) for t in layer(x).split(16, dim=-1))
        y = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return y.transpose(1, 2).reshape(b, s, 16)

    def forward(self, x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        mask = keep[:, None, None, :].expand(-1, 1, keep.shape[1], -1)
        h = self._attend(self.a, x, mask)
        if self.in_place:
            h.mul_(0.5)
        return self._attend(self.b, h, mask)


@pytest.mark.parametrize("in_place", [False, True])
def test_a_mask_every_layer_reads_is_summarised_once_per_run(in_place, tmp_path):
    torch.manual_seed(7)
    module = _MaskedLayers(in_place).eval()
    x, keep = torch.randn(2, 80, 16), torch.ones(2, 80, dtype=torch.bool)
    keep[1, 60:] = False  # 80 keys: more than one key block, so the mask is summarised
    prog = load(export_module(module, (x, keep), tmp_path / "masked.nbx"), device=kernel_device_type())
    with torch.no_grad():
        want = module(x, keep).numpy()
    for _ in range(2):
        np.testing.assert_allclose(prog(x, keep).numpy(), want, rtol=1e-5, atol=1e-5)
    # A graph that writes in place gives up the reuse: a write could change what was summarised.
    assert prog.describe(x, keep)["kernels"]["_mask_blocks_kernel"] == (2 if in_place else 1)
