"""What a shared block does when applied again: depth extrapolation and the logit lens.

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

import numpy as np
import pandas as pd
import torch
from torch import nn
from transformers import AlbertForPreTraining
from transformers.masking_utils import create_bidirectional_mask

from albert_lab.analysis.common import check_segment
from albert_lab.checkpoint.load import ModelBundle
from albert_lab.errors import AlbertLabError, DataError
from albert_lab.models import Parts
from albert_lab.spec import ModelSpec, layer_group

MAX_REPEAT = 4
MLM_MISSING = "no MLM head in this checkpoint (transformers would fill it with random weights): no accuracy"


# ---- which models can be applied again ----------------------------------------------------
def reapply_note(spec: ModelSpec) -> str | None:
    """Why the model's block cannot be applied beyond depth L, or None when it can."""
    if spec.family == "bert":
        return "BERT's layers each have their own weights: there is no shared block to apply again (shown to depth L)"
    if spec.sharing in ("attention", "ffn"):
        shared, own = ("attention", "FFN") if spec.sharing == "attention" else ("FFN", "attention")
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


def encode(bundle: ModelBundle, texts: Sequence[str], max_len: int = 128, mask_rate: float = 0.15,
           seed: int = 0) -> Inputs:
    """Tokenise `texts` (one segment each) and mask `mask_rate` of each text's non-special
    tokens with [MASK], drawn with `seed` (at least one per text when mask_rate > 0)."""
    if not texts:
        raise DataError("no text to analyse: type some sentences or pick the built-in sample")
    if not 0.0 <= mask_rate < 1.0:
        raise DataError(f"mask rate: {mask_rate} is not a fraction in [0, 1)")
    texts = [check_segment(t, f"text {i + 1}") for i, t in enumerate(texts)]
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


def state_geometry(states: Sequence[torch.Tensor], attention_mask: torch.Tensor) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Means over the real tokens of ||h_a - h_b|| and of the angle between h_a and h_b
    (degrees) for every pair of states, (S, S) each, and of ||h_a||, (S,). From per-token
    Gram matrices in float64, one text at a time: one pass over the states, and exact
    enough for nearly equal states (|a|^2 + |b|^2 - 2ab cancels in float32)."""
    n, where = len(states), dict(dtype=torch.float64, device=states[0].device)
    distance, angle, norm = torch.zeros(n, n, **where), torch.zeros(n, n, **where), torch.zeros(n, **where)
    for b, keep in enumerate(attention_mask.bool()):
        real = keep.nonzero().flatten()
        if len(real) == 0:
            continue
        first, last = int(real[0]), int(real[-1]) + 1
        # Slices, not gathers: real tokens are one run (padding on one side), and slicing is far faster
        x = torch.stack([s[b, first:last] if last - first == len(real) else s[b, keep] for s in states]).double()  # (S, T_b, H)
        gram = torch.einsum("sth,uth->tsu", x, x)  # (T_b, S, S)
        square = gram.diagonal(dim1=1, dim2=2)  # (T_b, S): ||h_a||^2
        length = square.sqrt()
        distance += (square[:, :, None] + square[:, None, :] - 2 * gram).clamp_min(0).sqrt().sum(0)
        cosine = (gram / (length[:, :, None] * length[:, None, :]).clamp_min(1e-300)).clamp(-1, 1)
        angle += torch.rad2deg(torch.arccos(cosine)).sum(0)
        norm += length.sum(0)
    tokens = int(attention_mask.sum())
    return tuple((t / tokens).cpu().numpy() for t in (distance, angle, norm))


# ---- depth extrapolation -----------------------------------------------------------------------
def extrapolate(bundles: ModelBundle | Sequence[ModelBundle], texts: Sequence[str], repeat: int = 2,
                max_len: int = 128, mask_rate: float = 0.15, seed: int = 0) -> pd.DataFrame:
    """Run each model's block for `repeat` x L applications. One row per (checkpoint,
    application a = 0..kL; 0 = the state entering layer 1): mean over real tokens of
    l2_step = ||h_a - h_{a-1}||, angle_step_deg, l2_to_depth_L = ||h_a - h_L||, norm, and
    l2_return (how close h_a comes back to h_{a-p}, p = 2..L), and masked-token accuracy
    through the model's MLM head; beyond_L marks a > L."""
    frames = []
    for bundle in [bundles] if isinstance(bundles, ModelBundle) else bundles:
        inputs = encode(bundle, texts, max_len, mask_rate, seed)
        states = run_applications(bundle, inputs, repeat)
        accuracy = masked_accuracy(bundle, states, inputs)
        distance, angle, norm = state_geometry(states, inputs.attention_mask)  # (S, S), (S, S), (S,)
        depth, count = bundle.spec.num_layers, len(states)
        step = [float("nan")] + [float(distance[a, a - 1]) for a in range(1, count)]
        angle_step = [float("nan")] + [float(angle[a, a - 1]) for a in range(1, count)]
        # How close h_a comes back to a recent earlier state h_{a-p}, p = 2..L.
        back = [float("nan")] * min(2, count) + [float(distance[a, max(0, a - depth):a - 1].min()) for a in range(2, count)]
        cannot = reapply_note(bundle.spec)
        note = cannot or ""
        if bundle.heads.mlm == "missing":
            note = "; ".join(filter(None, [note, MLM_MISSING]))
        frames.append(pd.DataFrame(dict(
            checkpoint=bundle.name, family=bundle.spec.family, application=range(len(states)),
            l2_step=step, angle_step_deg=angle_step, l2_to_depth_L=distance[:, depth], l2_return=back, norm=norm,
            mlm_accuracy=accuracy,
            beyond_L=[a > depth for a in range(len(states))], depth_L=depth, repeat=1 if cannot else repeat, reapplicable=cannot is None,
            masked=len(inputs.labels), tokens=int(inputs.attention_mask.sum()), note=note,
        )))
    return pd.concat(frames, ignore_index=True)


