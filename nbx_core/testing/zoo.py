"""A zoo of real architectures to export with torch.export and run on NBX.

Each entry builds a model with seeded random weights (nothing is downloaded) at one of two sizes:

- ``"small"``: a narrow, one- or two-layer config of the same architecture, fast enough for the
  cpu backend's interpreter in CI;
- ``"real"``: the published config (BERT-base, GPT-2 small, a Llama-style 1B model, ViT-B/16,
  ResNet-50, Whisper-base, …) with the model benchmark's batch and sequence sizes.

::

    from nbx_core.testing import zoo

    module, inputs, dynamic_shapes = zoo.build("bert", "small")
    ep = torch.export.export(module, (), inputs, dynamic_shapes=dynamic_shapes)
    more = zoo.inputs("bert", "small", dim=11)         # the same model's inputs at another length

transformers models are built from their config classes (``BertConfig(...)`` → ``BertModel``) and
transformers is imported only inside their builders, so the other entries work without it. Those
(ResNet, MobileNetV3, EfficientNet, ConvNeXt, Swin, a UNet block, an LSTM tagger) are written here
in torch.nn with the ops that characterise each architecture; torchvision is not needed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn as nn
import torch.nn.functional as F

__all__ = ["ZOO", "Entry", "build", "inputs", "names"]

SIZES = ("small", "real")
Inputs = Callable[[str, int | None, int | None], dict[str, torch.Tensor]]


@dataclass(frozen=True)
class Entry:
    """One architecture.

    ``module(size)`` builds the model; ``make_inputs(size, dim, batch)`` its keyword inputs (``dim``:
    the dynamic dim's value, ``batch``: the batch size; None for the size's default). ``dynamic`` is
    ``(dim name, {input name: axis}, min, max)``: the one dim torch.export may vary (a sequence,
    audio length or batch dim), shared by the inputs named. ``dims`` holds that dim's two test
    values at the small size: the export example, then another.
    """

    name: str
    family: str
    module: Callable[[str], nn.Module]
    make_inputs: Inputs
    dynamic: tuple[str, dict[str, int], int, int] | None
    dims: tuple[int, int] | None
    transformers: bool = False


ZOO: dict[str, Entry] = {}


def names() -> list[str]:
    """Every architecture's name, in registry order."""
    return list(ZOO)


def _entry(name: str, size: str) -> Entry:
    if name not in ZOO:
        raise KeyError(f"zoo: no architecture {name!r}; known: {', '.join(ZOO)}")
    if size not in SIZES:
        raise ValueError(f"zoo: size must be one of {SIZES}, got {size!r}")
    return ZOO[name]


def inputs(name: str, size: str = "small", dtype: torch.dtype = torch.float32, *, dim: int | None = None,
           batch: int | None = None) -> dict[str, torch.Tensor]:
    """The keyword inputs of ``name`` (floating ones in ``dtype``), seeded: equal calls give equal
    tensors. ``dim`` sets the dynamic dim and ``batch`` the batch size, where the model has them."""
    entry = _entry(name, size)
    torch.manual_seed(1)
    made = entry.make_inputs(size, dim, batch)
    return {k: v.to(dtype) if v.is_floating_point() else v for k, v in made.items()}


def build(name: str, size: str = "small", dtype: torch.dtype = torch.float32, *, dim: int | None = None,
          batch: int | None = None) -> tuple[nn.Module, dict[str, torch.Tensor], dict[str, Any] | None]:
    """``(module, inputs, dynamic_shapes)``: the module in eval mode with seeded random weights in
    ``dtype``, its keyword inputs (see :func:`inputs`), and the ``dynamic_shapes`` to pass to
    ``torch.export.export(module, (), inputs, dynamic_shapes=...)`` (None: all static)."""
    entry = _entry(name, size)
    torch.manual_seed(0)
    module = entry.module(size).to(dtype).eval()
    made = inputs(name, size, dtype, dim=dim, batch=batch)
    if entry.dynamic is None:
        return module, made, None
    dim_name, axes, lo, hi = entry.dynamic
    d = torch.export.Dim(dim_name, min=lo, max=hi)
    return module, made, {k: ({axes[k]: d} if k in axes else None) for k in made}


def _register(name: str, family: str, make_inputs: Inputs, dynamic: tuple[str, dict[str, int], int, int] | None,
              dims: tuple[int, int] | None, transformers: bool = False) -> Callable[[Any], Any]:
    """Register the decorated ``module(size)`` builder with its inputs' builder."""
    def wrap(module: Callable[[str], nn.Module]) -> Callable[[str], nn.Module]:
        ZOO[name] = Entry(name, family, module, make_inputs, dynamic, dims, transformers)
        return module
    return wrap


# -- inputs ----------------------------------------------------------------------------------------


def _pick(size: str, small: Any, real: Any) -> Any:
    return small if size == "small" else real


