"""Gradient flow per layer, including per application of a shared layer.

With cross-layer sharing, `param.grad` of a shared weight is the SUM of the
contributions of every layer that applied it, which hides how gradient flows through
depth. We therefore run the pretraining loss through an *unshared view* of the model:
one module per layer application whose parameters are new autograd leaves over the
same storage (no copy). Each leaf's gradient is that application's contribution, and
their sum is exactly the shared parameter's `.grad` (tests check it). The original
model's `.grad` is never touched.

Views in the returned tidy frame (columns: view, layer, component, mean_abs, max_abs,
numel):
- "per_application": |dL/dW| of each layer application l = 1..L (attention, FFN, LayerNorm);
- "shared_sum":      the summed gradient of each unique shared block (what the
                     optimizer sees), for models that share;
- "hidden":          |dL/dh| of the hidden state leaving each layer (l = 0: entering layer 1);
- "outside":         embeddings, E->H projection, pooler, MLM head and pair head (layer -1).
"""

from __future__ import annotations

import copy
import re
from collections import defaultdict
from typing import get_args

import pandas as pd
import torch
from torch import nn

from albert_lab.analysis.common import Progress
from albert_lab.checkpoint.heads import trained_with
from albert_lab.checkpoint.load import ModelBundle
from albert_lab.data.batching import Batch, batch_from_documents
from albert_lab.data.corpus import MAX_LEN, Document, split_sentences
from albert_lab.errors import CheckpointError
from albert_lab.kernels import autocast, tune_for_training
from albert_lab.models import PretrainingModel, build_model, one_token_type
from albert_lab.objective import PretrainingLoss
from albert_lab.spec import ModelSpec, Objective

_ALBERT_LAYER = re.compile(r"^albert\.encoder\.albert_layer_groups\.(\d+)\.albert_layers\.(\d+)\.(.+)$")
_BERT_LAYER = re.compile(r"^bert\.encoder\.layer\.(\d+)\.(.+)$")
_LAYER_MODULE = re.compile(r"^(albert\.encoder\.albert_layer_groups\.\d+\.albert_layers\.\d+|bert\.encoder\.layer\.\d+)$")


def unshared_view(model: PretrainingModel, spec: ModelSpec) -> PretrainingModel:
    """The same function as `model`, with one module per layer application whose
    parameters are fresh leaves viewing the original storage."""
    config = copy.deepcopy(model.config)
    if spec.family == "albert":
        config.num_hidden_groups = spec.num_layers
    with torch.device("meta"):
        clone = build_model(spec) if spec.relaxed else type(model)(config)  # assigning each name below unties them
    source = model.state_dict()
    one_module_each = spec.family == "bert" or spec.per_layer_modules
    groups = list(range(spec.num_layers)) if one_module_each else spec.group_of_layer
    state = {}
    for key in clone.state_dict():
        match = _ALBERT_LAYER.match(key)
        src_key = (f"albert.encoder.albert_layer_groups.{groups[int(match[1])]}.albert_layers.{match[2]}.{match[3]}"
                   if match else key)
        state[key] = source[src_key].detach()
    clone.load_state_dict(state, assign=True)
    for name, buffer in model.named_buffers():  # non-persistent buffers are not in state_dict
        owner, _, attr = name.rpartition(".")
        clone.get_submodule(owner).register_buffer(attr, buffer.clone(), persistent=False)
    clone.tie_weights()  # the MLM decoder and the word embeddings are one tensor again
    one_token_type(clone, spec)  # the model's hook is not copied: type_vocab_size 1 was an IndexError mid-run
    for p in clone.parameters():
        p.requires_grad_(True)
    return tune_for_training(clone, next(model.parameters()).device).train(model.training)


def _component(rest: str) -> str:
    if "LayerNorm" in rest or "layer_norm" in rest:
        return "LayerNorm"
    return "attention" if "attention" in rest else "FFN"


def _outside_component(name: str) -> str:
    if "embedding_hidden_mapping_in" in name:
        return "E->H projection"
    if "embeddings" in name:
        return "embeddings"
    if "pooler" in name:
        return "pooler"
    if "sop_classifier" in name or "seq_relationship" in name:
        return "pair head"
    return "MLM head"


def _stats(grads: list[torch.Tensor]) -> tuple[float, float, int]:
    """mean |g| and max |g| over all the tensors, tensor by tensor: no concatenated copy
    (albert-base's gradients are ~100M numbers; measured 5x faster than one big cat)."""
    total, peak, numel = 0.0, 0.0, 0
    for g in grads:
        magnitude = g.detach().float().abs()
        total += float(magnitude.sum())
        peak = max(peak, float(magnitude.max()))
        numel += magnitude.numel()
    return total / numel, peak, numel


