"""Our kernels against transformers': the tanh GELU, and the attention implementation for inference and training."""

import torch

from albert_lab.models import build_model


def test_fast_gelu_matches_albert_gelu_new():
    from transformers.activations import NewGELUActivation

    from albert_lab.kernels import FastGELU, tune_for_inference, tune_for_training

    x = torch.linspace(-8, 8, 20001)
    reference = NewGELUActivation()(x)
    assert (FastGELU()(x) - reference).abs().max() < 1e-6  # fp32: the same tanh formula
    bf16 = FastGELU()(x.bfloat16()).float()
    rounding = (reference.bfloat16().float() - reference).abs().max()
    assert (bf16 - reference).abs().max() < 2 * rounding  # erf in bf16: within bf16's own rounding

    from albert_lab.spec import ModelSpec

    model = build_model(ModelSpec.from_name("lab-tiny"), seed=0).eval()
    ids = torch.randint(5, 100, (2, 16), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        stock = model(input_ids=ids).prediction_logits
        fast = tune_for_inference(model)(input_ids=ids).prediction_logits
    assert not any(isinstance(m, NewGELUActivation) for m in model.modules())
    assert model.config._attn_implementation == "sdpa"
    assert (fast - stock).abs().max() < 1e-5
    assert tune_for_training(model).config._attn_implementation == "eager"


def test_training_attention_by_device():
    """CPU: eager (its backward is the faster one there); CUDA: SDPA without cuDNN's kernels.
    Either way one padding-bias hook on the encoder, however often the model is tuned."""
    from albert_lab.kernels import SAFE_SDPA, TRAINING_SDPA, tune_for_training
    from albert_lab.models import Parts
    from albert_lab.spec import ModelSpec

    model = build_model(ModelSpec.from_name("lab-tiny"), seed=0)
    assert tune_for_training(model, "cpu").config._attn_implementation == "eager"
    assert tune_for_training(model, torch.device("cuda")).config._attn_implementation == TRAINING_SDPA
    assert len(Parts.of(model).encoder._forward_pre_hooks) == 1
    assert {b.name for b in SAFE_SDPA} == {"FLASH_ATTENTION", "EFFICIENT_ATTENTION", "MATH"}  # never CUDNN_ATTENTION
