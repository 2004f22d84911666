"""The model zoo (nbx_core.testing.zoo) at its small size: each architecture exported with
torch.export, converted with nbx_core.graph.export, loaded and run on NBX, and compared with torch,
at the exported value of its dynamic dim and at a second one, on its first run and on the replay
of the plan that run recorded.

On the aot backend every kernel the models launch compiles for the target GPU, and no value is
compared.
"""

from __future__ import annotations

import pytest
import torch

from nbx_core.backend import kernel_device_type
from nbx_core.graph import load
from nbx_core.graph.export import export
from nbx_core.testing import assert_close, numeric, zoo

# (rtol, atol relative to the output's largest magnitude) for whole-model outputs two layers deep:
# float32 differs from torch by a few ulps per op summed over the depth; bfloat16 by the rounding
# of every stored intermediate, which torch and NBX do at different points (NBX accumulates in
# float32 inside fused kernels).
TOLERANCES = {torch.float32: (1e-4, 1e-5), torch.bfloat16: (3e-2, 3e-2)}

# The model benchmark's architectures (issue 33), also checked in its dtype.
BENCHMARKED = ["bert", "gpt2", "llama", "vit", "resnet", "whisper_encoder"]


# torch before 2.12 cannot prove the contiguity guard that transformers' key/value repeat for
# grouped-query attention adds on a dynamic sequence (ConstraintViolationError on ``seq``): there
# these decoders export with static shapes, and run at the exported size only.
_STATIC_BEFORE_2_12 = {"llama", "qwen2", "mistral"}
_OLD_EXPORT = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2]) < (2, 12)


def _check(name: str, dtype: torch.dtype, tmp_path, second_dim: bool) -> None:
    module, inputs, dynamic = zoo.build(name, "small", dtype)
    static = _OLD_EXPORT and name in _STATIC_BEFORE_2_12
    with torch.no_grad():
        ep = torch.export.export(module, (), inputs, dynamic_shapes=None if static else dynamic)
    prog = load(export(ep, tmp_path / f"{name}.nbx"), device=kernel_device_type())
    dims = zoo.ZOO[name].dims or ()
    second = second_dim and not static
    runs = [inputs] + ([zoo.inputs(name, "small", dtype, dim=d) for d in dims[1:]] if second else [])
    rtol, atol = TOLERANCES[dtype]
    for x in runs:
        if not numeric():  # the aot backend: every kernel a run launches compiles for the target GPU
            prog.check_compiles(**x)
            continue
        with torch.no_grad():
            want = module(**x)
        scale = max(1.0, want.abs().max().item())
        # The first call of a signature runs node by node and records its plan; the second replays
        # the plan, fused (GEMM and convolution epilogues, generated elementwise kernels).
        for way in ("first run", "plan replay"):
            assert_close(
                prog(**x),
                want,
                rtol=rtol,
                atol=atol * scale,
                what=f"{name} ({dtype}) at {[tuple(v.shape) for v in x.values()]}, {way}",
            )


@pytest.mark.parametrize("name", zoo.names())
def test_zoo_model_matches_torch(name, tmp_path):
    _check(name, torch.float32, tmp_path, second_dim=True)


@pytest.mark.parametrize("name", BENCHMARKED)
def test_benchmarked_model_matches_torch_in_bfloat16(name, tmp_path):
    _check(name, torch.bfloat16, tmp_path, second_dim=False)


def test_zoo_lists_the_required_architectures():
    required = {
        "bert",
        "distilbert",
        "roberta",
        "t5_encoder",
        "bart_encoder",
        "gpt2",
        "llama",
        "qwen2",
        "mistral",
        "vit",
        "clip_vision",
        "whisper_encoder",
        "wav2vec2",
        "resnet",
        "mobilenet_v3",
        "efficientnet",
        "convnext",
        "swin",
        "unet",
        "lstm_tagger",
    }
    assert required <= set(zoo.names())
    for name in zoo.names():
        entry = zoo.ZOO[name]
        assert entry.dynamic is not None and entry.dims is not None and entry.dims[0] != entry.dims[1], name


def _torch_out(module, inputs):
    with torch.no_grad():
        return module(**inputs)


def test_mistral_small_window_is_shorter_than_its_sequence():
    """The small Mistral's sliding window changes the logits, so the zoo tests the windowed mask."""
    module, inputs, _ = zoo.build("mistral")
    windowed = _torch_out(module, inputs)
    module.model.config.sliding_window = None
    for layer in module.model.model.layers:
        layer.self_attn.sliding_window = None
    assert not torch.allclose(windowed, _torch_out(module, inputs), atol=1e-4)


def test_text_encoders_pad_their_last_row():
    """The padding mask is not all ones, and it changes the unpadded tokens' outputs."""
    module, inputs, _ = zoo.build("bert")
    mask = inputs["attention_mask"]
    assert mask[0].all() and not mask[-1].all()
    unmasked = _torch_out(module, {**inputs, "attention_mask": torch.ones_like(mask)})
    keep = mask[-1].bool()
    assert not torch.allclose(_torch_out(module, inputs)[-1, keep], unmasked[-1, keep], atol=1e-4)


def test_build_is_deterministic_and_inputs_follow_dim():
    a, x, dyn = zoo.build("gpt2")
    b, y, _ = zoo.build("gpt2")
    assert all(torch.equal(p, q) for p, q in zip(a.state_dict().values(), b.state_dict().values(), strict=True))
    assert torch.equal(x["input_ids"], y["input_ids"]) and x["input_ids"].unique().numel() > 1
    assert tuple(zoo.inputs("gpt2", dim=9)["input_ids"].shape) == (2, 9)
    assert set(dyn) == {"input_ids"} and list(dyn["input_ids"]) == [1]
    with pytest.raises(KeyError, match="no architecture"):
        zoo.build("alexnet")