def gradient_flow_on_batch(model: PretrainingModel, spec: ModelSpec, batch: Batch, objective: str | None = None,
                           dtype: torch.dtype | None = None, progress: Progress | None = None) -> pd.DataFrame:
    """Gradient flow of the pretraining loss (MLM + pair loss) on one batch. `progress` is
    told of each layer application, forward and backward; if it raises, the computation
    stops there and `model` is as it was (the view is a throwaway)."""
    view = unshared_view(model, spec)
    device = next(model.parameters()).device
    loss_fn = PretrainingLoss(view, objective or spec.objective)
    if progress is not None:
        _tell_forward(view, progress)
    with autocast(device, dtype):
        out = loss_fn(batch.to(device), output_hidden_states=True)
    hidden = list(out.hidden_states)
    for h in hidden:
        h.retain_grad()
    if progress is not None:
        _tell_backward(hidden, progress)
    out.loss.backward()
    rows = _weight_rows(view, spec) + _hidden_rows(hidden, batch.attention_mask.to(device))
    return pd.DataFrame(rows, columns=["view", "layer", "applications", "component", "mean_abs", "max_abs", "numel"])


def _tell_forward(view: nn.Module, progress: Progress) -> None:
    """Each layer application's forward tells `progress` (the first third of the time)."""
    layers = [m for name, m in view.named_modules() if _LAYER_MODULE.match(name)]
    for i, layer in enumerate(layers, 1):
        def hook(*_, i: int = i) -> None:
            progress(i / len(layers) / 3, f"forward, layer {i} of {len(layers)}")
        layer.register_forward_hook(hook)


def _tell_backward(hidden: list[torch.Tensor], progress: Progress) -> None:
    """The gradient reaching the state that enters layer l + 1 tells `progress` that the
    backward has passed that layer (backward runs from the top: the last two thirds)."""
    n = len(hidden) - 1
    for layer, h in enumerate(hidden[:-1]):
        def hook(_: torch.Tensor, layer: int = layer) -> None:  # returns None: the gradient is left as it is
            progress(1 / 3 + 2 / 3 * (n - layer) / n, f"backward, layer {layer + 1} of {n}")
        h.register_hook(hook)


def _weight_rows(view: nn.Module, spec: ModelSpec) -> list[dict]:
    per_app: dict[tuple[int, str], list[torch.Tensor]] = defaultdict(list)
    outside: dict[str, list[torch.Tensor]] = defaultdict(list)
    for name, p in view.named_parameters():
        if p.grad is None:
            continue
        match = _ALBERT_LAYER.match(name)
        if match:
            application = int(match[1]) * spec.inner_group_num + int(match[2]) + 1
            per_app[(application, _component(match[3]))].append(p.grad)
        elif match := _BERT_LAYER.match(name):
            per_app[(int(match[1]) + 1, _component(match[2]))].append(p.grad)
        else:
            outside[_outside_component(name)].append(p.grad)
    rows = [dict(view="per_application", layer=layer, component=comp, **_named(_stats(g)))
            for (layer, comp), g in sorted(per_app.items())]
    rows += [dict(view="outside", layer=-1, component=comp, **_named(_stats(g))) for comp, g in outside.items()]
    return rows + _shared_sum_rows(per_app, spec)


def _shared_sum_rows(per_app: dict[tuple[int, str], list[torch.Tensor]], spec: ModelSpec) -> list[dict]:
    """Sum per-application gradients over the layers of each sharing group, per
    component; layer = the group's first application, applications = all of them ('1-6')."""
    rule = spec.sharing_rule
    if not rule.shares:
        return []
    shared = rule.shares + (("LayerNorm",) if rule.whole_block and not spec.relaxed else ())  # a whole block shares its LayerNorms too
    rows = []
    for group in sorted(set(spec.group_of_layer)):
        layers = [i for i, g in enumerate(spec.group_of_layer) if g == group]
        for inner in range(spec.inner_group_num):
            apps = [i * spec.inner_group_num + inner + 1 for i in layers]
            for comp in shared:
                tensors = [per_app[(a, comp)] for a in apps if (a, comp) in per_app]
                if tensors:
                    summed = [_sum(parts) for parts in zip(*tensors)]
                    rows.append(dict(view="shared_sum", layer=apps[0], applications=_span(apps), component=comp,
                                     **_named(_stats(summed))))
    return rows


