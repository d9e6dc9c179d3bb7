"""The layer-application engine: a model's blocks run once, or again past their depth.

Used by oscillation, depth extrapolation (extrapolation.py), the logit lens (lens.py),
attention and CKA: `encode` the texts (optionally masked), `run_applications` for the
state before and after every application, the MLM head on those states, and the one
geometry of states (`token_geometry`: distances, angles and norms, token by token;
`state_geometry`: their means over the real tokens).

An all-shared ALBERT runs one block L times; nothing stops us from running it k x L
times. For grouped sharing (N groups) we use transformers' own layer-to-group formula
with L' = k x L layers, so each group runs k times as long and k = 1 is the model
itself. Models whose layers have their own weights (BERT, not-shared ALBERT, and
shared-attention / shared-FFN ALBERT, whose other half is per layer) have no block to
apply again: they are run to depth L only, and every row says so in `note`.

Inputs are masked once, deterministically: with `seed`, `mask_rate` of each text's
non-special tokens (at least one) become [MASK] (no 80/10/10 replacement: the task is
filling blanks, so accuracies are below a card's mlm_acc, which also counts the chosen
tokens left unchanged). Every state is computed on that masked input; masked-token accuracy
reads each state through the model's own MLM head (the "logit lens" of nostalgebraist
2020, with the head the model was trained with). A checkpoint whose MLM head is
missing gets no accuracy (None, with a note), never numbers from random weights.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import torch
from torch import nn
from transformers import AlbertForPreTraining
from transformers.masking_utils import create_bidirectional_mask

from albert_lab.analysis.pair_encoding import check_segment
from albert_lab.checkpoint.load import ModelBundle
from albert_lab.data.corpus import MAX_LEN
from albert_lab.errors import AlbertLabError, DataError
from albert_lab.limits import MAX_REPEAT, MAX_TEXTS
from albert_lab.models import Parts
from albert_lab.spec import HALVES, ModelSpec, layer_group

MLM_MISSING = "no MLM head in this checkpoint (transformers would fill it with random weights): no accuracy"


# ---- which models can be applied again ----------------------------------------------------
def reapply_note(spec: ModelSpec) -> str | None:
    """Why the model's block cannot be applied beyond depth L, or None when it can."""
    if spec.family == "bert":
        return "BERT's layers each have their own weights: there is no shared block to apply again (shown to depth L)"
    if spec.relaxed:
        return ("each application adds its own low-rank correction to the shared matrices (relaxed sharing): there is "
                "no one block to apply again (shown to depth L)")
    if spec.sharing_rule.tied:
        shared, own = (" and ".join(h for h in HALVES if (h in spec.sharing_rule.shares) == mine) for mine in (True, False))
        return (f"only the {shared} is shared; the {own} of each layer has its own weights, so no whole block "
                "can be applied again (shown to depth L)")
    if spec.sharing == "none" or spec.num_groups == spec.num_layers > 1:
        return "the layers are not shared: there is no block to apply again (shown to depth L)"
    return None


def application_groups(spec: ModelSpec, repeat: int = 1) -> list[int]:
    """The block (sharing group, or layer for unshared models) run at each application:
    k x L applications by transformers' formula with L' = k x L; unshared models: L."""
    if not 1 <= repeat <= MAX_REPEAT:
        raise AlbertLabError(f"repeat: {repeat} is not allowed; allowed: 1 to {MAX_REPEAT} (k x L applications)")
    if reapply_note(spec) is not None:  # one module per layer (partial sharing ties modules across them)
        return list(range(spec.num_layers))
    depth = repeat * spec.num_layers
    return [layer_group(i, depth, spec.num_groups) for i in range(depth)]


def blocks(model: nn.Module, groups: Sequence[int]) -> list[list[nn.Module]]:
    """The transformer layers run at each application: an ALBERT group runs its
    inner_group_num layers, a BERT layer is one."""
    if isinstance(model, AlbertForPreTraining):
        unique = model.albert.encoder.albert_layer_groups
        return [list(unique[g].albert_layers) for g in groups]
    return [[model.bert.encoder.layer[g]] for g in groups]


# ---- inputs ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Inputs:
    """Tokenised, optionally masked texts. `positions` index the flattened (B*T) tokens."""

    input_ids: torch.Tensor  # (B, T), masked
    token_type_ids: torch.Tensor  # (B, T)
    attention_mask: torch.Tensor  # (B, T) 1 = real token
    positions: torch.Tensor  # (M,) masked tokens, index into B*T
    labels: torch.Tensor  # (M,) their original ids

    def model_inputs(self) -> dict[str, torch.Tensor]:
        return dict(input_ids=self.input_ids, token_type_ids=self.token_type_ids, attention_mask=self.attention_mask)


