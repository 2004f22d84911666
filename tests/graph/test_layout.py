"""Convolutions on channels-last activations, chosen at load (nbx_core.graph.layout)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from nbx_core.backend import kernel_device_type
from nbx_core.errors import GraphFormatError
from nbx_core.graph import load, read_graph
from nbx_core.graph.export import export_module
from nbx_core.testing import numeric


class _Block(torch.nn.Module):
    """A stem, a 3x3 convolution of 16 channels with a residual, a 4-D feature map and a pooled head."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 16, 3, padding=1)
        self.conv = torch.nn.Conv2d(16, 16, 3, padding=1, bias=False)
        self.head = torch.nn.Linear(16, 5)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = torch.relu(self.stem(x))
        z = torch.relu(self.conv(y) + y)
        return z, self.head(torch.nn.functional.adaptive_avg_pool2d(z, 1).flatten(1))


def _run(prog, *x: torch.Tensor) -> list[torch.Tensor]:
    out = prog(*x)
    return [torch.from_dlpack(t).cpu() for t in (out if isinstance(out, tuple | list) else [out])]


@pytest.mark.parametrize("memory_format", [torch.contiguous_format, torch.channels_last])
def test_programs_match_torch_and_return_torchs_layout(memory_format, tmp_path):
    torch.manual_seed(3)
    module = _Block().eval().to(memory_format=memory_format)
    x = torch.randn(2, 3, 6, 7).contiguous(memory_format=memory_format)
    path = export_module(module, (x,), tmp_path / "m.nbx")
    prog = load(path, device=kernel_device_type())
    assert prog.channels_last_convolutions == 2
    ops = [n.op for n in prog.graph.nodes]
    assert ops.count("nbx::channels_last") == 2 and ops[-1] == "aten::contiguous.default"
    # The 16-channel 3x3 weight is stored channels-last (K, R, S, C) and read through a permute.
    assert (16, 3, 3, 16) in [w.shape for w in prog.graph.weights]
    if not numeric():
        prog.check_compiles(x)  # aot: the converted program's kernels (epilogues included) compile
        return
    with torch.no_grad():
        want = module(x)
    for _ in range(2):  # recorded, then replayed from the plan
        got = _run(prog, x)
        for g, w in zip(got, want, strict=True):
            assert g.stride() == w.stride()
            torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5)
    # The second conversion finds the stem's result channels-last already: the only copies are the
    # image's and the feature map's back to NCHW, and none when torch ran channels-last.
    copies = prog.describe(x)["kernels"].get("_copy_kernel", 0)
    assert copies == (2 if memory_format == torch.contiguous_format else 0)


def test_without_fusion_the_graph_runs_as_written(tmp_path):
    module = _Block().eval()
    x = torch.randn(2, 3, 6, 7)
    prog = load(export_module(module, (x,), tmp_path / "m.nbx"), device=kernel_device_type(), fusion=False)
    assert prog.channels_last_convolutions == 0
    assert "nbx::channels_last" not in prog.graph.op_counts()


def test_an_input_written_in_place_keeps_its_readers(tmp_path):
    class _Writes(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 3, 1)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = self.conv(x)
            x.mul_(2.0)
            return y + x

    module = _Writes().eval()
    x = torch.randn(1, 3, 4, 4)
    prog = load(export_module(module, (x.clone(),), tmp_path / "m.nbx"), device=kernel_device_type())
    # torch.export records the write as a mutation of input x: the nodes after the conversion
    # still read x, not its channels-last copy.
    mul = next(n for n in prog.graph.nodes if n.op.startswith("aten::mul"))
    assert mul.reads()[0] == "x"
    if numeric():
        mine = x.clone().to(kernel_device_type())  # the write reaches the caller's tensor on its device
        got = _run(prog, mine)[0]
        with torch.no_grad():
            want = module(x.clone())
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(mine.cpu(), x * 2.0)


def test_graphs_without_convolutions_are_unchanged(tmp_path):
    module = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU()).eval()
    path = export_module(module, (torch.randn(2, 4),), tmp_path / "m.nbx")
    prog = load(path, device=kernel_device_type())
    assert prog.channels_last_convolutions == 0
    assert prog.graph.nodes == read_graph(path).nodes