def extrapolation_verdict(frame: pd.DataFrame, converge: float = 0.02, slow: float = 0.5, cycle: float = 0.5) -> pd.DataFrame:
    """In plain words, per checkpoint, what the block does beyond depth L (needs k >= 2).

    With s = the median step distance ||h_a - h_{a-1}|| over applications a = 2..L (the
    trained depth; the first step, out of the embeddings, is large in every model) and
    d = the last step distance:
    - converges: d < `converge` x s: the state has all but stopped moving (a fixed point).
    - cycles: not converging, and the last state lies closer to a state 2..L applications
      back than `cycle` x d (l2_return < cycle x d): it comes back where it was.
    - slows down: d < `slow` x s: the steps shrink, but the state still moves on.
    - drifts: none of these: the state keeps moving to new places at the pace within L.
    The bands are wide on purpose: two curves that look alike get the same word (a single
    cut between 'converges' and 'drifts' once split 8.8% from 11%). Checkpoints that cannot
    be applied again (see `note`) and k = 1 are 'not judged'.
    """
    rows = []
    for name, group in frame.groupby("checkpoint", sort=False):
        group = group.sort_values("application")
        depth, note = int(group.depth_L.iloc[0]), str(group.note.iloc[0])
        if not group.reapplicable.iloc[0] or not group.beyond_L.any():
            why = note.split("; ")[0] if not group.reapplicable.iloc[0] else "apply the block beyond L (k >= 2) to judge"
            rows.append(dict(checkpoint=name, verdict="not judged", words=why))
            continue
        steps = group.l2_step.to_numpy()
        reference = float(np.median(steps[2:depth + 1])) if depth > 1 else float(steps[1])
        last, back = float(steps[-1]), float(group.l2_return.iloc[-1])
        away = float(group.l2_to_depth_L.iloc[-1])
        if last < converge * reference:
            verdict, words = "converges", f"the last step is {last:.3g}, {last / reference:.1%} of a step within depth L"
        elif back < cycle * last:
            verdict, words = "cycles", f"the last state is {back:.3g} from a recent earlier state, under {cycle:g} of a step ({last:.3g})"
        elif last < slow * reference:
            verdict, words = "slows down", (f"the steps shrink to {last / reference:.0%} of a step within depth L, but the state "
                                            f"still moves on: it ends {away:.3g} from where it was at depth L")
        else:
            verdict, words = "drifts", (f"the last step is still {last / reference:.0%} of a step within depth L and the state "
                                        f"ends {away:.3g} from where it was at depth L")
        acc = group.mlm_accuracy.to_numpy(dtype=float, na_value=np.nan)
        if not np.isnan(acc[-1]):
            words += f"; masked-token accuracy {acc[depth]:.1%} at depth L, {acc[-1]:.1%} after {len(group) - 1} applications"
        rows.append(dict(checkpoint=name, verdict=verdict, words=words))
    return pd.DataFrame(rows, columns=["checkpoint", "verdict", "words"])


