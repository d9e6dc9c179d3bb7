"""ModelSpec -> transformers pretraining model (MLM head + pair head).

transformers expresses ALBERT's all-shared and grouped sharing natively: a list of
unique layer groups (`albert_layer_groups`) and the mapping layer i -> group
int(i / (L / N)). It cannot express the paper's shared-attention-only and
shared-FFN-only variants (Table 4); for those we build one group per layer and then
tie the attention (or FFN) modules of layers in the same sharing group: the very same
nn.Module objects, so parameters, gradients and optimizer state are shared.

On disk the tied copies are written out in full (see checkpoint/store.py), so plain
transformers loads an equivalent, merely untied, model; our loader re-ties them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import torch
from torch import nn
from transformers import AlbertConfig, AlbertForPreTraining, BertConfig, BertForPreTraining, PreTrainedModel

from albert_lab.errors import CheckpointError
from albert_lab.spec import Half, ModelSpec, layer_group, transformers_fields

PretrainingModel = AlbertForPreTraining | BertForPreTraining
FFN_MODULES = ("ffn", "ffn_output", "full_layer_layer_norm")  # AlbertLayer's FFN and its closing LayerNorm
HALF_MODULES: dict[Half, tuple[str, ...]] = {"attention": ("attention",), "FFN": FFN_MODULES}  # AlbertLayer's modules of each half


def hf_config(spec: ModelSpec) -> AlbertConfig | BertConfig:
    """The transformers config that builds `spec` (before any explicit tying)."""
    fields = transformers_fields(spec)
    cls = BertConfig if fields.pop("model_type") == "bert" else AlbertConfig
    return cls(**fields, pad_token_id=0)


def build_model(spec: ModelSpec, seed: int | None = None) -> PretrainingModel:
    """A randomly initialised pretraining model for `spec`, shared modules tied."""
    if seed is not None:
        torch.manual_seed(seed)
    config = hf_config(spec)
    model = AlbertForPreTraining(config) if spec.family == "albert" else BertForPreTraining(config)
    if spec.relaxed:
        from albert_lab.relaxed import relax_modules

        relax_modules(model, spec)
    tie_shared_modules(model, spec)
    one_token_type(model, spec)
    return model


def one_token_type(model: nn.Module, spec: ModelSpec) -> None:
    """A model of one token type (type_vocab_size 1: valid in BERT configs) reads every token as
    type 0: tokenizers give segment B type 1, which its table has no row for (an IndexError)."""
    if spec.type_vocab_size != 1:
        return
    base = model.albert if hasattr(model, "albert") else model.bert if hasattr(model, "bert") else model

    def as_type_zero(_module: nn.Module, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        if kwargs.get("token_type_ids") is not None:
            kwargs["token_type_ids"] = torch.zeros_like(kwargs["token_type_ids"])
        return args, kwargs

    base.embeddings.register_forward_pre_hook(as_type_zero, with_kwargs=True)


def tie_shared_modules(model: nn.Module, spec: ModelSpec, check_equal: bool = False) -> None:
    """Tie the attention (sharing='attention') or FFN (sharing='ffn') modules of all
    layers in a sharing group to the group's first layer; in a relaxed model, the shared
    matrices (albert_lab/relaxed.py). No-op for other strategies.

    With `check_equal`, refuse to tie copies that differ (a checkpoint whose copies
    were edited is not the shared model its card claims).
    """
    if spec.family != "albert" or not spec.per_layer_modules:
        return
    if spec.relaxed:  # the shared matrices only: biases and LayerNorms are each application's own
        from albert_lab.relaxed import tie_relaxed

        tie_relaxed(model, spec, check_equal)
        return
    groups = model.albert.encoder.albert_layer_groups if hasattr(model, "albert") else model.encoder.albert_layer_groups
    names = tuple(name for half in spec.sharing_rule.shares for name in HALF_MODULES[half])
    first_of_group: dict[int, int] = {}
    for layer, group in enumerate(spec.group_of_layer):
        source = first_of_group.setdefault(group, layer)
        if source == layer:
            continue
        for inner in range(spec.inner_group_num):
            src, dst = groups[source].albert_layers[inner], groups[layer].albert_layers[inner]
            for name in names:
                if check_equal:
                    _check_copies_equal(getattr(src, name), getattr(dst, name), f"layer {layer} {name}")
                setattr(dst, name, getattr(src, name))


def _check_copies_equal(a: nn.Module, b: nn.Module, where: str) -> None:
    for (name, p), q in zip(a.named_parameters(), b.parameters()):
        if p.shape != q.shape or not torch.equal(p.detach().cpu(), q.detach().cpu()):
            raise CheckpointError(f"the checkpoint says these layers share weights, but {where}.{name} differs "
                                  "from its group's first layer; the folder was edited or its albert_lab.json is wrong")


def spec_from_config(config: AlbertConfig | BertConfig, card: dict[str, Any] | None = None) -> ModelSpec:
    """Recover the spec of a checkpoint: from albert_lab.json when we wrote it, else from
    config.json (hub checkpoints), inferring sharing from num_hidden_groups."""
    if card and "spec" in card:
        return ModelSpec.from_dict(card["spec"])
    common = dict(vocab_size=config.vocab_size, hidden_size=config.hidden_size, num_layers=config.num_hidden_layers,
                  num_heads=config.num_attention_heads, ffn_size=config.intermediate_size,
                  dropout=float(config.hidden_dropout_prob), max_positions=config.max_position_embeddings,
                  type_vocab_size=config.type_vocab_size, activation=config.hidden_act)
    if config.model_type == "bert":
        return ModelSpec(family="bert", sharing="none", objective="nsp", **common)
    groups = config.num_hidden_groups
    sharing: Literal["all", "none"] = "none" if groups == config.num_hidden_layers and groups > 1 else "all"
    return ModelSpec(family="albert", embedding_size=config.embedding_size, sharing=sharing, num_groups=groups,
                     inner_group_num=config.inner_group_num, objective="sop", **common)


# ---- the parts of a pretraining model, for both families ----------------------------
@dataclass(frozen=True)
class Parts:
    """Named handles on a pretraining model's parts, the same for ALBERT and BERT."""

    encoder: PreTrainedModel  # AlbertModel / BertModel (with pooler)
    mlm_head: nn.Module  # hidden (..., H) -> logits (..., V)
    pair_head: nn.Module  # pooled (B, H) -> logits (B, 2); label 0 = original order / is next
    word_embeddings: nn.Embedding

    @classmethod
    def of(cls, model: PretrainingModel) -> Parts:
        if isinstance(model, AlbertForPreTraining):
            return cls(model.albert, model.predictions, model.sop_classifier, model.albert.embeddings.word_embeddings)
        return cls(model.bert, model.cls.predictions, model.cls.seq_relationship, model.bert.embeddings.word_embeddings)


