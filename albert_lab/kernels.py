"""Kernel choices for the transformers models: the same functions, faster.

ALBERT's gelu_new (five element-wise ops in transformers) becomes one fused kernel;
attention runs as SDPA for forward passes; in training as SDPA on CUDA (flash or
memory-efficient, never cuDNN's) and eager on the CPU, with one padding bias for both.
Lives beside models.py: checkpoints (loading), analyses and training all tune models the
same way.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward

from albert_lab.models import Parts

TRAINING_SDPA = "albert_lab_sdpa"  # transformers' SDPA attention without cuDNN's kernels (tune_for_training)
SAFE_SDPA = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]


class FastGELU(nn.Module):
    """ALBERT's gelu_new (the tanh approximation) with fast kernels.

    fp32: PyTorch's fused tanh GELU, the same formula as transformers' five element-wise
    ops. bf16/fp16: the exact erf GELU, about 5x faster on CPU; the two differ by at most
    4.7e-4 (at x = 2.70), five times less than bf16's own rounding of the output there."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dtype in (torch.bfloat16, torch.float16):
            return nn.functional.gelu(x)
        return nn.functional.gelu(x, approximate="tanh")


def _fast_gelu(model: nn.Module) -> None:
    from transformers.activations import NewGELUActivation

    for module in model.modules():
        for name, child in module.named_children():
            if isinstance(child, NewGELUActivation):
                setattr(module, name, FastGELU())
        if isinstance(getattr(module, "activation", None), NewGELUActivation):
            module.activation = FastGELU()


def tune_for_inference(model: nn.Module) -> nn.Module:
    """Same function, faster CPU kernels for forward passes: fast GELU (above) and SDPA
    attention (flash attention on CPU is the fastest forward here)."""
    _fast_gelu(model)
    set_attention(model, "sdpa")
    return model


def tune_for_training(model: nn.Module, device: torch.device | str = "cpu") -> nn.Module:
    """As tune_for_inference, with the attention that trains fastest and stays finite on `device`.

    - CUDA: SDPA restricted to flash and memory-efficient attention. Left to itself, torch
      2.11-2.13 picks cuDNN's attention on H100/H200 whenever a mask is given, and its bf16
      backward returns NaN gradients for some shapes (a batch width of 64 mod 128 with any
      row's log-sum-exp below -88.7; pytorch#196678): the NaN uptraining runs through SDPA
      showed within 50-100 steps, where eager attention trained cleanly.
    - CPU: eager. CPU flash attention's backward is slow: a step at length 128 measured
      1.4x slower through SDPA on one CPU, 1.8x on another (3% faster on a third:
      docs/benchmarks.md).
    Either way the padding mask is one additive (B, 1, 1, T) bias (`attention_bias`),
    finite, in the compute dtype, made once per forward instead of transformers' (B, 1, T, T)."""
    _fast_gelu(model)
    set_attention(model, TRAINING_SDPA if torch.device(device).type == "cuda" else "eager")
    encoder = Parts.of(model).encoder
    if _padding_bias not in encoder._forward_pre_hooks.values():  # once, however often tuned (copies keep it)
        encoder.register_forward_pre_hook(_padding_bias, with_kwargs=True)
    return model


def attention_bias(attention_mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor | None:
    """(B, T) mask, 1 = token, 0 = padding -> (B, 1, 1, T) bias added to every head's scores:
    0 at tokens, half of `dtype`'s most negative finite value at padding. Finite, so that no
    kernel meets inf - inf (a row of padding alone gets uniform weights, not NaN), and half
    the minimum, so that adding a score never overflows to -inf; exp(bias - max) is exactly
    0 in the fp32 softmax all the same. None where nothing is padded (checked on the CPU
    only: on a GPU the check would wait for the device; and not in a compiled graph, where it
    would break the graph in two: training decides on the host before, `objective.padding_mask`)."""
    if attention_mask.device.type == "cpu" and not torch.compiler.is_compiling() and bool(attention_mask.all()):
        return None
    bias = (1 - attention_mask.to(dtype)) * (torch.finfo(dtype).min / 2)
    return bias[:, None, None, :]  # (B, 1, 1, T)


def _padding_bias(module: nn.Module, args: tuple, kwargs: dict) -> tuple[tuple, dict] | None:
    """Forward pre-hook of the encoder: a (B, T) attention_mask becomes attention_bias in
    the dtype the scores are computed in (autocast's, else the weights')."""
    mask = kwargs.get("attention_mask")
    if mask is None or mask.dim() != 2:
        return None
    kind = mask.device.type
    dtype = torch.get_autocast_dtype(kind) if torch.is_autocast_enabled(kind) else module.dtype
    return args, {**kwargs, "attention_mask": attention_bias(mask, dtype)}


def _training_sdpa(module: nn.Module, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                   attention_mask: torch.Tensor | None, **kwargs) -> tuple[torch.Tensor, None]:
    with sdpa_kernel(SAFE_SDPA):  # the backend chosen here also runs the backward
        return sdpa_attention_forward(module, query, key, value, attention_mask, **kwargs)


AttentionInterface.register(TRAINING_SDPA, _training_sdpa)


def set_attention(model: nn.Module, implementation: str) -> None:
    if hasattr(model, "set_attn_implementation"):
        model.set_attn_implementation(implementation)
    else:  # pragma: no cover - older transformers
        model.config._attn_implementation = implementation


def autocast(device: torch.device, dtype: torch.dtype | None):
    """bf16/fp16 autocast where asked for; a no-op context for fp32."""
    enabled = dtype in (torch.bfloat16, torch.float16)
    return torch.autocast(device.type, dtype=dtype if enabled else torch.bfloat16, enabled=enabled)