def _text(vocab: int, batch: int, seq: int, *, mask: bool = True, left: bool = False,
          low: int = 3) -> dict[str, torch.Tensor]:
    """Token ids; with ``mask``, an attention mask whose last row pads its final quarter (its first
    quarter with ``left``, as batched generation pads)."""
    ids = torch.randint(low, vocab, (batch, seq))
    if not mask:
        return {"input_ids": ids}
    attention = torch.ones(batch, seq, dtype=torch.long)
    if batch > 1:
        pad = max(1, seq // 4)
        attention[-1, slice(0, pad) if left else slice(seq - pad, seq)] = 0
    return {"input_ids": ids, "attention_mask": attention}


def _tokens(small_vocab: int, vocab: int, batch: int, seq: int, *, mask: bool = True, left: bool = False) -> Inputs:
    """Token inputs: at the small size batch 2 and sequence 12, else ``batch`` and ``seq``."""
    def make(size: str, dim: int | None, b: int | None) -> dict[str, torch.Tensor]:
        return _text(_pick(size, small_vocab, vocab), b or _pick(size, 2, batch), dim or _pick(size, 12, seq),
                     mask=mask, left=left)
    return make


def _pixels(small: int = 32, real: int = 224, real_batch: int = 32) -> Inputs:
    """Images whose batch is the dynamic dim: 2 of ``small`` pixels square, or ``real_batch`` of ``real``."""
    def make(size: str, dim: int | None, batch: int | None) -> dict[str, torch.Tensor]:
        n, side = dim or batch or _pick(size, 2, real_batch), _pick(size, small, real)
        return {"pixel_values": torch.randn(n, 3, side, side)}
    return make


class _Wrapper(nn.Module):
    """A transformers model behind a ``forward`` of named tensors that returns one tensor (what
    torch.export and the zoo's inputs expect); subclasses say how to call it."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model


class _TextModel(_Wrapper):
    """A transformers encoder called with ids and a padding mask, returning its last hidden state."""

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state


class _CausalLM(_Wrapper):
    """A transformers causal language model without a cache: ids in, logits out."""

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=input_ids, use_cache=False).logits


class _PaddedCausalLM(_Wrapper):
    """A transformers causal language model without a cache, called with a padding mask: ids and
    mask in, logits out."""

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).logits


class _Vision(_Wrapper):
    """A transformers vision encoder: pixels in, last hidden state out."""

    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
        return self.model(pixel_values=pixel_values).last_hidden_state


class _Audio(_Wrapper):
    """A transformers audio encoder: features (Whisper) or raw samples (Wav2Vec2) in."""

    def __init__(self, model: nn.Module, key: str) -> None:
        super().__init__(model)
        self.key = key

    def forward(self, audio: torch.Tensor) -> torch.Tensor:
        return self.model(**{self.key: audio}).last_hidden_state


def _config(cls: Any, **kwargs: Any) -> Any:
    """A transformers config set to sdpa attention, whatever the version's default implementation."""
    cfg = cls(**kwargs)
    cfg._attn_implementation = "sdpa"
    return cfg


_SEQ = ("seq", {"input_ids": 1, "attention_mask": 1}, 2, 512)

# -- transformers: encoders ------------------------------------------------------------------------


@_register("bert", "encoder", _tokens(128, 30522, 8, 512), _SEQ, (12, 9), transformers=True)
def _bert(size: str) -> nn.Module:
    from transformers import BertConfig, BertModel

    h, layers, heads, ff = _pick(size, (32, 2, 2, 64), (768, 12, 12, 3072))
    cfg = _config(BertConfig, vocab_size=_pick(size, 128, 30522), hidden_size=h, num_hidden_layers=layers,
                  num_attention_heads=heads, intermediate_size=ff, max_position_embeddings=512)
    return _TextModel(BertModel(cfg, add_pooling_layer=False))


@_register("roberta", "encoder", _tokens(128, 50265, 8, 512), _SEQ, (12, 9), transformers=True)
def _roberta(size: str) -> nn.Module:
    from transformers import RobertaConfig, RobertaModel

    h, layers, heads, ff = _pick(size, (32, 2, 2, 64), (768, 12, 12, 3072))
    cfg = _config(RobertaConfig, vocab_size=_pick(size, 128, 50265), hidden_size=h, num_hidden_layers=layers,
                  num_attention_heads=heads, intermediate_size=ff, max_position_embeddings=514,
                  pad_token_id=1)
    return _TextModel(RobertaModel(cfg, add_pooling_layer=False))


@_register("distilbert", "encoder", _tokens(128, 30522, 8, 512), _SEQ, (12, 9), transformers=True)
def _distilbert(size: str) -> nn.Module:
    from transformers import DistilBertConfig, DistilBertModel

    h, layers, heads, ff = _pick(size, (32, 2, 2, 64), (768, 6, 12, 3072))
    cfg = _config(DistilBertConfig, vocab_size=_pick(size, 128, 30522), dim=h, n_layers=layers, n_heads=heads,
                  hidden_dim=ff, max_position_embeddings=512)
    return _TextModel(DistilBertModel(cfg))


@_register("t5_encoder", "encoder", _tokens(128, 32128, 8, 512), _SEQ, (12, 9), transformers=True)
def _t5_encoder(size: str) -> nn.Module:
    """T5's encoder: RMS-style layer norm, relative-position buckets, gated-free ReLU feed-forward."""
    from transformers import T5Config, T5EncoderModel

    h, kv, layers, heads, ff = _pick(size, (32, 16, 2, 2, 64), (768, 64, 12, 12, 3072))
    cfg = _config(T5Config, vocab_size=_pick(size, 128, 32128), d_model=h, d_kv=kv, d_ff=ff,
                  num_layers=layers, num_heads=heads, relative_attention_num_buckets=_pick(size, 8, 32),
                  relative_attention_max_distance=_pick(size, 16, 128), dropout_rate=0.0)
    return _TextModel(T5EncoderModel(cfg))


@_register("bart_encoder", "encoder", _tokens(128, 50265, 8, 512), _SEQ, (12, 9), transformers=True)
def _bart_encoder(size: str) -> nn.Module:
    from transformers import BartConfig, BartModel

    h, layers, heads, ff = _pick(size, (32, 2, 2, 64), (768, 6, 12, 3072))
    cfg = _config(BartConfig, vocab_size=_pick(size, 128, 50265), d_model=h, encoder_layers=layers,
                  decoder_layers=1, encoder_attention_heads=heads, decoder_attention_heads=heads,
                  encoder_ffn_dim=ff, decoder_ffn_dim=ff, max_position_embeddings=_pick(size, 64, 1024))
    return _TextModel(BartModel(cfg).get_encoder())

# -- transformers: decoders ------------------------------------------------------------------------

_IDS = ("seq", {"input_ids": 1}, 2, 2048)


@_register("gpt2", "decoder", _tokens(128, 50257, 8, 512, mask=False), _IDS, (12, 9), transformers=True)
def _gpt2(size: str) -> nn.Module:
    """GPT-2 small (real: batch 8, sequence 512; the benchmark's batch-1 case is ``batch=1, dim=16``)."""
    from transformers import GPT2Config, GPT2LMHeadModel

    h, layers, heads = _pick(size, (32, 2, 2), (768, 12, 12))
    cfg = _config(GPT2Config, vocab_size=_pick(size, 128, 50257), n_embd=h, n_layer=layers, n_head=heads,
                  n_positions=1024, use_cache=False)
    return _CausalLM(GPT2LMHeadModel(cfg))


def _causal_lm(config: str, model: str, vocab: int, shape: tuple[int, ...], **extra: Any) -> nn.Module:
    """A transformers ``model`` class built from ``config``; ``shape``: hidden, feed-forward, layers,
    attention heads, key/value heads."""
    import transformers

    h, ff, layers, heads, kv = shape
    cfg = _config(getattr(transformers, config), vocab_size=vocab, hidden_size=h, intermediate_size=ff,
                  num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=kv, use_cache=False,
                  **extra)
    return _CausalLM(getattr(transformers, model)(cfg))


_SMALL_GQA = (64, 128, 2, 4, 2)


@_register("llama", "decoder", _tokens(128, 128256, 1, 2048, mask=False), _IDS, (12, 9), transformers=True)
def _llama(size: str) -> nn.Module:
    """Llama-style (real: Llama 3.2 1B's config: GQA 32/8 heads, RMSNorm, rotary, SwiGLU; batch 1, 2048)."""
    return _causal_lm("LlamaConfig", "LlamaForCausalLM", _pick(size, 128, 128256),
                      _pick(size, _SMALL_GQA, (2048, 8192, 16, 32, 8)), max_position_embeddings=_pick(size, 128, 8192),
                      rope_theta=500000.0, tie_word_embeddings=True)


@_register("qwen2", "decoder", _tokens(128, 151936, 1, 2048, mask=False), _IDS, (12, 9), transformers=True)
def _qwen2(size: str) -> nn.Module:
    """Qwen2 (real: Qwen2-0.5B's config): GQA 14/2 heads, biased q/k/v projections."""
    return _causal_lm("Qwen2Config", "Qwen2ForCausalLM", _pick(size, 128, 151936),
                      _pick(size, _SMALL_GQA, (896, 4864, 24, 14, 2)),
                      max_position_embeddings=_pick(size, 128, 32768), tie_word_embeddings=True)


@_register("mistral", "decoder", _tokens(128, 32000, 1, 2048, mask=False), _IDS, (12, 9), transformers=True)
def _mistral(size: str) -> nn.Module:
    """Mistral (real: Mistral-7B's config): GQA 32/8 heads and sliding-window attention. The small
    config's window (4) is shorter than its sequences, so the window changes the result."""
    return _causal_lm("MistralConfig", "MistralForCausalLM", _pick(size, 128, 32000),
                      _pick(size, _SMALL_GQA, (4096, 14336, 32, 32, 8)), sliding_window=_pick(size, 4, 4096),
                      max_position_embeddings=_pick(size, 128, 32768))


@_register("falcon", "decoder", _tokens(128, 50304, 8, 512, left=True), _SEQ, (12, 9), transformers=True)
def _falcon(size: str) -> nn.Module:
    """Falcon with ALiBi (real: Falcon-RW-1B's config), batched left-padded: transformers gives
    attention a float mask of ALiBi slopes and finfo.min, and a padded query sees no key at all,
    which torch weighs uniformly over the keys rather than as empty."""
    from transformers import FalconConfig, FalconForCausalLM

    h, layers, heads = _pick(size, (32, 2, 2), (2048, 24, 32))
    cfg = _config(FalconConfig, vocab_size=_pick(size, 128, 50304), hidden_size=h, num_hidden_layers=layers,
                  num_attention_heads=heads, alibi=True, new_decoder_architecture=False, multi_query=False,
                  parallel_attn=False, bias=True, use_cache=False)
    return _PaddedCausalLM(FalconForCausalLM(cfg))


@_register("mixtral", "decoder", _tokens(64, 32000, 1, 2048, mask=False), _IDS, (12, 9), transformers=True)
def _mixtral(size: str) -> nn.Module:
    """Mixtral (real: Mixtral-8x7B's config): sparse mixture-of-experts feed-forward, each token
    routed to 2 of 8 experts (small: 2 of 4) on transformers' default experts path (histc counts the
    tokens per expert, grouped_mm multiplies each expert's tokens). The small config has as many
    key/value heads as heads, so that it also exports with a dynamic sequence before torch 2.12."""
    return _causal_lm("MixtralConfig", "MixtralForCausalLM", _pick(size, 64, 32000),
                      _pick(size, (32, 64, 1, 4, 4), (4096, 14336, 32, 32, 8)),
                      num_local_experts=_pick(size, 4, 8), num_experts_per_tok=2,
                      max_position_embeddings=_pick(size, 128, 32768))


# -- transformers: vision and audio ----------------------------------------------------------------

_PIXELS = ("batch", {"pixel_values": 0}, 1, 256)


@_register("vit", "vision", _pixels(), _PIXELS, (2, 3), transformers=True)
def _vit(size: str) -> nn.Module:
    from transformers import ViTConfig, ViTModel

    h, layers, heads, ff, image, patch = _pick(size, (32, 2, 2, 64, 32, 8), (768, 12, 12, 3072, 224, 16))
    cfg = _config(ViTConfig, hidden_size=h, num_hidden_layers=layers, num_attention_heads=heads,
                  intermediate_size=ff, image_size=image, patch_size=patch)
    return _Vision(ViTModel(cfg, add_pooling_layer=False))


@_register("clip_vision", "vision", _pixels(), _PIXELS, (2, 3), transformers=True)
def _clip_vision(size: str) -> nn.Module:
    """CLIP's vision tower (real: ViT-B/32): class token, pre-layer-norm, quick-GELU."""
    from transformers import CLIPVisionConfig, CLIPVisionModel

    h, layers, heads, ff, image, patch = _pick(size, (32, 2, 2, 64, 32, 8), (768, 12, 12, 3072, 224, 32))
    cfg = _config(CLIPVisionConfig, hidden_size=h, num_hidden_layers=layers, num_attention_heads=heads,
                  intermediate_size=ff, image_size=image, patch_size=patch)
    return _Vision(CLIPVisionModel(cfg))


def _whisper_inputs(size: str, dim: int | None, batch: int | None) -> dict[str, torch.Tensor]:
    mels, frames = _pick(size, (16, 16), (80, 3000))
    return {"audio": torch.randn(dim or batch or _pick(size, 2, 8), mels, frames)}


@_register("whisper_encoder", "audio", _whisper_inputs, ("batch", {"audio": 0}, 1, 64), (2, 3), transformers=True)
def _whisper_encoder(size: str) -> nn.Module:
    """Whisper's encoder (real: whisper-base, 30 s of 80-bin log-mel features, batch 8). Whisper fixes
    the number of frames (twice ``max_source_positions``), so the batch is the dynamic dim."""
    from transformers import WhisperConfig
    from transformers.models.whisper.modeling_whisper import WhisperEncoder

    h, layers, heads, ff, mels, frames = _pick(size, (32, 2, 2, 64, 16, 8), (512, 6, 8, 2048, 80, 1500))
    cfg = _config(WhisperConfig, d_model=h, encoder_layers=layers, encoder_attention_heads=heads,
                  encoder_ffn_dim=ff, decoder_layers=1, decoder_attention_heads=heads, decoder_ffn_dim=ff,
                  num_mel_bins=mels, max_source_positions=frames)
    return _Audio(WhisperEncoder(cfg), "input_features")


def _wav2vec2_inputs(size: str, dim: int | None, batch: int | None) -> dict[str, torch.Tensor]:
    return {"audio": torch.randn(dim or batch or _pick(size, 2, 8), _pick(size, 400, 16000))}


@_register("wav2vec2", "audio", _wav2vec2_inputs, ("batch", {"audio": 0}, 1, 64), (2, 3), transformers=True)
def _wav2vec2(size: str) -> nn.Module:
    """Wav2Vec2 (real: wav2vec2-base, 1 s of 16 kHz audio, batch 8): a strided conv feature encoder with
    group norm, a grouped positional conv under weight norm, then a post-norm transformer. A dynamic
    audio length makes torch.export guard on the conv stack's output lengths (it asks for a derived
    dim, which an NBX graph cannot bind), so the batch is the dynamic dim."""
    from transformers import Wav2Vec2Config, Wav2Vec2Model

    h, layers, heads, ff = _pick(size, (32, 2, 2, 64), (768, 12, 12, 3072))
    conv = _pick(size, {"conv_dim": (16, 16), "conv_kernel": (10, 3), "conv_stride": (5, 2),
                        "num_conv_pos_embeddings": 8, "num_conv_pos_embedding_groups": 4}, {})
    cfg = _config(Wav2Vec2Config, hidden_size=h, num_hidden_layers=layers, num_attention_heads=heads,
                  intermediate_size=ff, mask_time_prob=0.0, **conv)
    return _Audio(Wav2Vec2Model(cfg), "input_values")

# -- torch.nn: CNNs --------------------------------------------------------------------------------


def _randomize_norms(module: nn.Module) -> nn.Module:
    """Give every norm layer non-trivial affine weights and running statistics (fresh ones are the
    identity, which would hide a kernel that ignores them)."""
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, nn.BatchNorm2d | nn.GroupNorm | nn.LayerNorm) and m.weight is not None:
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.5, 0.5)
            if isinstance(m, nn.BatchNorm2d) and m.running_mean is not None and m.running_var is not None:
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
    return module


