"""Survey: tiny random-weight models through torch.export -> NBX, compared with torch.

    python scripts/survey_models.py [--only NAME,NAME] [--group GROUP] [--list] [--out FILE.json]

Each entry of ``REGISTRY`` builds a tiny model (seeded, nothing downloaded: transformers models from
their config classes, torchvision models with ``weights=None``) and its example inputs. The survey
exports it with torch.export (under ``torch.no_grad()``), converts it with
``nbx_core.graph.export.export``, loads it on the backend's device and runs it twice (the first run
records a plan, the second replays it), comparing each output with torch's in float32 at the zoo
test's tolerance. Extra inputs of the same shapes (padded attention masks for decoders) replay the
plan on other values. Where an entry declares dynamic shapes, the model is exported again with them
and run at the example size and at a second one.

One status per model: OK, export failed (torch), convert failed, load failed, run error, wrong
result, replay differs, or skipped (torchvision not importable: it is not a dependency of NBX;
install it to survey its models). Exit status 0 when every model is OK, skipped or failed
inside torch.export (not NBX's doing), 1 otherwise.

Groups: decoders, encoders (with sequence-to-sequence), vision (with audio), torchvision, nn. On the
cpu backend (the Triton interpreter) the whole survey takes tens of minutes; it is not part of CI,
only ``tests/scripts/test_survey_models.py`` runs two entries of it.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.export import Dim

from nbx_core.backend import kernel_device_type
from nbx_core.graph import load
from nbx_core.graph.export import export
from nbx_core.runtime import checks
from nbx_core.testing import assert_close, numeric, to_torch

GROUPS = ("decoders", "encoders", "vision", "torchvision", "nn")

OK = "OK"
EXPORT_FAILED = "export failed (torch)"
CONVERT_FAILED = "convert failed"
LOAD_FAILED = "load failed"
RUN_ERROR = "run error"
WRONG = "wrong result"
REPLAY_DIFFERS = "replay differs"
SKIPPED = "skipped"
PASSING = {OK, EXPORT_FAILED, SKIPPED}

# The zoo test's float32 tolerance: a few ulps per op summed over a shallow model's depth,
# atol relative to the output's largest magnitude.
RTOL, ATOL = 1e-4, 1e-5

Inputs = dict[str, Any]


@dataclass
class Case:
    """What a builder returns: the module (called with keyword inputs), its example inputs, and
    optionally dynamic shapes with inputs at a second size, and more inputs of the example's
    shapes (``variants``, run on the static program's recorded plan)."""

    module: nn.Module
    inputs: Inputs
    dynamic: dict[str, Any] | None = None
    second: Inputs | None = None
    variants: dict[str, Inputs] = field(default_factory=dict)


@dataclass(frozen=True)
class Entry:
    name: str
    group: str
    build: Callable[[], Case]
    requires: str | None = None  # an optional package the builder imports


@dataclass
class Result:
    name: str
    group: str
    status: str
    seconds: float
    cause: str = ""
    max_error: float | None = None


class Failed(Exception):
    """A stage failed: ``status`` says which, the message is the one-line cause."""

    def __init__(self, status: str, cause: str, max_error: float | None = None) -> None:
        super().__init__(cause)
        self.status, self.cause, self.max_error = status, cause, max_error


REGISTRY: dict[str, Entry] = {}


def register(name: str, group: str, requires: str | None = None) -> Callable[[Callable[[], Case]], Callable[[], Case]]:
    """Decorator: add a builder to ``REGISTRY``."""
    assert group in GROUPS and name not in REGISTRY, (name, group)

    def add(build: Callable[[], Case]) -> Callable[[], Case]:
        REGISTRY[name] = Entry(name, group, build, requires)
        return build

    return add


# ---------------------------------------------------------------------------------------------
# Running one entry


def one_line(exc: BaseException) -> str:
    """``Type: first line`` of an exception; a first line ending in ':' (NBX's lists of missing
    ops) takes the next line too, which names what is missing."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    text = lines[0] if lines else ""
    if text.endswith(":") and len(lines) > 1:
        text += " " + lines[1]
    return f"{type(exc).__name__}: {text[:300]}"


def tensors(value: Any) -> list[Any]:
    """The leaves of a (nested) tuple or list output, in order."""
    if isinstance(value, tuple | list):
        return [leaf for item in value for leaf in tensors(item)]
    return [value]


def max_error(got: list[Any], want: list[torch.Tensor]) -> float | None:
    """Largest absolute difference over all outputs (None when shapes differ or a value is missing)."""
    worst = 0.0
    for g, w in zip(got, want, strict=False):
        g = to_torch(g)
        if not isinstance(g, torch.Tensor) or g.shape != w.shape:
            return None
        diff = (g.double() - w.double()).abs().nan_to_num(nan=float("inf"))
        diff[g.isnan() & w.isnan()] = 0  # NaN where torch has NaN is a match (equal_nan)
        worst = max(worst, diff.max().item() if diff.numel() else 0.0)
    return worst


def compare(got: Any, want: list[torch.Tensor], what: str, status: str) -> None:
    """Raise Failed(status) unless every output matches torch's within RTOL and ATOL x its scale."""
    leaves = tensors(got)
    try:
        if len(leaves) != len(want):
            raise AssertionError(f"{len(leaves)} outputs, torch has {len(want)}")
        for i, (g, w) in enumerate(zip(leaves, want, strict=True)):
            floating = w.is_floating_point()
            scale = max(1.0, w.abs().nan_to_num().max().item()) if floating and w.numel() else 1.0
            assert_close(g, w, rtol=RTOL if floating else 0, atol=ATOL * scale if floating else 0, what=f"[{i}]")
    except AssertionError as e:
        err = max_error(leaves, want)
        shown = f"max error {err:.3g}" if err is not None else one_line(e)
        raise Failed(status, f"{what}: {shown}", err) from e


def torch_outputs(module: nn.Module, inputs: Inputs) -> list[torch.Tensor]:
    with torch.no_grad():
        return [t.detach().clone() for t in tensors(module(**inputs)) if isinstance(t, torch.Tensor)]


def export_program(module: nn.Module, inputs: Inputs, dynamic: dict[str, Any] | None, path: Path, what: str) -> Any:
    """torch.export, convert, load: the loaded Program, or Failed naming the stage that failed."""
    try:
        with torch.no_grad():
            ep = torch.export.export(module, (), inputs, dynamic_shapes=dynamic)
    except Exception as e:
        raise Failed(EXPORT_FAILED, f"{what}{one_line(e)}") from e
    try:
        graph = export(ep, path)
    except Exception as e:
        raise Failed(CONVERT_FAILED, f"{what}{one_line(e)}") from e
    try:
        return load(graph, device=kernel_device_type())
    except Exception as e:
        raise Failed(LOAD_FAILED, f"{what}{one_line(e)}") from e


def run_twice(prog: Any, module: nn.Module, inputs: Inputs, what: str) -> None:
    """First run (records the plan), then the plan replay, each compared with torch."""
    want = torch_outputs(module, inputs)
    for call, status in (("first run", WRONG), ("plan replay", REPLAY_DIFFERS)):
        try:
            got = prog(**inputs)
            checks.verify()  # device-side checks (an index out of range) belong to this run
        except Exception as e:
            raise Failed(RUN_ERROR, f"{what}, {call}: {one_line(e)}") from e
        compare(got, want, f"{what}, {call}", status)


def check(case: Case, workdir: Path) -> None:
    """Every check of one built model; raises Failed at the first that fails."""
    module = case.module.eval()
    prog = export_program(module, case.inputs, None, workdir / "static.nbx", "")
    run_twice(prog, module, case.inputs, "example")
    for label, inputs in case.variants.items():
        run_twice(prog, module, inputs, label)
    if case.dynamic is None:
        return
    prog = export_program(module, case.inputs, case.dynamic, workdir / "dynamic.nbx", "dynamic: ")
    run_twice(prog, module, case.inputs, "dynamic, example size")
    if case.second is not None:
        run_twice(prog, module, case.second, "dynamic, second size")


def available(package: str) -> bool:
    try:
        importlib.import_module(package)
    except Exception:
        return False
    return True


def survey(entry: Entry) -> Result:
    """Build and check one entry; never raises for a model's failure."""
    start = time.perf_counter()

    def result(status: str, cause: str = "", err: float | None = None) -> Result:
        return Result(entry.name, entry.group, status, round(time.perf_counter() - start, 1), cause, err)

    if entry.requires and not available(entry.requires):
        return result(SKIPPED, f"{entry.requires} not installed")
    torch.manual_seed(0)
    try:
        case = entry.build()
    except Exception as e:  # a builder out of step with an installed library: report it, go on
        return result(RUN_ERROR, f"building the model: {one_line(e)}")
    with tempfile.TemporaryDirectory(prefix=f"survey-{entry.name}-") as tmp:
        try:
            check(case, Path(tmp))
        except Failed as f:
            return result(f.status, f.cause, f.max_error)
        except Exception as e:  # a failure in the survey's own code: still one line, still going on
            return result(RUN_ERROR, f"survey: {one_line(e)}")
    return result(OK)


def select(only: Sequence[str] | None, group: str | None) -> list[Entry]:
    """Entries by name (``--only``, in the order given) or group, else all of them."""
    if only:
        unknown = [n for n in only if n not in REGISTRY]
        if unknown:
            raise SystemExit(f"unknown entries: {', '.join(unknown)} (--list shows them)")
        return [REGISTRY[n] for n in only]
    return [e for e in REGISTRY.values() if group is None or e.group == group]


# ---------------------------------------------------------------------------------------------
# Shared input makers and wrappers

VOCAB = 100
BATCH = 2
SEQ, SEQ2 = 8, 12
PAD = 3  # padded positions in the last row of a padded mask


def _ids(seq: int, batch: int = BATCH, low: int = 3) -> torch.Tensor:
    return torch.randint(low, VOCAB, (batch, seq))


def _mask(seq: int, pad: str = "right", batch: int = BATCH) -> torch.Tensor:
    """An attention mask whose last row pads PAD positions on the right or left (batched generation
    pads on the left), or none at all (``pad="none"``)."""
    mask = torch.ones(batch, seq, dtype=torch.long)
    if pad == "right":
        mask[-1, seq - PAD :] = 0
    elif pad == "left":
        mask[-1, :PAD] = 0
    return mask


def _seq_dynamic(*names: str, low: int = 2) -> dict[str, Any]:
    seq = Dim("seq", min=low, max=32)
    return {n: {1: seq} for n in names}


class CausalLM(nn.Module):
    """A transformers causal LM without a cache: ids and mask in, logits out."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).logits


class Attr(nn.Module):
    """A transformers model called with keyword inputs, returning one attribute of its output."""

    def __init__(self, model: nn.Module, attr: str = "last_hidden_state", **fixed: Any) -> None:
        super().__init__()
        self.model, self.attr, self.fixed = model, attr, fixed

    def forward(self, **inputs: torch.Tensor) -> torch.Tensor:
        return getattr(self.model(**inputs, **self.fixed), self.attr)


class TextEncoder(Attr):
    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        return super().forward(input_ids=input_ids, attention_mask=attention_mask)


class Seq2Seq(Attr):
    def forward(  # type: ignore[override]
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, decoder_input_ids: torch.Tensor
    ) -> torch.Tensor:
        return super().forward(input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=decoder_input_ids)


class Pixels(Attr):
    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        return super().forward(pixel_values=pixel_values)


class Audio(Attr):
    """Audio models name their input differently (input_values, input_features): one name here."""

    def __init__(self, model: nn.Module, key: str) -> None:
        super().__init__(model)
        self.key = key

    def forward(self, audio: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        return super().forward(**{self.key: audio})


def _transformers() -> Any:
    import transformers

    transformers.logging.set_verbosity_error()
    return transformers


# ---------------------------------------------------------------------------------------------
# decoders: causal LMs exported with a right-padded mask, replayed with left padding and none,
# and exported again over the sequence length.

_NARROW = dict(vocab_size=VOCAB, hidden_size=32)
_HIDDEN = dict(_NARROW, num_hidden_layers=1, num_attention_heads=2)
_LLAMA_LIKE = dict(_HIDDEN, intermediate_size=64, num_key_value_heads=1, max_position_embeddings=64)


def _decoder(config_name: str, model_name: str, **config: Any) -> Case:
    T = _transformers()
    model = getattr(T, model_name)(getattr(T, config_name)(use_cache=False, **config))
    ids = _ids(SEQ)
    return Case(
        CausalLM(model),
        {"input_ids": ids, "attention_mask": _mask(SEQ)},
        _seq_dynamic("input_ids", "attention_mask"),
        {"input_ids": _ids(SEQ2), "attention_mask": _mask(SEQ2)},
        {
            "left padding": {"input_ids": ids, "attention_mask": _mask(SEQ, "left")},
            "no padding": {"input_ids": ids, "attention_mask": _mask(SEQ, "none")},
        },
    )


_SLIDING = dict(sliding_window=4, layer_types=["sliding_attention", "full_attention"], num_hidden_layers=2)
# Four experts, two per token; configurations name the count one of two ways.
_EXPERTS = dict(num_experts=4, num_experts_per_tok=2, pad_token_id=0)
_LOCAL_EXPERTS = dict(num_local_experts=4, num_experts_per_tok=2, pad_token_id=0)
_MLA = dict(
    vocab_size=VOCAB,
    hidden_size=32,
    intermediate_size=64,
    moe_intermediate_size=16,
    num_hidden_layers=2,
    num_attention_heads=2,
    num_key_value_heads=2,
    n_routed_experts=4,
    n_shared_experts=1,
    num_experts_per_tok=2,
    first_k_dense_replace=1,
    kv_lora_rank=16,
    qk_rope_head_dim=8,
    qk_nope_head_dim=8,
    v_head_dim=16,
    max_position_embeddings=64,
    pad_token_id=0,
)
_GPT_STYLE = dict(vocab_size=VOCAB, n_embd=32, n_layer=1, n_head=2, n_positions=64)
DECODERS: dict[str, Callable[[], Case]] = {
    "opt": partial(_decoder, "OPTConfig", "OPTForCausalLM", ffn_dim=64, word_embed_proj_dim=32, **_HIDDEN),
    "gpt_neo": partial(
        _decoder,
        "GPTNeoConfig",
        "GPTNeoForCausalLM",
        vocab_size=VOCAB,
        hidden_size=32,
        num_layers=2,
        num_heads=2,
        attention_types=[[["global", "local"], 1]],
        window_size=4,
        intermediate_size=64,
        max_position_embeddings=64,
    ),
    "gptj": partial(_decoder, "GPTJConfig", "GPTJForCausalLM", rotary_dim=8, n_inner=64, **_GPT_STYLE),
    "gpt_neox": partial(
        _decoder, "GPTNeoXConfig", "GPTNeoXForCausalLM", intermediate_size=64, rotary_pct=0.5, **_HIDDEN
    ),
    "phi": partial(_decoder, "PhiConfig", "PhiForCausalLM", intermediate_size=64, partial_rotary_factor=0.5, **_HIDDEN),
    "phi3": partial(_decoder, "Phi3Config", "Phi3ForCausalLM", pad_token_id=0, **_LLAMA_LIKE),
    "gemma": partial(_decoder, "GemmaConfig", "GemmaForCausalLM", head_dim=16, **_LLAMA_LIKE),
    "gemma2": partial(_decoder, "Gemma2Config", "Gemma2ForCausalLM", head_dim=16, **{**_LLAMA_LIKE, **_SLIDING}),
    "gemma3": partial(_decoder, "Gemma3TextConfig", "Gemma3ForCausalLM", head_dim=16, **{**_LLAMA_LIKE, **_SLIDING}),
    "falcon": partial(
        _decoder, "FalconConfig", "FalconForCausalLM", new_decoder_architecture=True, num_kv_heads=1, **_HIDDEN
    ),
    "bloom": partial(_decoder, "BloomConfig", "BloomForCausalLM", n_layer=1, n_head=2, **_NARROW),
    "qwen3": partial(_decoder, "Qwen3Config", "Qwen3ForCausalLM", head_dim=16, **_LLAMA_LIKE),
    "stablelm": partial(
        _decoder,
        "StableLmConfig",
        "StableLmForCausalLM",
        partial_rotary_factor=0.25,
        qk_layernorm=True,
        **_LLAMA_LIKE,
    ),
    "gpt_bigcode": partial(
        _decoder, "GPTBigCodeConfig", "GPTBigCodeForCausalLM", n_inner=64, multi_query=True, **_GPT_STYLE
    ),
    "olmo": partial(_decoder, "OlmoConfig", "OlmoForCausalLM", clip_qkv=8.0, **_LLAMA_LIKE),
    "olmo2": partial(_decoder, "Olmo2Config", "Olmo2ForCausalLM", **_LLAMA_LIKE),
    "cohere": partial(_decoder, "CohereConfig", "CohereForCausalLM", **_LLAMA_LIKE),
    "granite": partial(
        _decoder,
        "GraniteConfig",
        "GraniteForCausalLM",
        embedding_multiplier=2.0,
        logits_scaling=4.0,
        residual_multiplier=0.5,
        attention_multiplier=0.3,
        **_LLAMA_LIKE,
    ),
    "codegen": partial(
        _decoder, "CodeGenConfig", "CodeGenForCausalLM", rotary_dim=8, n_inner=64, n_ctx=64, **_GPT_STYLE
    ),
    "mpt": partial(
        _decoder,
        "MptConfig",
        "MptForCausalLM",
        vocab_size=VOCAB,
        d_model=32,
        n_layers=1,
        n_heads=2,
        max_seq_len=64,
        expansion_ratio=2,
    ),
    "starcoder2": partial(_decoder, "Starcoder2Config", "Starcoder2ForCausalLM", sliding_window=4, **_LLAMA_LIKE),
    "smollm3": partial(_decoder, "SmolLM3Config", "SmolLM3ForCausalLM", pad_token_id=0, **_LLAMA_LIKE),
    "glm4": partial(_decoder, "Glm4Config", "Glm4ForCausalLM", head_dim=16, pad_token_id=0, **_LLAMA_LIKE),
    "exaone4": partial(_decoder, "Exaone4Config", "Exaone4ForCausalLM", head_dim=16, pad_token_id=0, **_LLAMA_LIKE),
    "ernie4_5": partial(_decoder, "Ernie4_5Config", "Ernie4_5ForCausalLM", head_dim=16, pad_token_id=0, **_LLAMA_LIKE),
    "olmo3": partial(_decoder, "Olmo3Config", "Olmo3ForCausalLM", pad_token_id=0, **_LLAMA_LIKE),
    "bitnet": partial(_decoder, "BitNetConfig", "BitNetForCausalLM", pad_token_id=0, **_LLAMA_LIKE),
    "qwen3_moe": partial(
        _decoder,
        "Qwen3MoeConfig",
        "Qwen3MoeForCausalLM",
        head_dim=16,
        num_experts=4,
        num_experts_per_tok=2,
        moe_intermediate_size=32,
        **_LLAMA_LIKE,
    ),
    "granite_moe": partial(_decoder, "GraniteMoeConfig", "GraniteMoeForCausalLM", **_LOCAL_EXPERTS, **_LLAMA_LIKE),
    # Mixture of experts with attention sinks and alternating sliding-window layers.
    "gpt_oss": partial(
        _decoder, "GptOssConfig", "GptOssForCausalLM", head_dim=16, **_LOCAL_EXPERTS, **{**_LLAMA_LIKE, **_SLIDING}
    ),
    "nemotron": partial(_decoder, "NemotronConfig", "NemotronForCausalLM", pad_token_id=0, **_LLAMA_LIKE),
    "helium": partial(_decoder, "HeliumConfig", "HeliumForCausalLM", head_dim=16, pad_token_id=0, **_LLAMA_LIKE),
    "cohere2": partial(
        _decoder,
        "Cohere2Config",
        "Cohere2ForCausalLM",
        sliding_window=4,
        pad_token_id=0,
        **{**_LLAMA_LIKE, "num_hidden_layers": 2},
    ),
    "qwen2_moe": partial(
        _decoder,
        "Qwen2MoeConfig",
        "Qwen2MoeForCausalLM",
        moe_intermediate_size=16,
        shared_expert_intermediate_size=32,
        **_EXPERTS,
        **_LLAMA_LIKE,
    ),
    "olmoe": partial(_decoder, "OlmoeConfig", "OlmoeForCausalLM", **_EXPERTS, **_LLAMA_LIKE),
    "phimoe": partial(_decoder, "PhimoeConfig", "PhimoeForCausalLM", **_LOCAL_EXPERTS, **_LLAMA_LIKE),
    "jetmoe": partial(
        _decoder,
        "JetMoeConfig",
        "JetMoeForCausalLM",
        vocab_size=VOCAB,
        hidden_size=32,
        num_hidden_layers=1,
        num_key_value_heads=2,
        kv_channels=8,
        intermediate_size=64,
        max_position_embeddings=64,
        **_LOCAL_EXPERTS,
    ),
    # Multi-head latent attention (low-rank keys and values; V3 also low-rank queries and grouped
    # expert routing), a dense first layer, then shared and routed experts.
    "deepseek_v2": partial(_decoder, "DeepseekV2Config", "DeepseekV2ForCausalLM", q_lora_rank=None, **_MLA),
    "deepseek_v3": partial(
        _decoder, "DeepseekV3Config", "DeepseekV3ForCausalLM", q_lora_rank=16, n_group=1, topk_group=1, **_MLA
    ),
    # Short convolutions beside attention layers.
    "lfm2": partial(
        _decoder,
        "Lfm2Config",
        "Lfm2ForCausalLM",
        pad_token_id=0,
        **{**_LLAMA_LIKE, "num_hidden_layers": 2},
        layer_types=["conv", "full_attention"],
    ),
    # A selective state-space model; its dynamic export fails inside torch.export.
    "mamba": partial(
        _decoder, "MambaConfig", "MambaForCausalLM", state_size=8, expand=2, conv_kernel=4, pad_token_id=0, **_HIDDEN
    ),
    # State-space layers: Falcon-Mamba alone, Jamba beside attention and experts; RecurrentGemma's
    # linear recurrence beside local attention. Their dynamic exports fail inside torch.export.
    "falcon_mamba": partial(
        _decoder,
        "FalconMambaConfig",
        "FalconMambaForCausalLM",
        state_size=8,
        expand=2,
        conv_kernel=4,
        pad_token_id=0,
        **_HIDDEN,
    ),
    "jamba": partial(
        _decoder,
        "JambaConfig",
        "JambaForCausalLM",
        num_experts=2,
        num_experts_per_tok=1,
        mamba_d_state=8,
        mamba_expand=2,
        mamba_dt_rank=4,
        attn_layer_period=2,
        attn_layer_offset=1,
        expert_layer_period=2,
        expert_layer_offset=1,
        use_mamba_kernels=False,
        pad_token_id=0,
        **{**_LLAMA_LIKE, "num_hidden_layers": 2},
    ),
    "recurrent_gemma": partial(
        _decoder,
        "RecurrentGemmaConfig",
        "RecurrentGemmaForCausalLM",
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        lru_width=32,
        attention_window_size=4,
        block_types=["recurrent", "attention"],
        pad_token_id=0,
    ),
    # Rotary embeddings as complex numbers (polar, complex multiplication); its dynamic export fails
    # inside torch.export.
    "llama4_text": partial(
        _decoder,
        "Llama4TextConfig",
        "Llama4ForCausalLM",
        head_dim=16,
        num_local_experts=2,
        intermediate_size_mlp=64,
        pad_token_id=0,
        **_LLAMA_LIKE,
    ),
}
for _name, _build in DECODERS.items():
    register(_name, "decoders")(_build)


# ---------------------------------------------------------------------------------------------
# encoders: text encoders with a right-padded mask, and sequence-to-sequence models, each also
# exported over the sequence length(s).


def _text(model_name: str, config_name: str, **config: Any) -> Case:
    T = _transformers()
    model = getattr(T, model_name)(getattr(T, config_name)(**config))
    return Case(
        TextEncoder(model),
        {"input_ids": _ids(SEQ), "attention_mask": _mask(SEQ)},
        _seq_dynamic("input_ids", "attention_mask", low=3),
        {"input_ids": _ids(SEQ2), "attention_mask": _mask(SEQ2)},
    )


def _seq2seq(model_name: str, config_name: str, **config: Any) -> Case:
    T = _transformers()
    model = getattr(T, model_name)(getattr(T, config_name)(use_cache=False, **config))
    source, target = Dim("source", min=2, max=32), Dim("target", min=2, max=32)

    def inputs(seq: int, decoder_seq: int) -> Inputs:
        return {"input_ids": _ids(seq), "attention_mask": _mask(seq), "decoder_input_ids": _ids(decoder_seq)}

    return Case(
        Seq2Seq(model, "logits", use_cache=False),
        inputs(SEQ, 6),
        {"input_ids": {1: source}, "attention_mask": {1: source}, "decoder_input_ids": {1: target}},
        inputs(SEQ2, 5),
    )


_BERTISH = dict(_HIDDEN, intermediate_size=64, max_position_embeddings=64)
_DEBERTA_REL = dict(relative_attention=True, max_relative_positions=16, pos_att_type=["c2p", "p2c"])
_T5ISH = dict(
    vocab_size=VOCAB,
    d_model=32,
    d_kv=16,
    d_ff=64,
    num_layers=1,
    num_decoder_layers=1,
    num_heads=2,
    relative_attention_num_buckets=8,
    relative_attention_max_distance=16,
    decoder_start_token_id=0,
)
# One layer a side, two heads, as BART-style configs (BART, Marian, Pegasus, DETR, Whisper,
# Speech2Text) name them.
_ENCODER_DECODER = dict(
    d_model=32,
    encoder_layers=1,
    decoder_layers=1,
    encoder_attention_heads=2,
    decoder_attention_heads=2,
    encoder_ffn_dim=64,
    decoder_ffn_dim=64,
)
_BARTISH = dict(
    _ENCODER_DECODER,
    vocab_size=VOCAB,
    max_position_embeddings=64,
    pad_token_id=1,
    bos_token_id=0,
    eos_token_id=2,
    decoder_start_token_id=2,
)
_SMALL_TEXT = dict(_HIDDEN, intermediate_size=64, max_position_embeddings=32)
ENCODERS: dict[str, Callable[[], Case]] = {
    "albert": partial(_text, "AlbertModel", "AlbertConfig", embedding_size=16, **_BERTISH),
    "electra": partial(_text, "ElectraModel", "ElectraConfig", embedding_size=16, **_BERTISH),
    "deberta": partial(_text, "DebertaModel", "DebertaConfig", **_BERTISH, **_DEBERTA_REL),
    "deberta_v2": partial(
        _text,
        "DebertaV2Model",
        "DebertaV2Config",
        position_buckets=8,
        norm_rel_ebd="layer_norm",
        share_att_key=True,
        **_BERTISH,
        **_DEBERTA_REL,
    ),
    "xlm_roberta": partial(_text, "XLMRobertaModel", "XLMRobertaConfig", pad_token_id=1, **_BERTISH),
    "mpnet": partial(_text, "MPNetModel", "MPNetConfig", pad_token_id=1, **_BERTISH),
    "mobilebert": partial(
        _text,
        "MobileBertModel",
        "MobileBertConfig",
        vocab_size=VOCAB,
        max_position_embeddings=64,
        hidden_size=32,
        embedding_size=16,
        intra_bottleneck_size=16,
        true_hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        num_feedforward_networks=2,
    ),
    "squeezebert": partial(
        _text,
        "SqueezeBertModel",
        "SqueezeBertConfig",
        embedding_size=32,
        q_groups=2,
        k_groups=2,
        v_groups=2,
        post_attention_groups=2,
        intermediate_groups=2,
        output_groups=2,
        **_BERTISH,
    ),
    "modernbert": partial(
        _text,
        "ModernBertModel",
        "ModernBertConfig",
        **{**_BERTISH, "num_hidden_layers": 2},
        local_attention=4,
        global_attn_every_n_layers=2,
        pad_token_id=0,
        eos_token_id=1,
        bos_token_id=2,
        cls_token_id=2,
        sep_token_id=1,
    ),
    "bigbird": partial(_text, "BigBirdModel", "BigBirdConfig", attention_type="original_full", **_BERTISH),
    "clip_text": partial(_text, "CLIPTextModel", "CLIPTextConfig", projection_dim=16, eos_token_id=2, **_SMALL_TEXT),
    "siglip_text": partial(_text, "SiglipTextModel", "SiglipTextConfig", **_SMALL_TEXT),
    "t5": partial(_seq2seq, "T5ForConditionalGeneration", "T5Config", **_T5ISH),
    "mt5": partial(_seq2seq, "MT5ForConditionalGeneration", "MT5Config", **_T5ISH),
    "bart": partial(_seq2seq, "BartForConditionalGeneration", "BartConfig", **_BARTISH),
    "marian": partial(_seq2seq, "MarianMTModel", "MarianConfig", **_BARTISH),
    "pegasus": partial(_seq2seq, "PegasusForConditionalGeneration", "PegasusConfig", **_BARTISH),
}
for _name, _build in ENCODERS.items():
    register(_name, "encoders")(_build)


# ---------------------------------------------------------------------------------------------
# vision and audio (transformers): images over a dynamic batch, audio over its length


def _vision(model_name: str, config_name: str, attr: str = "last_hidden_state", **config: Any) -> Case:
    T = _transformers()
    model = getattr(T, model_name)(getattr(T, config_name)(**config))
    return Case(
        Pixels(model, attr),
        {"pixel_values": torch.randn(BATCH, 3, 32, 32)},
        {"pixel_values": {0: Dim("batch", min=1, max=8)}},
        {"pixel_values": torch.randn(BATCH + 1, 3, 32, 32)},
    )


def _audio(
    model_name: str, config_name: str, key: str, shape: tuple[int, ...], axis: int, size2: int, **config: Any
) -> Case:
    T = _transformers()
    model = getattr(T, model_name)(getattr(T, config_name)(**config))
    if key == "input_features":  # Speech2Text: the encoder alone
        model = model.get_encoder()
    second = list(shape)
    second[axis] = size2
    return Case(
        Audio(model, key),
        {"audio": torch.randn(*shape)},
        # Dim.AUTO: the convolution stack's output length constrains the input length.
        {"audio": {axis: Dim.AUTO}},
        {"audio": torch.randn(*second)},
    )


_VIT = dict(
    hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64, image_size=32, patch_size=8
)
_SEGFORMER = dict(
    num_encoder_blocks=2,
    depths=[1, 1],
    sr_ratios=[2, 1],
    hidden_sizes=[16, 32],
    patch_sizes=[7, 3],
    strides=[4, 2],
    num_attention_heads=[1, 2],
    mlp_ratios=[2, 2],
)
_RESNET = dict(embedding_size=8, hidden_sizes=[8, 16], depths=[1, 1])
_WAV = dict(
    hidden_size=32,
    num_hidden_layers=1,
    num_attention_heads=2,
    intermediate_size=64,
    conv_dim=(16, 16),
    conv_stride=(5, 2),
    conv_kernel=(10, 3),
    num_conv_pos_embeddings=16,
    num_conv_pos_embedding_groups=4,
)


class TextAndImage(Attr):
    def forward(self, input_ids: torch.Tensor, pixel_values: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        return super().forward(input_ids=input_ids, pixel_values=pixel_values)


def _clip() -> Case:
    """Both towers and their similarity logits."""
    T = _transformers()
    text = dict(_HIDDEN, intermediate_size=64, max_position_embeddings=64, eos_token_id=2, vocab_size=VOCAB)
    model = T.CLIPModel(T.CLIPConfig(text_config=text, vision_config=_VIT, projection_dim=16))
    return Case(
        TextAndImage(model, "logits_per_image"), {"input_ids": _ids(SEQ), "pixel_values": torch.randn(BATCH, 3, 32, 32)}
    )


class FeaturesToText(Attr):
    def forward(self, input_features: torch.Tensor, decoder_input_ids: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        return super().forward(input_features=input_features, decoder_input_ids=decoder_input_ids)


def _whisper() -> Case:
    """Encoder and decoder (the zoo times the encoder alone)."""
    T = _transformers()
    config = T.WhisperConfig(
        **_ENCODER_DECODER,
        vocab_size=VOCAB,
        num_mel_bins=16,
        max_source_positions=32,
        max_target_positions=32,
        decoder_start_token_id=0,
        pad_token_id=0,
        use_cache=False,
    )
    model = T.WhisperForConditionalGeneration(config)
    inputs = {"input_features": torch.randn(BATCH, 16, 64), "decoder_input_ids": _ids(6)}
    return Case(FeaturesToText(model, "logits"), inputs)


def _video(model_name: str, config_name: str, **config: Any) -> Case:
    """Clips of 4 frames at 32x32, (batch, frames, channels, height, width)."""
    T = _transformers()
    vit = dict(_VIT, num_frames=4)
    model = getattr(T, model_name)(getattr(T, config_name)(**{**vit, **config}))
    return Case(Pixels(model, "last_hidden_state"), {"pixel_values": torch.randn(BATCH, 4, 3, 32, 32)})


class PastValues(Attr):
    def forward(self, past_values: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        return super().forward(past_values=past_values)


def _patchtst() -> Case:
    """Time-series forecasting: 3 channels, 32 steps of context in patches of 8, 8 steps ahead."""
    T = _transformers()
    config = T.PatchTSTConfig(
        num_input_channels=3,
        context_length=32,
        patch_length=8,
        patch_stride=8,
        d_model=16,
        num_attention_heads=2,
        num_hidden_layers=1,
        ffn_dim=32,
        prediction_length=8,
    )
    model = T.PatchTSTForPrediction(config)
    return Case(PastValues(model, "prediction_outputs"), {"past_values": torch.randn(BATCH, 32, 3)})


class PixelsAndNoise(Attr):
    def forward(self, pixel_values: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        return super().forward(pixel_values=pixel_values, noise=noise)


def _vit_mae() -> Case:
    """ViT-MAE keeps a random half of the patches: the noise that ranks them is an input, so that
    NBX and torch keep the same ones (argsort, then gather)."""
    T = _transformers()
    model = T.ViTMAEModel(T.ViTMAEConfig(**_VIT, mask_ratio=0.5))
    patches = (32 // 8) ** 2
    batch = Dim("batch", min=1, max=8)
    return Case(
        PixelsAndNoise(model),
        {"pixel_values": torch.randn(BATCH, 3, 32, 32), "noise": torch.rand(BATCH, patches)},
        {"pixel_values": {0: batch}, "noise": {0: batch}},
        {"pixel_values": torch.randn(BATCH + 1, 3, 32, 32), "noise": torch.rand(BATCH + 1, patches)},
    )


def _detr() -> Case:
    T = _transformers()
    backbone = T.ResNetConfig(out_features=["stage2"], **_RESNET)
    return _vision(
        "DetrForObjectDetection",
        "DetrConfig",
        "logits",
        use_timm_backbone=False,
        use_pretrained_backbone=False,
        backbone_config=backbone,
        **_ENCODER_DECODER,
        num_queries=4,
        num_labels=3,
    )


VISION: dict[str, Callable[[], Case]] = {
    "dinov2": partial(_vision, "Dinov2Model", "Dinov2Config", **_VIT),
    "beit": partial(_vision, "BeitModel", "BeitConfig", use_relative_position_bias=True, use_mean_pooling=True, **_VIT),
    "deit": partial(_vision, "DeiTModel", "DeiTConfig", **_VIT),
    "data2vec_vision": partial(
        _vision, "Data2VecVisionModel", "Data2VecVisionConfig", use_relative_position_bias=True, **_VIT
    ),
    "segformer": partial(
        _vision,
        "SegformerForSemanticSegmentation",
        "SegformerConfig",
        "logits",
        decoder_hidden_size=32,
        num_labels=3,
        **_SEGFORMER,
    ),
    "convnextv2": partial(
        _vision, "ConvNextV2Model", "ConvNextV2Config", hidden_sizes=[8, 16], depths=[1, 1], patch_size=4, num_stages=2
    ),
    "mobilevit": partial(
        _vision,
        "MobileViTModel",
        "MobileViTConfig",
        image_size=32,
        patch_size=2,
        hidden_sizes=[16, 24, 32],
        neck_hidden_sizes=[8, 8, 16, 16, 24, 24, 32],
        num_attention_heads=2,
        mlp_ratio=2.0,
    ),
    "swinv2": partial(
        _vision,
        "Swinv2Model",
        "Swinv2Config",
        image_size=32,
        patch_size=4,
        embed_dim=16,
        depths=[1, 1],
        num_heads=[2, 2],
        window_size=4,
    ),
    "resnet_hf": partial(_vision, "ResNetModel", "ResNetConfig", layer_type="bottleneck", **_RESNET),
    "regnet_hf": partial(
        _vision, "RegNetModel", "RegNetConfig", embedding_size=8, hidden_sizes=[8, 16], depths=[1, 1], groups_width=4
    ),
    "poolformer": partial(
        _vision,
        "PoolFormerModel",
        "PoolFormerConfig",
        hidden_sizes=[8, 16],
        depths=[1, 1],
        num_encoder_blocks=2,
        patch_sizes=[7, 3],
        strides=[4, 2],
        padding=[2, 1],
        pool_size=3,
    ),
    "levit": partial(
        _vision,
        "LevitModel",
        "LevitConfig",
        image_size=32,
        kernel_size=3,
        stride=2,
        padding=1,
        patch_size=16,
        hidden_sizes=[16, 32, 48],
        num_attention_heads=[1, 2, 3],
        depths=[1, 1, 1],
        key_dim=[8, 8, 8],
        drop_path_rate=0,
        mlp_ratio=[2, 2, 2],
        attention_ratio=[2, 2, 2],
        down_ops=[["Subsample", 8, 2, 4, 2, 2], ["Subsample", 8, 4, 4, 2, 2]],
    ),
    "siglip_vision": partial(_vision, "SiglipVisionModel", "SiglipVisionConfig", **_VIT),
    "dinov2_registers": partial(
        _vision, "Dinov2WithRegistersModel", "Dinov2WithRegistersConfig", num_register_tokens=2, **_VIT
    ),
    "swin": partial(
        _vision,
        "SwinModel",
        "SwinConfig",
        image_size=32,
        patch_size=4,
        embed_dim=16,
        depths=[1, 1],
        num_heads=[1, 2],
        window_size=4,
    ),
    "pvt_v2": partial(_vision, "PvtV2Model", "PvtV2Config", **_SEGFORMER),
    "focalnet": partial(
        _vision,
        "FocalNetModel",
        "FocalNetConfig",
        embed_dim=16,
        depths=[1, 1],
        focal_levels=[2, 2],
        focal_windows=[3, 3],
        image_size=32,
        patch_size=4,
    ),
    # Depth estimation: a ViT's hidden states reassembled and fused at four scales.
    "dpt": partial(
        _vision,
        "DPTForDepthEstimation",
        "DPTConfig",
        "predicted_depth",
        **{**_VIT, "num_hidden_layers": 4},
        backbone_out_indices=[0, 1, 2, 3],
        neck_hidden_sizes=[8, 16, 16, 32],
        fusion_hidden_size=16,
    ),
    "yolos": partial(_vision, "YolosModel", "YolosConfig", **{**_VIT, "image_size": [32, 32]}, num_detection_tokens=4),
    "detr": _detr,
    "hubert": partial(_audio, "HubertModel", "HubertConfig", "input_values", (BATCH, 400), 1, 600, **_WAV),
    "wavlm": partial(
        _audio,
        "WavLMModel",
        "WavLMConfig",
        "input_values",
        (BATCH, 400),
        1,
        600,
        num_buckets=16,
        max_bucket_distance=64,
        **_WAV,
    ),
    "ast": partial(
        _audio,
        "ASTModel",
        "ASTConfig",
        "input_values",
        (BATCH, 32, 16),
        0,
        BATCH + 1,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        patch_size=8,
        frequency_stride=8,
        time_stride=8,
        max_length=32,
        num_mel_bins=16,
    ),
    "speech2text": partial(
        _audio,
        "Speech2TextModel",
        "Speech2TextConfig",
        "input_features",
        (BATCH, 20, 16),
        1,
        28,
        **_ENCODER_DECODER,
        vocab_size=VOCAB,
        max_source_positions=64,
        max_target_positions=64,
        num_conv_layers=2,
        conv_channels=16,
        conv_kernel_sizes=(5, 5),
        input_feat_per_channel=16,
        input_channels=1,
        use_cache=False,
    ),
    "clip": _clip,
    "whisper": _whisper,
    "vivit": partial(_video, "VivitModel", "VivitConfig", tubelet_size=[2, 8, 8]),
    "videomae": partial(_video, "VideoMAEModel", "VideoMAEConfig", tubelet_size=2, patch_size=8),
    "patchtst": _patchtst,
    "vit_mae": _vit_mae,
}
for _name, _build in VISION.items():
    register(_name, "vision")(_build)


# ---------------------------------------------------------------------------------------------
# torchvision: classification, segmentation, video and optical-flow models, weights=None, small widths and inputs


class Images(nn.Module):
    """A torchvision model called with ``x``; segmentation models return a dict: take ``out``."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.model(x)
        return out["out"] if isinstance(out, dict) else out


def _images(model: nn.Module, size: int = 32, batch: int = BATCH, dynamic_batch: bool = False) -> Case:
    case = Case(Images(model), {"x": torch.randn(batch, 3, size, size)})
    if dynamic_batch:
        case.dynamic = {"x": {0: Dim("batch", min=1, max=8)}}
        case.second = {"x": torch.randn(batch + 1, 3, size, size)}
    return case


def _tv() -> Any:
    import torchvision

    return torchvision.models


def _tv_efficientnet_b0() -> nn.Module:
    from torchvision.models.efficientnet import EfficientNet, _efficientnet_conf

    settings, last = _efficientnet_conf("efficientnet_b0", width_mult=0.25, depth_mult=0.25)
    return EfficientNet(settings, 0.2, num_classes=10, last_channel=last)


def _tv_efficientnet_v2() -> nn.Module:
    from torchvision.models.efficientnet import EfficientNet, FusedMBConvConfig, MBConvConfig

    settings = [
        FusedMBConvConfig(1, 3, 1, 8, 8, 1),
        FusedMBConvConfig(4, 3, 2, 8, 16, 1),
        MBConvConfig(4, 3, 2, 16, 24, 1),
        MBConvConfig(6, 3, 1, 24, 32, 1),
    ]
    return EfficientNet(settings, 0.2, num_classes=10, last_channel=64, norm_layer=partial(nn.BatchNorm2d, eps=1e-3))


def _tv_regnet() -> nn.Module:
    from torchvision.models.regnet import BlockParams, RegNet

    params = BlockParams.from_init_params(depth=4, w_0=8, w_a=8.0, w_m=2.0, group_width=4, se_ratio=0.25)
    return RegNet(params, num_classes=10)


def _tv_convnext() -> nn.Module:
    from torchvision.models.convnext import CNBlockConfig, ConvNeXt

    return ConvNeXt([CNBlockConfig(16, 32, 1), CNBlockConfig(32, None, 1)], num_classes=10)


def _tv_swin(v2: bool) -> nn.Module:
    from torchvision.models import swin_transformer as S

    blocks = dict(block=S.SwinTransformerBlockV2, downsample_layer=S.PatchMergingV2) if v2 else {}
    return S.SwinTransformer([4, 4], 16, [2, 2], [2, 4], [4, 4], num_classes=10, **blocks)


def _tv_resnet(block: str, **kw: Any) -> nn.Module:
    from torchvision.models import resnet

    return resnet.ResNet(getattr(resnet, block), [1, 1, 1, 1], num_classes=10, **kw)


def _tv_seg(name: str, **kw: Any) -> nn.Module:
    return getattr(_tv().segmentation, name)(weights=None, weights_backbone=None, num_classes=3, **kw)


def _clips(model: nn.Module, frames: int = 4, size: int = 32) -> Case:
    return Case(Images(model), {"x": torch.randn(BATCH, 3, frames, size, size)})


def _tv_video_resnet(conv: str, stem: str) -> nn.Module:
    from torchvision.models.video import resnet

    return resnet.VideoResNet(
        resnet.BasicBlock, [getattr(resnet, conv)] * 4, [1, 1, 1, 1], getattr(resnet, stem), num_classes=10
    )


def _tv_swin3d() -> nn.Module:
    from torchvision.models.video.swin_transformer import SwinTransformer3d

    return SwinTransformer3d([2, 4, 4], 16, [2, 2], [2, 4], [2, 4, 4], num_classes=10)


class OpticalFlow(nn.Module):
    """RAFT between two frames, two refinement steps; the last flow estimate."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, first: torch.Tensor, second: torch.Tensor) -> torch.Tensor:
        return self.model(first, second, num_flow_updates=2)[-1]


def _tv_raft() -> Case:
    # The correlation pyramid needs frames of at least 128x128.
    frames = {"first": torch.randn(1, 3, 128, 128), "second": torch.randn(1, 3, 128, 128)}
    return Case(OpticalFlow(_tv().optical_flow.raft_small(weights=None)), frames)


def _torchvision_cases() -> dict[str, Callable[[], Case]]:
    M = _tv
    return {
        "tv_resnet18": lambda: _images(M().resnet18(num_classes=10), dynamic_batch=True),
        "tv_resnext": lambda: _images(_tv_resnet("Bottleneck", groups=8, width_per_group=4)),
        "tv_wide_resnet": lambda: _images(_tv_resnet("Bottleneck", width_per_group=128)),
        "tv_densenet": lambda: _images(
            M().DenseNet(growth_rate=8, block_config=(2, 2, 2), num_init_features=16, bn_size=2, num_classes=10)
        ),
        "tv_inception_v3": lambda: _images(
            M().Inception3(num_classes=10, aux_logits=False, init_weights=False), size=75, batch=1
        ),
        "tv_googlenet": lambda: _images(M().GoogLeNet(num_classes=10, aux_logits=False, init_weights=False)),
        "tv_mobilenet_v2": lambda: _images(M().mobilenet_v2(width_mult=0.25, num_classes=10)),
        "tv_mobilenet_v3": lambda: _images(M().mobilenet_v3_small(width_mult=0.25, num_classes=10)),
        "tv_efficientnet_b0": lambda: _images(_tv_efficientnet_b0()),
        "tv_efficientnet_v2": lambda: _images(_tv_efficientnet_v2()),
        "tv_regnet": lambda: _images(_tv_regnet()),
        "tv_shufflenet": lambda: _images(M().shufflenet_v2_x0_5(num_classes=10)),
        "tv_squeezenet": lambda: _images(M().squeezenet1_1(num_classes=10)),
        "tv_mnasnet": lambda: _images(M().mnasnet0_5(num_classes=10)),
        "tv_convnext": lambda: _images(_tv_convnext(), dynamic_batch=True),
        "tv_vit": lambda: _images(
            M().VisionTransformer(32, 8, num_layers=2, num_heads=2, hidden_dim=32, mlp_dim=64, num_classes=10),
            dynamic_batch=True,
        ),
        "tv_swin": lambda: _images(_tv_swin(v2=False), dynamic_batch=True),
        "tv_swin_v2": lambda: _images(_tv_swin(v2=True)),
        "tv_maxvit": lambda: _images(
            M().MaxVit(
                input_size=(32, 32),
                stem_channels=8,
                partition_size=2,
                block_channels=[16, 32],
                block_layers=[1, 1],
                head_dim=8,
                stochastic_depth_prob=0.0,
                num_classes=10,
            )
        ),
        # AlexNet's pools need at least 63x63.
        "tv_alexnet": lambda: _images(M().AlexNet(num_classes=10), size=63, batch=1),
        "tv_vgg11_bn": lambda: _images(M().vgg11_bn(num_classes=10)),
        "tv_fcn": lambda: _images(_tv_seg("fcn_resnet50", aux_loss=False), batch=1),
        "tv_deeplabv3": lambda: _images(_tv_seg("deeplabv3_mobilenet_v3_large", aux_loss=False), batch=1),
        "tv_lraspp": lambda: _images(_tv_seg("lraspp_mobilenet_v3_large"), batch=1),
        "tv_r3d": lambda: _clips(_tv_video_resnet("Conv3DSimple", "BasicStem")),
        "tv_r2plus1d": lambda: _clips(_tv_video_resnet("Conv2Plus1D", "R2Plus1dStem")),
        "tv_swin3d": lambda: _clips(_tv_swin3d()),
        "tv_raft": _tv_raft,
    }


for _name, _build in _torchvision_cases().items():
    register(_name, "torchvision", requires="torchvision")(_build)


# ---------------------------------------------------------------------------------------------
# torch.nn blocks

E = 32  # embedding width of the attention and recurrent blocks


class MHA(nn.Module):
    def __init__(self, need_weights: bool, batch_first: bool = True) -> None:
        super().__init__()
        self.attn = nn.MultiheadAttention(E, 2, batch_first=batch_first)
        self.need_weights = need_weights

    def forward(
        self, q: torch.Tensor, kv: torch.Tensor, key_padding_mask: torch.Tensor, attn_mask: torch.Tensor | None = None
    ) -> Any:
        out, weights = self.attn(
            q, kv, kv, key_padding_mask=key_padding_mask, attn_mask=attn_mask, need_weights=self.need_weights
        )
        return (out, weights) if self.need_weights else out


def _padding_mask(batch: int, seq: int) -> torch.Tensor:
    mask = torch.zeros(batch, seq, dtype=torch.bool)
    mask[-1, -PAD:] = True
    return mask


def _mha(need_weights: bool) -> Case:
    b, s = Dim("batch", min=1, max=8), Dim("seq", min=PAD + 1, max=32)

    def inputs(batch: int, seq: int) -> Inputs:
        x = torch.randn(batch, seq, E)
        return {"q": x, "kv": x, "key_padding_mask": _padding_mask(batch, seq)}

    dyn = {"q": {0: b, 1: s}, "kv": {0: b, 1: s}, "key_padding_mask": {0: b, 1: s}}
    return Case(MHA(need_weights), inputs(BATCH, SEQ), dyn, inputs(BATCH + 1, SEQ2 - 1))


def _mha_causal_seq_first() -> Case:
    x, kv = torch.randn(SEQ, BATCH, E), torch.randn(6, BATCH, E)
    causal = torch.triu(torch.ones(SEQ, 6, dtype=torch.bool), 1)
    return Case(
        MHA(True, batch_first=False),
        {"q": x, "kv": kv, "key_padding_mask": _padding_mask(BATCH, 6), "attn_mask": causal},
    )


class EncoderLayer(nn.Module):
    def __init__(self, norm_first: bool) -> None:
        super().__init__()
        layer = nn.TransformerEncoderLayer(E, 2, 64, dropout=0.0, batch_first=True, norm_first=norm_first)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)

    def forward(self, x: torch.Tensor, key_padding_mask: torch.Tensor) -> torch.Tensor:
        return self.encoder(x, src_key_padding_mask=key_padding_mask)


def _encoder_layer(norm_first: bool) -> Case:
    b, s = Dim("batch", min=1, max=8), Dim("seq", min=PAD + 1, max=32)
    return Case(
        EncoderLayer(norm_first),
        {"x": torch.randn(BATCH, SEQ, E), "key_padding_mask": _padding_mask(BATCH, SEQ)},
        {"x": {0: b, 1: s}, "key_padding_mask": {0: b, 1: s}},
        {"x": torch.randn(BATCH + 1, SEQ2, E), "key_padding_mask": _padding_mask(BATCH + 1, SEQ2)},
    )


class Transformer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.model = nn.Transformer(E, 2, 1, 1, 64, dropout=0.0, batch_first=True, norm_first=True)

    def forward(self, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
        causal = nn.Transformer.generate_square_subsequent_mask(tgt.shape[1])
        return self.model(src, tgt, tgt_mask=causal, tgt_is_causal=True)


class Recurrent(nn.Module):
    """GRU/RNN return (output, h), LSTM (output, (h, c)): flattened to a tuple of tensors."""

    def __init__(self, rnn: nn.Module) -> None:
        super().__init__()
        self.rnn = rnn

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        out, state = self.rnn(x)
        return (out, *state) if isinstance(state, tuple) else (out, state)


def _recurrent(rnn: nn.Module) -> Case:
    # Over the batch only: torch.export cannot export a recurrence over a dynamic sequence length
    # (docs/models.md, known limits).
    return Case(
        Recurrent(rnn),
        {"x": torch.randn(BATCH, SEQ, 16)},
        {"x": {0: Dim("batch", min=1, max=8)}},
        {"x": torch.randn(BATCH + 1, SEQ, 16)},
    )


class Bag(nn.Module):
    def __init__(self, mode: str) -> None:
        super().__init__()
        self.bag = nn.EmbeddingBag(50, 16, mode=mode)

    def forward(self, indices: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        return self.bag(indices, offsets)


def _embedding_bag(mode: str) -> Case:
    n, bags = Dim("n", min=2, max=100), Dim("bags", min=2, max=100)
    return Case(
        Bag(mode),
        {"indices": torch.randint(0, 50, (10,)), "offsets": torch.tensor([0, 3, 7])},
        {"indices": {0: n}, "offsets": {0: bags}},
        {"indices": torch.randint(0, 50, (13,)), "offsets": torch.tensor([0, 2, 5, 9])},
    )


class Fn(nn.Module):
    """A module around a function of its inputs (and sub-modules passed as keywords)."""

    def __init__(self, fn: Callable[..., Any], **modules: nn.Module) -> None:
        super().__init__()
        self.fn = fn
        self.mods = nn.ModuleDict(modules)

    def forward(self, x: torch.Tensor, y: torch.Tensor | None = None) -> Any:
        return self.fn(self.mods, x) if y is None else self.fn(self.mods, x, y)


def _conv_transpose2d() -> Case:
    a = nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2)
    b = nn.ConvTranspose2d(6, 3, 4, stride=2, padding=1, bias=False)
    return Case(Fn(lambda m, x: m["b"](m["a"](x)), a=a, b=b), {"x": torch.randn(BATCH, 4, 8, 8)})


def _conv3d() -> Case:
    mods = dict(
        conv=nn.Conv3d(2, 4, 3, padding=1),
        up=nn.ConvTranspose3d(4, 2, 2, stride=2),
        max=nn.MaxPool3d(2),
        avg=nn.AvgPool3d(2),
    )

    def fn(m: nn.ModuleDict, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        y = m["up"](m["conv"](x))
        return m["max"](y), m["avg"](y)

    return Case(Fn(fn, **mods), {"x": torch.randn(BATCH, 2, 4, 6, 6)})


def _upsample() -> Case:
    mods = dict(
        nearest=nn.Upsample(scale_factor=2, mode="nearest"),
        bilinear=nn.Upsample(size=(11, 13), mode="bilinear", align_corners=False),
        corners=nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True),
        shuffle=nn.PixelShuffle(2),
    )

    def fn(m: nn.ModuleDict, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return tuple(layer(x) for layer in m.values()) + (F.interpolate(x, scale_factor=1.5, mode="bicubic"),)

    return Case(Fn(fn, **mods), {"x": torch.randn(BATCH, 4, 6, 6)})


def _interpolate_dynamic() -> Case:
    h, w = Dim("h", min=2, max=64), Dim("w", min=2, max=64)

    def fn(m: nn.ModuleDict, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return F.interpolate(x, scale_factor=2.0, mode="bilinear"), F.adaptive_avg_pool2d(x, (3, 5))

    return Case(Fn(fn), {"x": torch.randn(BATCH, 4, 6, 6)}, {"x": {2: h, 3: w}}, {"x": torch.randn(BATCH, 4, 7, 5)})


def _grid_sample(mode: str, padding_mode: str, align_corners: bool, dims: int = 2) -> Case:
    def fn(m: nn.ModuleDict, x: torch.Tensor, grid: torch.Tensor) -> torch.Tensor:
        return F.grid_sample(x, grid, mode=mode, padding_mode=padding_mode, align_corners=align_corners)

    if dims == 2:
        x, grid = torch.randn(BATCH, 3, 5, 6), torch.rand(BATCH, 4, 7, 2) * 2.4 - 1.2  # some samples outside
    else:
        x, grid = torch.randn(BATCH, 2, 4, 5, 6), torch.rand(BATCH, 3, 4, 5, 3) * 2.4 - 1.2
    return Case(Fn(fn), {"x": x, "y": grid})


def _pools() -> Case:
    def fn(m: nn.ModuleDict, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return (
            F.max_pool2d(x, 3, 2, 1, ceil_mode=True),
            F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
            F.adaptive_avg_pool2d(x, (3, 5)),
            F.adaptive_max_pool2d(x, (3, 5)),
        )

    return Case(Fn(fn), {"x": torch.randn(BATCH, 4, 7, 11)})


def _norms() -> Case:
    mods = dict(
        group=nn.GroupNorm(2, 8),
        instance=nn.InstanceNorm2d(8, affine=True),
        layer=nn.LayerNorm([6, 6]),
        batch=nn.BatchNorm2d(8),
    )
    return Case(Fn(lambda m, x: tuple(layer(x) for layer in m.values()), **mods), {"x": torch.randn(BATCH, 8, 6, 6)})


def _fold_unfold() -> Case:
    def fn(m: nn.ModuleDict, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        cols = F.unfold(x, 3, padding=1, stride=2)
        return cols, F.fold(cols, (7, 11), 3, padding=1, stride=2)

    return Case(Fn(fn), {"x": torch.randn(BATCH, 4, 7, 11)})


def _pads_unpool() -> Case:
    def fn(m: nn.ModuleDict, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        pooled, where = F.max_pool2d(x, 2, return_indices=True)
        pads = tuple(F.pad(x, (1, 2, 2, 1), mode=mode) for mode in ("reflect", "replicate", "circular"))
        return *pads, F.max_unpool2d(pooled, where, 2), F.pixel_unshuffle(x, 2)

    return Case(Fn(fn), {"x": torch.randn(BATCH, 4, 8, 8)})


def _affine_grid_sample() -> Case:
    def fn(m: nn.ModuleDict, x: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
        grid = F.affine_grid(theta, [BATCH, 3, 5, 6], align_corners=False)
        return F.grid_sample(x, grid, align_corners=False)

    return Case(Fn(fn), {"x": torch.randn(BATCH, 3, 7, 9), "y": torch.randn(BATCH, 2, 3)})


class HeadMasks(nn.Module):
    """MultiheadAttention with an additive float mask per (batch, head) and per-head weights."""

    def __init__(self) -> None:
        super().__init__()
        self.attn = nn.MultiheadAttention(E, 2, batch_first=True)

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.attn(x, x, x, attn_mask=bias, need_weights=True, average_attn_weights=False)


def _mha_float_mask() -> Case:
    bias = torch.randn(BATCH * 2, SEQ, SEQ)
    bias[:, :, -2:] = float("-inf")  # the last two keys hidden from every query
    return Case(HeadMasks(), {"x": torch.randn(BATCH, SEQ, E), "bias": bias})


def _interpolate_modes() -> Case:
    def fn(m: nn.ModuleDict, x: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, ...]:
        line = x.flatten(2)
        return (
            F.interpolate(x, size=(9, 4), mode="nearest-exact"),
            F.interpolate(x, size=(4, 3), mode="area"),
            F.interpolate(x, scale_factor=1.7, mode="bicubic", align_corners=True),
            F.interpolate(x, size=(3, 5), mode="bilinear", antialias=True),
            F.interpolate(line, size=50, mode="linear"),
            F.interpolate(line, scale_factor=0.5, mode="nearest"),
            F.interpolate(v, scale_factor=2, mode="trilinear"),
            F.interpolate(v, size=(3, 5, 2), mode="nearest"),
        )

    return Case(Fn(fn), {"x": torch.randn(BATCH, 3, 6, 7), "y": torch.randn(BATCH, 2, 3, 4, 5)})


def _conv1d() -> Case:
    mods = dict(
        dilated=nn.Conv1d(4, 6, 3, dilation=2, groups=2, padding="same"),
        strided=nn.Conv1d(6, 8, 5, stride=2, padding=2, padding_mode="reflect"),
        up=nn.ConvTranspose1d(8, 4, 4, stride=2, padding=1, output_padding=0),
    )
    return Case(Fn(lambda m, x: m["up"](m["strided"](m["dilated"](x))), **mods), {"x": torch.randn(BATCH, 4, 17)})


def _channel_ops() -> Case:
    mods = dict(
        shuffle=nn.ChannelShuffle(2),
        lrn=nn.LocalResponseNorm(3),
        lp=nn.LPPool2d(2, 2),
        instance1d=nn.InstanceNorm1d(8, affine=True),
        max1d=nn.AdaptiveMaxPool1d(5),
        avg3d=nn.AdaptiveAvgPool3d((2, 3, 1)),
    )

    def fn(m: nn.ModuleDict, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return (
            m["shuffle"](x),
            m["lrn"](x),
            m["lp"](x),
            m["instance1d"](x.flatten(2)),
            m["max1d"](x.flatten(2)),
            m["avg3d"](x.unsqueeze(1)),
        )

    return Case(Fn(fn, **mods), {"x": torch.randn(BATCH, 8, 6, 6)})


class CrossAttention(nn.Module):
    """Keys and values narrower than the queries (kdim, vdim): separate input projections."""

    def __init__(self) -> None:
        super().__init__()
        self.attn = nn.MultiheadAttention(E, 2, kdim=16, vdim=24, batch_first=True)

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return self.attn(q, k, v, need_weights=False)[0]


class WeightedBag(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.bag = nn.EmbeddingBag(50, 16, mode="sum")

    def forward(self, indices: torch.Tensor, offsets: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        return self.bag(indices, offsets, per_sample_weights=weights)


NN: dict[str, Callable[[], Case]] = {
    "mha": partial(_mha, False),
    "mha_weights": partial(_mha, True),
    "mha_causal_seq_first": _mha_causal_seq_first,
    "mha_float_mask": _mha_float_mask,
    "mha_kdim_vdim": lambda: Case(
        CrossAttention(),
        {"q": torch.randn(BATCH, SEQ, E), "k": torch.randn(BATCH, 6, 16), "v": torch.randn(BATCH, 6, 24)},
    ),
    "transformer_encoder": partial(_encoder_layer, False),
    "transformer_encoder_norm_first": partial(_encoder_layer, True),
    "transformer": lambda: Case(
        Transformer(),
        {"src": torch.randn(BATCH, SEQ, E), "tgt": torch.randn(BATCH, 6, E)},
        {"src": {1: Dim("source", min=2, max=32)}, "tgt": {1: Dim("target", min=2, max=32)}},
        {"src": torch.randn(BATCH, SEQ2, E), "tgt": torch.randn(BATCH, 5, E)},
    ),
    "gru": lambda: _recurrent(nn.GRU(16, E, 2, batch_first=True)),
    "lstm_bidirectional": lambda: _recurrent(nn.LSTM(16, E, 2, bidirectional=True, batch_first=True)),
    "lstm_proj": lambda: _recurrent(nn.LSTM(16, E, 1, proj_size=8, batch_first=True)),
    "rnn_relu": lambda: _recurrent(nn.RNN(16, E, 1, nonlinearity="relu", bidirectional=True, batch_first=True)),
    "rnn_tanh": lambda: _recurrent(nn.RNN(16, E, 2, batch_first=True)),
    "embedding_bag_mean": partial(_embedding_bag, "mean"),
    "embedding_bag_max": partial(_embedding_bag, "max"),
    "conv_transpose2d": _conv_transpose2d,
    "conv3d": _conv3d,
    "upsample": _upsample,
    "interpolate_dynamic": _interpolate_dynamic,
    "interpolate_modes": _interpolate_modes,
    "conv1d": _conv1d,
    "channel_ops": _channel_ops,
    "grid_sample_bilinear": partial(_grid_sample, "bilinear", "zeros", False),
    "grid_sample_nearest_border": partial(_grid_sample, "nearest", "border", True),
    "grid_sample_bicubic_reflection": partial(_grid_sample, "bicubic", "reflection", False),
    "grid_sample_3d": partial(_grid_sample, "bilinear", "zeros", False, dims=3),
    "pools": _pools,
    "norms": _norms,
    "fold_unfold": _fold_unfold,
    "pads_unpool": _pads_unpool,
    "affine_grid_sample": _affine_grid_sample,
    "embedding_bag_sum_weights": lambda: Case(
        WeightedBag(),
        {"indices": torch.randint(0, 50, (10,)), "offsets": torch.tensor([0, 3, 7]), "weights": torch.rand(10)},
    ),
}
for _name, _build in NN.items():
    register(_name, "nn")(_build)


# ---------------------------------------------------------------------------------------------
# Command line


def print_row(result: Result) -> None:
    print(f"{result.name:32} {result.group:12} {result.status:22} {result.seconds:7.1f}s  {result.cause}", flush=True)


def run(entries: Sequence[Entry]) -> Iterator[Result]:
    """Survey ``entries`` one at a time (one model in memory at a time), yielding each result."""
    for entry in entries:
        yield survey(entry)


def main(argv: Sequence[str] | None = None) -> int:
    """The command line; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated entry names")
    parser.add_argument("--group", choices=GROUPS)
    parser.add_argument("--list", action="store_true", help="list the entries and exit")
    parser.add_argument("--out", type=Path, help="write the results as JSON")
    args = parser.parse_args(argv)
    entries = select(args.only.split(",") if args.only else None, args.group)
    if args.list:
        for entry in entries:
            print(f"{entry.name:32} {entry.group}")
        return 0
    if not numeric():
        parser.error("the aot backend runs no program: use NBX_BACKEND=cpu (the default) or cuda")
    results = []
    with warnings.catch_warnings():
        # transformers' and torch's warnings about deprecated arguments and export fallbacks would
        # bury the table.
        warnings.simplefilter("ignore")
        for result in run(entries):
            print_row(result)
            results.append(result)
            if args.out:  # rewritten after each model, so a long survey cut short keeps what it found
                args.out.write_text(json.dumps([vars(r) for r in results], indent=1) + "\n")
    failed = [r for r in results if r.status not in PASSING]
    print(f"{len(results)} models: {len(results) - len(failed)} passing, {len(failed)} failing", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