# ---- logit lens ---------------------------------------------------------------------------------
def logit_lens(bundles: ModelBundle | Sequence[ModelBundle], texts: Sequence[str], repeat: int = 1, max_len: int = 128,
               mask_rate: float = 0.15, seed: int = 0) -> pd.DataFrame:
    """Every state read through the model's own MLM head. One row per (checkpoint,
    application a = 0..L, or k x L for a shared block): masked-token accuracy, mean
    negative log-likelihood of the right token (nats) and the share of masked tokens
    whose top prediction already equals the final state's. Raises for a missing head."""
    rows = []
    for bundle in [bundles] if isinstance(bundles, ModelBundle) else bundles:
        inputs = encode(bundle, texts, max_len, mask_rate, seed)
        if len(inputs.labels) == 0:
            raise DataError("nothing was masked: raise the mask rate or give longer texts")
        states = run_applications(bundle, inputs, repeat)
        logits = mlm_logits(bundle, states, inputs.positions)  # (S, M, V)
        logp = torch.log_softmax(logits, -1)
        top = logits.argmax(-1)  # (S, M)
        nll = -logp.gather(-1, inputs.labels.expand(len(states), -1).unsqueeze(-1)).squeeze(-1).mean(-1)
        for a in range(len(states)):
            rows.append(dict(checkpoint=bundle.name, family=bundle.spec.family, application=a,
                             mlm_accuracy=float((top[a] == inputs.labels).float().mean()), nll=float(nll[a]),
                             agrees_with_last=float((top[a] == top[-1]).float().mean()),
                             beyond_L=a > bundle.spec.num_layers, depth_L=bundle.spec.num_layers, masked=len(inputs.labels),
                             note=(reapply_note(bundle.spec) or "") if repeat > 1 else ""))
    return pd.DataFrame(rows)


def lens_inputs(bundle: ModelBundle, text: str, position: int | None = None, mask_position: bool = True,
                max_len: int = 128) -> tuple[Inputs, list[str]]:
    """One text with one watched token: the first [MASK] typed in the text (target
    unknown), else token `position` (default: the middle one), replaced by [MASK] unless
    `mask_position` is False. Returns the inputs (labels: the original id, or -1) and
    the tokens as pieces."""
    plain = encode(bundle, [text], max_len, mask_rate=0.0)
    ids = plain.input_ids[0].clone()
    pieces = bundle.tokenizer.convert_ids_to_tokens(ids.tolist())
    typed = (ids == bundle.tokenizer.mask_token_id).nonzero().flatten()
    if len(typed):
        where, label = int(typed[0]), -1
    else:
        real = len(pieces) - 2  # [CLS] ... [SEP]
        where = 1 + real // 2 if position is None else position
        if not 1 <= where <= real:
            raise DataError(f"position: {where} is outside the text's tokens; allowed: 1 to {real} "
                            f"(0 is [CLS]; the text has {real} tokens)")
        label = int(ids[where])
        if mask_position:
            ids[where] = bundle.tokenizer.mask_token_id
    inputs = Inputs(ids.unsqueeze(0), plain.token_type_ids, plain.attention_mask,
                    torch.tensor([where], device=ids.device), torch.tensor([label], device=ids.device))
    return inputs, pieces


def lens_predictions(bundles: ModelBundle | Sequence[ModelBundle], text: str, position: int | None = None, top_k: int = 5,
                     mask_position: bool = True, repeat: int = 1, max_len: int = 128) -> pd.DataFrame:
    """The top-k predictions for one watched token after every application. One row per
    (checkpoint, application, rank): token, probability, whether it is the original
    token, and the original token's own probability and rank at that application."""
    rows = []
    for bundle in [bundles] if isinstance(bundles, ModelBundle) else bundles:
        inputs, pieces = lens_inputs(bundle, text, position, mask_position, max_len)
        states = run_applications(bundle, inputs, repeat)
        probs = torch.softmax(mlm_logits(bundle, states, inputs.positions)[:, 0], -1)  # (S, V)
        best = probs.topk(top_k, dim=-1)
        label = int(inputs.labels[0])
        where = int(inputs.positions[0])
        for a in range(len(states)):
            target_p = float(probs[a, label]) if label >= 0 else float("nan")
            target_rank = int((probs[a] > probs[a, label]).sum()) + 1 if label >= 0 else None
            for rank, (p, token) in enumerate(zip(best.values[a].tolist(), best.indices[a].tolist()), start=1):
                rows.append(dict(checkpoint=bundle.name, family=bundle.spec.family, application=a, depth_L=bundle.spec.num_layers,
                                 rank=rank,
                                 token=bundle.tokenizer.convert_ids_to_tokens(token), probability=p, is_target=token == label,
                                 position=where, watched=pieces[where] if label < 0 else bundle.tokenizer.convert_ids_to_tokens(label),
                                 target_probability=target_p, target_rank=target_rank, masked=mask_position or label < 0))
    return pd.DataFrame(rows)