def encode(bundle: ModelBundle, texts: Sequence[str], max_len: int = MAX_LEN, mask_rate: float = 0.15,
           seed: int = 0) -> Inputs:
    """Tokenise `texts` (one segment each) and mask `mask_rate` of each text's non-special
    tokens with [MASK], drawn with `seed` (at least one per text when mask_rate > 0)."""
    if not texts:
        raise DataError("no text to analyse: type some sentences or pick the built-in sample")
    if len(texts) > MAX_TEXTS:
        raise DataError(f"{len(texts):,} texts: an analysis reads at most {MAX_TEXTS} at once (it keeps every layer's "
                        f"state of every token); give fewer, a sample of them for instance")
    if not 0.0 <= mask_rate < 1.0:
        raise DataError(f"mask rate: {mask_rate} is not a fraction in [0, 1)")
    texts = [check_segment(t, f"text {i + 1}", "give text with words in it") for i, t in enumerate(texts)]
    tok = bundle.tokenizer
    enc = tok(texts, truncation=True, max_length=min(max_len, bundle.spec.max_positions), padding=True,
              return_token_type_ids=True, return_tensors="pt")
    ids = enc["input_ids"].clone()
    special = torch.isin(ids, torch.tensor(tok.all_special_ids)) | (enc["attention_mask"] == 0)
    candidates = (~special) & (ids != tok.mask_token_id)
    rng = np.random.default_rng(seed)
    positions = []
    for row in range(ids.shape[0]):
        where = candidates[row].nonzero().flatten().numpy()
        if mask_rate == 0 or len(where) == 0:
            continue
        chosen = np.sort(rng.choice(where, size=max(1, round(mask_rate * len(where))), replace=False))
        positions.append(torch.from_numpy(chosen) + row * ids.shape[1])
    flat = torch.cat(positions) if positions else torch.zeros(0, dtype=torch.long)
    labels = ids.flatten()[flat].clone()
    ids.view(-1)[flat] = tok.mask_token_id
    dev = bundle.device
    return Inputs(ids.to(dev), enc["token_type_ids"].to(dev), enc["attention_mask"].to(dev), flat.to(dev), labels.to(dev))


# ---- running the applications ------------------------------------------------------------------
@torch.inference_mode()
def run_applications(bundle: ModelBundle, inputs: Inputs, repeat: int = 1) -> list[torch.Tensor]:
    """States before and after every application: len = applications + 1, each (B, T, H),
    state 0 entering the first layer (ALBERT: after the E -> H projection)."""
    model = bundle.model
    encoder = Parts.of(model).encoder
    h = encoder.embeddings(input_ids=inputs.input_ids, token_type_ids=inputs.token_type_ids)
    mask = create_bidirectional_mask(config=encoder.config, inputs_embeds=h, attention_mask=inputs.attention_mask)
    if isinstance(model, AlbertForPreTraining):
        h = encoder.encoder.embedding_hidden_mapping_in(h)
    states = [h]
    for layers in blocks(model, application_groups(bundle.spec, repeat)):
        for layer in layers:
            h = layer(h, mask)
        states.append(h)
    return states


@torch.inference_mode()
def mlm_logits(bundle: ModelBundle, states: Sequence[torch.Tensor], positions: torch.Tensor) -> torch.Tensor:
    """The model's own MLM head on the masked tokens of every state: (S, M, V) float32."""
    if bundle.heads.mlm == "missing":
        raise AlbertLabError(f"{bundle.name}: {MLM_MISSING}; pick a checkpoint with an MLM head")
    head = Parts.of(bundle.model).mlm_head
    picked = torch.stack([s.reshape(-1, s.shape[-1]).index_select(0, positions) for s in states])  # (S, M, H)
    return head(picked).float()


def masked_accuracy(bundle: ModelBundle, states: Sequence[torch.Tensor], inputs: Inputs) -> list[float | None]:
    """Share of masked tokens whose top prediction is the original token, per state."""
    if bundle.heads.mlm == "missing" or len(inputs.labels) == 0:
        return [None] * len(states)
    hits = mlm_logits(bundle, states, inputs.positions).argmax(-1) == inputs.labels  # (S, M)
    return [float(v) for v in hits.float().mean(-1)]


class Geometry(NamedTuple):
    """States of the same tokens compared pairwise, token by token (float64)."""

    distance: torch.Tensor  # (..., S, S) ||h_a - h_b||
    cosine: torch.Tensor  # (..., S, S) cos(h_a, h_b)
    norm: torch.Tensor  # (..., S) ||h_a||

    @property
    def angle(self) -> torch.Tensor:
        """The angle between h_a and h_b in degrees, (..., S, S)."""
        return torch.rad2deg(torch.arccos(self.cosine))


def token_geometry(x: torch.Tensor) -> Geometry:
    """Every pair of S states of the same tokens, x (S, ..., H), compared token by token:
    the one geometry of states. From per-token Gram matrices in float64: one pass over the
    states, and exact enough for nearly equal states (|a|^2 + |b|^2 - 2ab cancels in float32)."""
    x = x.double()
    gram = torch.einsum("s...h,u...h->...su", x, x)  # (..., S, S)
    square = gram.diagonal(dim1=-2, dim2=-1)  # (..., S): ||h_a||^2
    length = square.sqrt()
    distance = (square[..., :, None] + square[..., None, :] - 2 * gram).clamp_min(0).sqrt()
    cosine = (gram / (length[..., :, None] * length[..., None, :]).clamp_min(1e-300)).clamp(-1, 1)
    return Geometry(distance, cosine, length)


def state_geometry(states: Sequence[torch.Tensor], attention_mask: torch.Tensor) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Means over the real tokens of ||h_a - h_b|| and of the angle between h_a and h_b
    (degrees) for every pair of states, (S, S) each, and of ||h_a||, (S,): `token_geometry`
    one text at a time."""
    n, where = len(states), dict(dtype=torch.float64, device=states[0].device)
    distance, angle, norm = torch.zeros(n, n, **where), torch.zeros(n, n, **where), torch.zeros(n, **where)
    for b, keep in enumerate(attention_mask.bool()):
        real = keep.nonzero().flatten()
        if len(real) == 0:
            continue
        first, last = int(real[0]), int(real[-1]) + 1
        # Slices, not gathers: real tokens are one run (padding on one side), and slicing is far faster
        x = torch.stack([s[b, first:last] if last - first == len(real) else s[b, keep] for s in states])  # (S, T_b, H)
        geometry = token_geometry(x)  # (T_b, S, S)
        distance += geometry.distance.sum(0)
        angle += geometry.angle.sum(0)
        norm += geometry.norm.sum(0)
    tokens = int(attention_mask.sum())
    return tuple((t / tokens).cpu().numpy() for t in (distance, angle, norm))
