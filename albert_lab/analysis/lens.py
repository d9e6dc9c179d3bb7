"""The logit lens: every state read through the model's own MLM head (nostalgebraist 2020,
with the head the model was trained with); and the top predictions for one watched
token after every application. The engine and the masking are reapply.py's."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import torch

from albert_lab.analysis.reapply import (
    Inputs,
    encode,
    mlm_logits,
    reapply_note,
    run_applications,
)
from albert_lab.checkpoint.load import ModelBundle
from albert_lab.data.corpus import MAX_LEN
from albert_lab.errors import DataError


def logit_lens(bundles: ModelBundle | Sequence[ModelBundle], texts: Sequence[str], repeat: int = 1, max_len: int = MAX_LEN,
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
                max_len: int = MAX_LEN) -> tuple[Inputs, list[str]]:
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
                     mask_position: bool = True, repeat: int = 1, max_len: int = MAX_LEN) -> pd.DataFrame:
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
