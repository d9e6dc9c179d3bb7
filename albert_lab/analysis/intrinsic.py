"""Intrinsic evaluation: MLM, NSP and SOP accuracy on held-out pairs (paper Table 5).

Every model is scored on all three tasks, whatever it was trained with, on held-out
pairs built from text (data/heldout.py), so checkpoints with different tokenizers are
scored on the same pairs.

Label convention (transformers'): 0 = original order / B is the next segment.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch

from albert_lab.analysis.common import approximate_lengths, batch_tokens_for, encode_pairs, length_batches
from albert_lab.data.masking import mask_sequence, masking_config
from albert_lab.kernels import autocast
from albert_lab.models import Parts


@torch.inference_mode()
def pair_probabilities(model, tokenizer, first: Sequence[str], second: Sequence[str], max_len: int = 128,
                       device: torch.device | None = None, dtype: torch.dtype | None = None) -> np.ndarray:
    """P(label 0) from the pair head for each (A, B): P(original order) for an SOP head,
    P(is next) for an NSP head. Pairs are batched by length."""
    device = device or next(model.parameters()).device
    parts = Parts.of(model)
    max_len = min(max_len, model.config.max_position_embeddings)
    lengths = approximate_lengths(tokenizer, first, second, max_len)
    out = np.empty(len(first), dtype=np.float64)
    for idx in length_batches(lengths, batch_tokens_for(model), max_batch=512):
        enc = encode_pairs(tokenizer, [first[i] for i in idx], [second[i] for i in idx], max_len, device)
        with autocast(device, dtype):
            pooled = parts.encoder(**enc).pooler_output
            logits = parts.pair_head(pooled).float()
        out[idx] = torch.softmax(logits, -1)[:, 0].cpu().numpy()
    return out


@torch.inference_mode()
def mlm_accuracy(model, tokenizer, first: Sequence[str], second: Sequence[str], max_len: int = 128,
                 seed: int = 4321, dtype: torch.dtype | None = None) -> tuple[float, int]:
    """Accuracy of masked-token predictions with the training masking (n-grams,
    80/10/10), drawn with a fixed seed. Returns (accuracy, number of predictions)."""
    device = next(model.parameters()).device
    parts = Parts.of(model)
    max_len = min(max_len, model.config.max_position_embeddings)
    cfg = masking_config(tokenizer)
    rng = np.random.default_rng(seed)
    enc = tokenizer(list(first), list(second), truncation="longest_first", max_length=max_len,
                    return_token_type_ids=True)
    correct = total = 0
    lengths = [len(ids) for ids in enc["input_ids"]]
    masked_all = [mask_sequence(np.asarray(ids, dtype=np.int64), cfg, rng) for ids in enc["input_ids"]]
    for idx in length_batches(lengths, batch_tokens_for(model), max_batch=512):
        width = max(lengths[i] for i in idx)
        ids = torch.full((len(idx), width), tokenizer.pad_token_id, dtype=torch.long)
        types = torch.zeros_like(ids)
        attn = torch.zeros_like(ids)
        positions, labels = [], []
        for row, i in enumerate(idx):
            masked, pos, lab, _ = masked_all[i]
            n = lengths[i]
            ids[row, :n] = torch.from_numpy(masked)
            types[row, :n] = torch.tensor(enc["token_type_ids"][i])
            attn[row, :n] = 1
            positions.append(torch.from_numpy(pos) + row * width)
            labels.append(torch.from_numpy(lab))
        pos, lab = torch.cat(positions).to(device), torch.cat(labels).to(device)
        with autocast(device, dtype):
            hidden = parts.encoder(input_ids=ids.to(device), token_type_ids=types.to(device),
                                   attention_mask=attn.to(device)).last_hidden_state
            logits = parts.mlm_head(hidden.reshape(-1, hidden.shape[-1]).index_select(0, pos))
        correct += int((logits.argmax(-1) == lab).sum())
        total += len(lab)
    return correct / max(1, total), total


def intrinsic_eval(model, tokenizer, pairs: pd.DataFrame, max_len: int = 128, dtype: torch.dtype | None = None,
                   limit: int | None = None) -> dict[str, float]:
    """MLM / NSP / SOP accuracy on the natural held-out pairs from build_eval_pairs, and
    SOP accuracy on lead pairs (with the first segment) and on all interior pairs.
    `limit` caps the pairs per task (for quick checks during training)."""
    def task(name: str) -> pd.DataFrame:
        frame = pairs[pairs.task == name]  # a fixed random sample: every source is represented
        return frame.sample(n=limit, random_state=0).sort_index() if limit and len(frame) > limit else frame

    mlm = task("mlm")
    mlm_acc, n_pred = mlm_accuracy(model, tokenizer, list(mlm.a), list(mlm.b), max_len, dtype=dtype)
    result: dict[str, float] = {"mlm_acc": mlm_acc, "mlm_predictions": n_pred}
    for name in ("nsp", "sop"):
        frame = task(name)
        p0 = pair_probabilities(model, tokenizer, list(frame.a), list(frame.b), max_len, dtype=dtype)
        hit = (p0 < 0.5).astype(int) == frame.label.to_numpy()
        natural, interior = frame.natural.to_numpy(), frame.interior.to_numpy()
        result[f"{name}_acc"] = float(hit[natural].mean())
        result[f"{name}_pairs"] = int(natural.sum())
        if name == "sop":
            result["sop_lead_acc"] = float(hit[natural & ~interior].mean())
            result["sop_interior_acc"] = float(hit[interior].mean()) if interior.any() else float("nan")
            result["sop_interior_pairs"] = int(interior.sum())
    return result


def as_frame(metrics: dict[str, float], checkpoint: str) -> pd.DataFrame:
    """Tidy frame: checkpoint, metric, value."""
    return pd.DataFrame([{"checkpoint": checkpoint, "metric": k, "value": v} for k, v in metrics.items()])
