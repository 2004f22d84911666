"""Mixture-of-experts decoders on transformers' default experts path: histc counts the tokens per
expert and a grouped product multiplies each expert's tokens (aten::_grouped_mm, or in float32
transformers' own grouped_mm_fallback op, which the importer renames to it). Mixtral is in the
model zoo (tests/models/test_zoo.py); here Qwen2-MoE and OLMoE too, and Mixtral in bfloat16, each
compared with torch on its first run and on the plan's replay. The configs have as many key/value
heads as heads, so that they export with a dynamic sequence before torch 2.12 too (see test_zoo).

On the aot backend every kernel the models launch compiles for the target GPU, and no value is
compared.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from nbx_core.backend import kernel_device_type
from nbx_core.graph import load, read_graph
from nbx_core.graph.aliases import canonical
from nbx_core.graph.export import export
from nbx_core.testing import assert_close, numeric, zoo

transformers = pytest.importorskip("transformers")

_SHARED = {
    "vocab_size": 64,
    "hidden_size": 32,
    "num_hidden_layers": 1,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "num_experts_per_tok": 2,
    "use_cache": False,
    "max_position_embeddings": 128,
}
_MODELS: dict[str, tuple[str, str, dict[str, Any]]] = {
    # A shared expert beside the routed ones, gated by a sigmoid.
    "qwen2_moe": (
        "Qwen2MoeConfig",
        "Qwen2MoeForCausalLM",
        {
            "num_experts": 4,
            "intermediate_size": 64,
            "moe_intermediate_size": 32,
            "shared_expert_intermediate_size": 64,
            "decoder_sparse_step": 1,
        },
    ),
    # Query/key norms; routing weights not renormalised over the chosen experts.
    "olmoe": ("OlmoeConfig", "OlmoeForCausalLM", {"num_experts": 4, "intermediate_size": 32}),
}


class _Logits(torch.nn.Module):
    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=input_ids, use_cache=False).logits


def _model(name: str) -> torch.nn.Module:
    config, model, extra = _MODELS[name]
    cfg = getattr(transformers, config)(**_SHARED, **extra)
    cfg._attn_implementation = "sdpa"
    torch.manual_seed(0)
    return _Logits(getattr(transformers, model)(cfg)).eval()


def _ops(ep: torch.export.ExportedProgram) -> set[str]:
    return {str(n.target) for n in ep.graph.nodes if n.op == "call_function"}


def _run(
    module: torch.nn.Module,
    inputs: list[dict[str, torch.Tensor]],
    dtype: torch.dtype,
    tmp_path,
    rtol: float,
    atol: float,
) -> set[str]:
    """Export ``module`` at the first inputs (sequence dynamic), run each on NBX twice (first run,
    then the plan's replay) against torch; returns the ops of the exported graph and of NBX's."""
    seq = torch.export.Dim("seq", min=2, max=2048)
    with torch.no_grad():
        ep = torch.export.export(module, (), inputs[0], dynamic_shapes={"input_ids": {1: seq}})
    path = export(ep, tmp_path / "moe.nbx")
    ops = _ops(ep) | {n.op for n in read_graph(path).nodes}
    prog = load(path, device=kernel_device_type())
    if not numeric():
        for x in inputs:
            prog.check_compiles(**x)
        return ops
    for x in inputs:
        where = f"{dtype} {tuple(x['input_ids'].shape)}"
        with torch.no_grad():
            want = module(**x)
        tol = {"rtol": rtol, "atol": atol * max(1.0, want.abs().max().item())}
        assert_close(prog(**x), want, what=f"{where}, first run", **tol)  # runs node by node, records a plan
        assert_close(prog(**x), want, what=f"{where}, plan replay", **tol)
    return ops


def _ids(seq: int) -> dict[str, torch.Tensor]:
    return {"input_ids": torch.randint(0, 64, (2, seq), generator=torch.Generator().manual_seed(seq))}


@pytest.mark.parametrize("name", sorted(_MODELS))
def test_moe_decoder_matches_torch(name: str, tmp_path) -> None:
    ops = _run(_model(name), [_ids(12), _ids(9)], torch.float32, tmp_path, 1e-4, 1e-5)
    # float32 experts call transformers' fallback op, which NBX's graph holds as aten::_grouped_mm.
    assert {"aten.histc.default", "transformers.grouped_mm_fallback.default", "aten::_grouped_mm.default"} <= ops


def test_mixtral_in_bfloat16_runs_aten_grouped_mm(tmp_path) -> None:
    module, inputs, _ = zoo.build("mixtral", "small", torch.bfloat16)
    ops = _run(module, [inputs], torch.bfloat16, tmp_path, 3e-2, 3e-2)
    assert {"aten.histc.default", "aten._grouped_mm.default", "aten::_grouped_mm.default"} <= ops


def test_mixtral_zoo_entry_takes_the_default_experts_path() -> None:
    module, inputs, dynamic = zoo.build("mixtral")
    with torch.no_grad():
        ops = _ops(torch.export.export(module, (), inputs, dynamic_shapes=dynamic))
    assert "aten.histc.default" in ops and "transformers.grouped_mm_fallback.default" in ops


def test_grouped_mm_fallback_is_renamed_to_aten_grouped_mm() -> None:
    # The importer renames the op, so its arguments must be _grouped_mm's first three, in order.
    import transformers.integrations.moe  # noqa: F401  (defines torch.ops.transformers.grouped_mm_fallback)

    fallback = torch.ops.transformers.grouped_mm_fallback.default._schema
    aten = torch.ops.aten._grouped_mm.default._schema
    assert [str(a.type) for a in fallback.arguments] == ["Tensor", "Tensor", "Tensor"]
    assert [a.name for a in aten.arguments[:3]] == ["self", "mat2", "offs"]
    assert [str(r.type) for r in fallback.returns] == [str(r.type) for r in aten.returns] == ["Tensor"]
    assert canonical("transformers::grouped_mm_fallback.default") == "aten::_grouped_mm.default"