def _conv_bn(cin: int, cout: int, k: int, stride: int = 1, groups: int = 1, act: type[nn.Module] | None = nn.ReLU
             ) -> nn.Sequential:
    layers: list[nn.Module] = [nn.Conv2d(cin, cout, k, stride, (k - 1) // 2, groups=groups, bias=False),
                               nn.BatchNorm2d(cout)]
    if act is not None:
        layers.append(act())
    return nn.Sequential(*layers)


_IMAGES = ("batch", {"pixel_values": 0}, 1, 256)


class _Bottleneck(nn.Module):
    """ResNet-50's block: 1x1 reduce, 3x3 (strided), 1x1 expand by 4, projection shortcut."""

    def __init__(self, cin: int, width: int, stride: int) -> None:
        super().__init__()
        self.body = nn.Sequential(_conv_bn(cin, width, 1), _conv_bn(width, width, 3, stride),
                                  _conv_bn(width, width * 4, 1, act=None))
        self.down = _conv_bn(cin, width * 4, 1, stride, act=None) if stride != 1 or cin != width * 4 else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(self.body(x) + (x if self.down is None else self.down(x)))


class _ResNet(nn.Module):
    def __init__(self, depths: tuple[int, ...], base: int, classes: int) -> None:
        super().__init__()
        self.stem = nn.Sequential(_conv_bn(3, base, 7, 2), nn.MaxPool2d(3, 2, 1))
        blocks, cin = [], base
        for i, n in enumerate(depths):
            width = base * 2 ** i
            for j in range(n):
                blocks.append(_Bottleneck(cin, width, 2 if j == 0 and i > 0 else 1))
                cin = width * 4
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(cin, classes)

    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
        x = self.blocks(self.stem(pixel_values))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


@_register("resnet", "cnn", _pixels(), _IMAGES, (2, 3))
def _resnet(size: str) -> nn.Module:
    """ResNet (real: ResNet-50, batch 32, 224x224)."""
    return _randomize_norms(_ResNet(*_pick(size, ((1, 1, 1, 1), 8, 10), ((3, 4, 6, 3), 64, 1000))))


def _divisible(v: float, d: int = 8) -> int:
    """Round channels as MobileNet and EfficientNet do: to a multiple of ``d``, losing at most 10%."""
    new = max(d, int(v + d / 2) // d * d)
    return new + d if new < 0.9 * v else new


class _SqueezeExcite(nn.Module):
    def __init__(self, channels: int, squeeze: int, act: type[nn.Module], gate: type[nn.Module]) -> None:
        super().__init__()
        self.fc1, self.fc2 = nn.Conv2d(channels, squeeze, 1), nn.Conv2d(squeeze, channels, 1)
        self.act, self.gate = act(), gate()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.gate(self.fc2(self.act(self.fc1(F.adaptive_avg_pool2d(x, 1)))))


class _InvertedResidual(nn.Module):
    """MobileNetV3's block: 1x1 expand, kxk depthwise, optional squeeze-excite, 1x1 project."""

    def __init__(self, cin: int, k: int, expanded: int, cout: int, se: bool, act: type[nn.Module], stride: int,
                 se_act: type[nn.Module] = nn.ReLU, gate: type[nn.Module] = nn.Hardsigmoid,
                 squeeze: int | None = None) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        if expanded != cin:
            layers.append(_conv_bn(cin, expanded, 1, act=act))
        layers.append(_conv_bn(expanded, expanded, k, stride, groups=expanded, act=act))
        if se:
            layers.append(_SqueezeExcite(expanded, squeeze or _divisible(expanded // 4), se_act, gate))
        layers.append(_conv_bn(expanded, cout, 1, act=None))
        self.block = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.block(x)
        return x + y if self.residual else y


# MobileNetV3-Large: kernel, expanded, out, squeeze-excite, hardswish (else ReLU), stride
_MOBILENET_V3_LARGE = (
    (3, 16, 16, False, False, 1), (3, 64, 24, False, False, 2), (3, 72, 24, False, False, 1),
    (5, 72, 40, True, False, 2), (5, 120, 40, True, False, 1), (5, 120, 40, True, False, 1),
    (3, 240, 80, False, True, 2), (3, 200, 80, False, True, 1), (3, 184, 80, False, True, 1),
    (3, 184, 80, False, True, 1), (3, 480, 112, True, True, 1), (3, 672, 112, True, True, 1),
    (5, 672, 160, True, True, 2), (5, 960, 160, True, True, 1), (5, 960, 160, True, True, 1),
)
_MOBILENET_V3_SMALL_TEST = ((3, 16, 8, True, False, 2), (3, 24, 16, False, True, 2), (5, 32, 16, True, True, 1))


class _MobileNetV3(nn.Module):
    def __init__(self, stem: int, config: tuple[tuple[Any, ...], ...], last: int, hidden: int, classes: int) -> None:
        super().__init__()
        layers: list[nn.Module] = [_conv_bn(3, stem, 3, 2, act=nn.Hardswish)]
        cin = stem
        for k, expanded, cout, se, hs, stride in config:
            layers.append(_InvertedResidual(cin, k, expanded, cout, se, nn.Hardswish if hs else nn.ReLU, stride))
            cin = cout
        layers.append(_conv_bn(cin, last, 1, act=nn.Hardswish))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Linear(last, hidden), nn.Hardswish(), nn.Dropout(0.2),
                                        nn.Linear(hidden, classes))

    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
        return self.classifier(torch.flatten(F.adaptive_avg_pool2d(self.features(pixel_values), 1), 1))


@_register("mobilenet_v3", "cnn", _pixels(), _IMAGES, (2, 3))
def _mobilenet_v3(size: str) -> nn.Module:
    """MobileNetV3 (real: MobileNetV3-Large, batch 32, 224x224): hardswish, squeeze-excite with a
    hardsigmoid gate, depthwise convs."""
    args = _pick(size, (8, _MOBILENET_V3_SMALL_TEST, 48, 64, 10), (16, _MOBILENET_V3_LARGE, 960, 1280, 1000))
    return _randomize_norms(_MobileNetV3(*args))

# EfficientNet-B0 stages: expansion, kernel, stride, in, out, repeats
_EFFICIENTNET_B0 = ((1, 3, 1, 32, 16, 1), (6, 3, 2, 16, 24, 2), (6, 5, 2, 24, 40, 2), (6, 3, 2, 40, 80, 3),
                    (6, 5, 1, 80, 112, 3), (6, 5, 2, 112, 192, 4), (6, 3, 1, 192, 320, 1))
_EFFICIENTNET_TEST = ((1, 3, 1, 8, 8, 1), (6, 5, 2, 8, 16, 1), (6, 3, 2, 16, 16, 2))


class _EfficientNet(nn.Module):
    def __init__(self, stages: tuple[tuple[int, ...], ...], head: int, classes: int) -> None:
        super().__init__()
        layers: list[nn.Module] = [_conv_bn(3, stages[0][3], 3, 2, act=nn.SiLU)]
        for expansion, k, stride, cin, cout, repeats in stages:
            for i in range(repeats):
                c = cin if i == 0 else cout
                # MBConv: squeeze-excite on a quarter of the block's input channels, SiLU and a sigmoid gate
                layers.append(_InvertedResidual(c, k, c * expansion, cout, True, nn.SiLU, stride if i == 0 else 1,
                                                se_act=nn.SiLU, gate=nn.Sigmoid, squeeze=max(1, c // 4)))
        layers.append(_conv_bn(stages[-1][4], head, 1, act=nn.SiLU))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(head, classes))

    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
        return self.classifier(torch.flatten(F.adaptive_avg_pool2d(self.features(pixel_values), 1), 1))


@_register("efficientnet", "cnn", _pixels(), _IMAGES, (2, 3))
def _efficientnet(size: str) -> nn.Module:
    """EfficientNet (real: EfficientNet-B0, batch 32, 224x224): MBConv blocks with SiLU, depthwise convs
    and squeeze-excite."""
    args = _pick(size, (_EFFICIENTNET_TEST, 32, 10), (_EFFICIENTNET_B0, 1280, 1000))
    return _randomize_norms(_EfficientNet(*args))


class _LayerNorm2d(nn.LayerNorm):
    """Layer norm over the channels of an NCHW tensor, taken channels-last as ConvNeXt does."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return super().forward(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


class _ConvNeXtBlock(nn.Module):
    """7x7 depthwise conv, channels-last layer norm, 4x inverted MLP with GELU, layer scale, residual."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.pw1, self.pw2 = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)
        self.gamma = nn.Parameter(torch.empty(dim).uniform_(0.1, 1.0))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.norm(self.dwconv(x).permute(0, 2, 3, 1))
        y = self.gamma * self.pw2(F.gelu(self.pw1(y)))
        return x + y.permute(0, 3, 1, 2)


class _ConvNeXt(nn.Module):
    def __init__(self, depths: tuple[int, ...], dims: tuple[int, ...], classes: int) -> None:
        super().__init__()
        stages: list[nn.Module] = [nn.Conv2d(3, dims[0], 4, 4), _LayerNorm2d(dims[0], eps=1e-6)]
        for i, (depth, dim) in enumerate(zip(depths, dims, strict=True)):
            if i:
                stages += [_LayerNorm2d(dims[i - 1], eps=1e-6), nn.Conv2d(dims[i - 1], dim, 2, 2)]
            stages += [_ConvNeXtBlock(dim) for _ in range(depth)]
        self.features = nn.Sequential(*stages)
        self.norm = nn.LayerNorm(dims[-1], eps=1e-6)
        self.head = nn.Linear(dims[-1], classes)

    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
        return self.head(self.norm(self.features(pixel_values).mean((-2, -1))))


@_register("convnext", "cnn", _pixels(), _IMAGES, (2, 3))
def _convnext(size: str) -> nn.Module:
    """ConvNeXt (real: ConvNeXt-T, batch 32, 224x224)."""
    args = _pick(size, ((1, 1, 1), (16, 32, 64), 10), ((3, 3, 9, 3), (96, 192, 384, 768), 1000))
    return _randomize_norms(_ConvNeXt(*args))

# -- torch.nn: Swin --------------------------------------------------------------------------------


def _window_partition(x: torch.Tensor, w: int) -> torch.Tensor:
    b, h, wd, c = x.shape
    x = x.view(b, h // w, w, wd // w, w, c).permute(0, 1, 3, 2, 4, 5)
    return x.reshape(-1, w * w, c)


def _window_reverse(windows: torch.Tensor, w: int, h: int, wd: int) -> torch.Tensor:
    c = windows.shape[-1]
    x = windows.view(-1, h // w, wd // w, w, w, c).permute(0, 1, 3, 2, 4, 5)
    return x.reshape(-1, h, wd, c)


class _WindowAttention(nn.Module):
    """Multi-head attention inside windows, plus a learned relative-position bias gathered by index."""

    index: torch.Tensor

    def __init__(self, dim: int, heads: int, w: int) -> None:
        super().__init__()
        self.heads, self.scale = heads, (dim // heads) ** -0.5
        self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.bias_table = nn.Parameter(torch.randn((2 * w - 1) ** 2, heads) * 0.5)
        coords = torch.stack(torch.meshgrid(torch.arange(w), torch.arange(w), indexing="ij")).flatten(1)
        rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0) + (w - 1)
        self.register_buffer("index", rel[..., 0] * (2 * w - 1) + rel[..., 1], persistent=False)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        bw, n, c = x.shape
        q, k, v = self.qkv(x).reshape(bw, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        attn = (q * self.scale) @ k.transpose(-2, -1)
        attn = attn + self.bias_table[self.index.view(-1)].view(n, n, -1).permute(2, 0, 1).unsqueeze(0)
        if mask is not None:
            windows = mask.shape[0]
            attn = (attn.view(-1, windows, self.heads, n, n) + mask[None, :, None]).view(-1, self.heads, n, n)
        return self.proj((attn.softmax(-1) @ v).transpose(1, 2).reshape(bw, n, c))


class _SwinBlock(nn.Module):
    """(Shifted-)window attention and an MLP, pre-norm. A shifted block rolls the feature map by half a
    window and masks attention between regions the roll brought together."""

    def __init__(self, dim: int, heads: int, resolution: int, w: int, shift: int) -> None:
        super().__init__()
        self.res, self.w, self.shift = resolution, w, shift
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = _WindowAttention(dim, heads, w)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
        mask = None
        if shift:
            region = torch.zeros(1, resolution, resolution, 1)
            cuts = (slice(0, -w), slice(-w, -shift), slice(-shift, None))
            for i, (hs, ws) in enumerate((hs, ws) for hs in cuts for ws in cuts):
                region[:, hs, ws] = i
            ids = _window_partition(region, w).squeeze(-1)
            mask = (ids[:, None, :] - ids[:, :, None]).ne(0).float() * -100.0
        self.register_buffer("mask", mask, persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, c = x.shape
        y = self.norm1(x).view(b, self.res, self.res, c)
        if self.shift:
            y = torch.roll(y, (-self.shift, -self.shift), (1, 2))
        y = _window_reverse(self.attn(_window_partition(y, self.w), self.mask), self.w, self.res, self.res)
        if self.shift:
            y = torch.roll(y, (self.shift, self.shift), (1, 2))
        x = x + y.reshape(b, n, c)
        return x + self.mlp(self.norm2(x))


class _PatchMerging(nn.Module):
    """2x2 neighbouring patches concatenated (strided slices), normed and projected to twice the width."""

    def __init__(self, dim: int, resolution: int) -> None:
        super().__init__()
        self.res = resolution
        self.norm, self.reduction = nn.LayerNorm(4 * dim), nn.Linear(4 * dim, 2 * dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, _, c = x.shape
        x = x.view(b, self.res, self.res, c)
        x = torch.cat([x[:, 0::2, 0::2], x[:, 1::2, 0::2], x[:, 0::2, 1::2], x[:, 1::2, 1::2]], -1)
        return self.reduction(self.norm(x.view(b, -1, 4 * c)))


class _Swin(nn.Module):
    def __init__(self, image: int, dim: int, depths: tuple[int, ...], heads: tuple[int, ...], w: int,
                 classes: int) -> None:
        super().__init__()
        self.patch = nn.Conv2d(3, dim, 4, 4)
        self.patch_norm = nn.LayerNorm(dim)
        res, layers = image // 4, list[nn.Module]()
        for i, (depth, h) in enumerate(zip(depths, heads, strict=True)):
            if i:
                layers.append(_PatchMerging(dim, res))
                res, dim = res // 2, dim * 2
            win = min(w, res)  # a stage no bigger than a window has one window and no shift
            layers += [_SwinBlock(dim, h, res, win, win // 2 if j % 2 and res > w else 0) for j in range(depth)]
        self.layers = nn.Sequential(*layers)
        self.norm, self.head = nn.LayerNorm(dim), nn.Linear(dim, classes)

    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
        x = self.patch_norm(self.patch(pixel_values).flatten(2).transpose(1, 2))
        return self.head(self.norm(self.layers(x)).mean(1))


@_register("swin", "vision", _pixels(), _IMAGES, (2, 3))
def _swin(size: str) -> nn.Module:
    """Swin Transformer (real: Swin-T, batch 32, 224x224, window 7)."""
    args = _pick(size, (32, 16, (2, 2), (2, 4), 4, 10), (224, 96, (2, 2, 6, 2), (3, 6, 12, 24), 7, 1000))
    return _randomize_norms(_Swin(*args))

# -- torch.nn: UNet block and LSTM tagger ----------------------------------------------------------


class _ResBlock(nn.Module):
    """A diffusion-UNet residual block: GroupNorm, SiLU, 3x3 conv, twice; 1x1 conv shortcut."""

    def __init__(self, cin: int, cout: int, groups: int) -> None:
        super().__init__()
        self.norm1, self.norm2 = nn.GroupNorm(groups, cin), nn.GroupNorm(groups, cout)
        self.conv1, self.conv2 = nn.Conv2d(cin, cout, 3, padding=1), nn.Conv2d(cout, cout, 3, padding=1)
        self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.conv1(F.silu(self.norm1(x)))
        return self.skip(x) + self.conv2(F.silu(self.norm2(h)))


class _UNet(nn.Module):
    """Two resolutions down (strided convs), a middle block, and back up: once through a transposed
    conv, once through bilinear interpolation, each followed by a skip concatenation."""

    def __init__(self, channels: tuple[int, int, int], groups: int) -> None:
        super().__init__()
        c1, c2, c3 = channels
        self.inp = nn.Conv2d(3, c1, 3, padding=1)
        self.down1, self.pool1 = _ResBlock(c1, c1, groups), nn.Conv2d(c1, c1, 3, 2, 1)
        self.down2, self.pool2 = _ResBlock(c1, c2, groups), nn.Conv2d(c2, c2, 3, 2, 1)
        self.mid = _ResBlock(c2, c3, groups)
        self.up2, self.dec2 = nn.ConvTranspose2d(c3, c2, 2, 2), _ResBlock(2 * c2, c2, groups)
        self.up1, self.dec1 = nn.Conv2d(c2, c1, 3, padding=1), _ResBlock(2 * c1, c1, groups)
        self.out = nn.Sequential(nn.GroupNorm(groups, c1), nn.SiLU(), nn.Conv2d(c1, 3, 3, padding=1))

    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
        s1 = self.down1(self.inp(pixel_values))
        s2 = self.down2(self.pool1(s1))
        x = self.mid(self.pool2(s2))
        x = self.dec2(torch.cat([self.up2(x), s2], 1))
        x = self.up1(F.interpolate(x, scale_factor=2.0, mode="bilinear", align_corners=False))
        return self.out(self.dec1(torch.cat([x, s1], 1)))


@_register("unet", "cnn", _pixels(16, 64, 8), _IMAGES, (2, 3))
def _unet(size: str) -> nn.Module:
    """A UNet block (real: channels 128/256/512, 32 groups, batch 8, 64x64, a latent-diffusion size)."""
    return _randomize_norms(_UNet(*_pick(size, ((8, 16, 32), 4), ((128, 256, 512), 32))))


class _LSTMTagger(nn.Module):
    """Embedding, a two-layer bidirectional LSTM, and per-token tag log-probabilities."""

    def __init__(self, vocab: int, emb: int, hidden: int, tags: int) -> None:
        super().__init__()
        self.emb = nn.Embedding(vocab, emb)
        self.lstm = nn.LSTM(emb, hidden, num_layers=2, batch_first=True, bidirectional=True)
        self.out = nn.Linear(2 * hidden, tags)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        h, _ = self.lstm(self.emb(input_ids))
        return F.log_softmax(self.out(h), -1)


def _lstm_inputs(size: str, dim: int | None, batch: int | None) -> dict[str, torch.Tensor]:
    vocab = _pick(size, 64, 30000)
    return _text(vocab, dim or batch or _pick(size, 2, 32), _pick(size, 12, 128), mask=False, low=0)


@_register("lstm_tagger", "rnn", _lstm_inputs, ("batch", {"input_ids": 0}, 1, 256), (2, 3))
def _lstm_tagger(size: str) -> nn.Module:
    """An LSTM tagger (real: vocabulary 30000, embeddings 300, hidden 512, batch 32, sequence 128).
    torch.export traces ``aten::lstm``'s shapes through its time-step loop, which fixes the sequence
    length, so the batch is the dynamic dim."""
    return _LSTMTagger(*_pick(size, (64, 16, 16, 8), (30000, 300, 512, 20)))