def pooler_linear(model: PretrainingModel) -> nn.Linear:
    """The pooler's H -> H map (tanh follows it in both families)."""
    return model.albert.pooler if isinstance(model, AlbertForPreTraining) else model.bert.pooler.dense


def pair_linear(model: PretrainingModel) -> nn.Linear:
    """The pair head's H -> 2 map (ALBERT's SOP head wraps it with a dropout)."""
    return model.sop_classifier.classifier if isinstance(model, AlbertForPreTraining) else model.cls.seq_relationship


def layer_applications(model: PretrainingModel) -> list[nn.Module]:
    """The module run at each of the L layer applications, in order. For a shared
    ALBERT the same module object appears several times."""
    if isinstance(model, AlbertForPreTraining):
        cfg = model.config
        groups = model.albert.encoder.albert_layer_groups
        return [groups[layer_group(i, cfg.num_hidden_layers, cfg.num_hidden_groups)] for i in range(cfg.num_hidden_layers)]
    return list(model.bert.encoder.layer)


def unique_parameter_count(model: nn.Module) -> int:
    """sum(numel) over distinct tensors: tied modules and the tied MLM decoder count once."""
    seen: set[int] = set()
    total = 0
    for p in model.parameters():  # parameters() already skips repeated Parameter objects
        key = id(p) if p.device.type == "meta" else p.data_ptr()
        if key not in seen:
            seen.add(key)
            total += p.numel()
    return total