def test_the_export_records_a_channels_last_output(tmp_path):
    conv = torch.nn.Conv2d(3, 4, 1).eval().to(memory_format=torch.channels_last)
    x = torch.randn(1, 3, 4, 4).contiguous(memory_format=torch.channels_last)
    path = export_module(conv, (x,), tmp_path / "cl.nbx")
    assert read_graph(path).outputs[0].memory_format == "channels_last"
    conv = torch.nn.Conv2d(3, 4, 1).eval()  # torch gives channels-last when either operand is
    path = export_module(conv, (x.contiguous(),), tmp_path / "nchw.nbx")
    assert read_graph(path).outputs[0].memory_format == "contiguous_format"


@pytest.mark.parametrize(
    "value,message",
    [
        ("channels_first", "is not one of contiguous_format, channels_last, channels_last_3d"),
        ("channels_last_3d", "needs a rank-5 output, this one has rank 4"),
    ],
)
def test_a_bad_output_memory_format_is_refused(value, message, tmp_path):
    conv = torch.nn.Conv2d(3, 4, 1).eval()
    path = export_module(conv, (torch.randn(1, 3, 4, 4),), tmp_path / "m.nbx")
    doc = json.loads((path / "graph.json").read_text())
    doc["outputs"][0]["memory_format"] = value
    (path / "graph.json").write_text(json.dumps(doc))
    with pytest.raises(GraphFormatError, match=message):
        read_graph(path)


def test_the_plan_says_how_many_convolutions_read_channels_last(tmp_path):
    module = _Block().eval()
    x = torch.randn(2, 3, 6, 7)
    prog = load(export_module(module, (x,), tmp_path / "m.nbx"), device=kernel_device_type())
    assert prog.describe(x)["channels_last_convolutions"] == 2  # describe compiles the plan on aot
    if numeric():
        with torch.no_grad():
            want = module(x)[1].numpy()
        np.testing.assert_allclose(_run(prog, x)[1].numpy(), want, rtol=1e-5, atol=1e-5)


class _Permuted(torch.nn.Module):
    """Whisper's encoder start in miniature: a permuted (B, C, T) feeds a residual stream."""

    def __init__(self) -> None:
        super().__init__()
        self.pos = torch.nn.Parameter(torch.randn(6, 8))
        self.proj = torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.permute(0, 2, 1) + self.pos
        return h + self.proj(torch.nn.functional.layer_norm(h, (8,)))


def test_inside_a_program_a_transposed_operand_does_not_lay_out_the_stream(tmp_path):
    # Eager torch (and an NBX op called alone) lays h out as x.permute(0, 2, 1) is, and the residual
    # add after it too; a Program makes both row-major (the runtime's choice of its values' layouts).
    module = _Permuted().eval()
    x = torch.randn(2, 8, 6)
    with torch.no_grad():
        want = module(x)
    assert not want.is_contiguous()
    prog = load(export_module(module, (x,), tmp_path / "m.nbx"), device=kernel_device_type())
    if not numeric():
        prog.check_compiles(x)
        return
    for _ in range(2):  # recorded, then replayed
        got = _run(prog, x)[0]
        assert got.is_contiguous()
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


class _GroupNormBlock(torch.nn.Module):
    """A diffusion UNet's block: convolution, group norm, SiLU, convolution."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.Conv2d(16, 16, 3, padding=1)
        self.norm = torch.nn.GroupNorm(4, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(torch.nn.functional.silu(self.norm(self.a(x)))).mean((2, 3))


class _Bias(torch.nn.Module):
    """An attention bias of one sample, laid out (heads innermost) like a channels-last tensor."""

    def forward(self, table: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return table.permute(2, 0, 1).unsqueeze(0) + mask


def test_a_program_keeps_channels_last_only_where_a_whole_operand_has_it(tmp_path):
    x = torch.randn(2, 3, 6, 5)
    prog = load(export_module(_GroupNormBlock().eval(), (x,), tmp_path / "gn.nbx"), device=kernel_device_type())
    # Group norm keeps its channels-last input's layout, so only the image is converted.
    assert prog.describe(x)["kernels"].get("_copy_kernel", 0) == 1
    table, mask = torch.randn(7, 7, 2), torch.randn(3, 1, 1, 7)
    prog = load(export_module(_Bias().eval(), (table, mask), tmp_path / "bias.nbx"), device=kernel_device_type())
    if numeric():
        got = _run(prog, table, mask)[0]
        assert got.is_contiguous()  # eager torch lays it out heads-innermost
        torch.testing.assert_close(got, _Bias()(table, mask))