def _span(apps: list[int]) -> str:
    """[1, ..., 6] -> '1-6'; [1, 3, 5] -> '1, 3, 5' (inner groups interleave)."""
    if len(apps) > 1 and apps == list(range(apps[0], apps[-1] + 1)):
        return f"{apps[0]}-{apps[-1]}"
    return ", ".join(map(str, apps))


def _sum(tensors: tuple[torch.Tensor, ...]) -> torch.Tensor:
    """Sum in place into one buffer (torch.stack would first copy all L tensors)."""
    total = tensors[0].detach().clone()
    for t in tensors[1:]:
        total.add_(t)
    return total


def _hidden_rows(hidden: list[torch.Tensor], attention_mask: torch.Tensor) -> list[dict]:
    keep = attention_mask.bool()  # (B, T): real tokens only
    rows = []
    for layer, h in enumerate(hidden):
        g = h.grad[keep].abs().float()  # (N, H)
        rows.append(dict(view="hidden", layer=layer, component="hidden state", mean_abs=float(g.mean()),
                         max_abs=float(g.max()), numel=int(g.numel())))
    return rows


def _named(stats: tuple[float, float, int]) -> dict:
    return dict(zip(("mean_abs", "max_abs", "numel"), stats))


def check_loss_heads(bundle: ModelBundle, objective: str) -> None:
    """The pretraining loss needs the MLM head, and the pair head unless objective is
    'none'; a missing head would be transformers' random initialisation (unseeded), so
    the gradients would describe noise: refuse, saying what would work instead."""
    heads = bundle.heads
    if heads.mlm == "missing":
        raise CheckpointError(f"{bundle.name}: the MLM head is missing from the checkpoint, and the pretraining loss needs it "
                              "(a random head would give random gradients); gradient flow needs a checkpoint with an MLM head"
                              + (f" (its {heads.pair_kind.upper()} head is missing too)" if heads.pair == "missing" else ""))
    if heads.pair == "missing" and objective != "none":
        raise CheckpointError(f"{bundle.name}: the {heads.pair_kind.upper()} head is missing from the checkpoint, so the "
                              f"{objective.upper()} loss would run through a random head; use --objective none (MLM loss only), "
                              "or fit a probe head with `albert-lab fit-head`")


def own_objective(pair_head: str, trained: str) -> str:
    """The pair loss gradient flow adds unless told otherwise, from what a checkpoint's files say (its
    pair head's state, and `trained`: checkpoint.heads.trained_with, as the model card has them): the
    loss it was trained with, so its gradients are the ones it trained with; 'none' (MLM alone) where
    its pair head is missing (the pair loss would run through a random head, so it is refused) or
    nothing records a pair loss (a hub encoder: 'unknown')."""
    return trained if pair_head != "missing" and trained in get_args(Objective) else "none"


def default_objective(bundle: ModelBundle) -> str:
    """`own_objective` of a loaded checkpoint: what `gradient_flow`, `albert-lab gradflow` and the page start from."""
    return own_objective(bundle.heads.pair, trained_with(bundle.spec, bundle.heads, bundle.card))


def gradient_flow(bundle: ModelBundle, texts: list[str], objective: str | None = None, seed: int = 0,
                  max_len: int = MAX_LEN, max_pairs: int = 16, progress: Progress | None = None) -> pd.DataFrame:
    """Gradient flow of a checkpoint's pretraining loss on pairs made from `texts`
    (as in training, masks drawn with `seed`); a 'checkpoint' column is added. The
    pair loss is `objective`, else the checkpoint's own (`default_objective`).
    Refuses a loss that would run through a head the checkpoint does not have.
    `progress` (may raise to stop): see gradient_flow_on_batch."""
    objective = objective or default_objective(bundle)
    check_loss_heads(bundle, objective)
    docs = [Document(f"text {i + 1}", tuple(split_sentences(t))) for i, t in enumerate(texts)]
    batch = batch_from_documents(docs, bundle.tokenizer, objective, min(max_len, bundle.spec.max_positions), seed, max_pairs)
    frame = gradient_flow_on_batch(bundle.model, bundle.spec, batch, objective, progress=progress)
    frame.insert(0, "checkpoint", bundle.name)
    return frame


def snapshot_frame(snapshots: list[dict]) -> pd.DataFrame:
    """A training run's gradient-flow snapshots (RunInfo.gradflow) as one tidy frame: each
    snapshot's rows with its step."""
    return pd.DataFrame([dict(step=s["step"], **row) for s in snapshots for row in s["rows"]])


def applied_components(frame: pd.DataFrame) -> list[str]:
    """The components that have per-application rows (attention, FFN, LayerNorm)."""
    return sorted(frame[frame.view == "per_application"].component.unique())

