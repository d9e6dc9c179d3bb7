"""Intrinsic evaluation: MLM, NSP and SOP accuracy on held-out pairs (paper Table 5).

Every model is scored on all three tasks, whatever it was trained with, on held-out
pairs built from text (data/heldout.py), so checkpoints with different tokenizers are
scored on the same pairs.

Label convention (transformers'): 0 = original order / B is the next segment.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np
import pandas as pd
import torch

from albert_lab.analysis.common import Progress, batch_tokens_for, length_batches
from albert_lab.analysis.pair_encoding import EncodedPairs, clip_sides, tokenize_pairs
from albert_lab.data.corpus import MAX_LEN
from albert_lab.data.masking import mask_sequence, masking_config
from albert_lab.kernels import autocast
from albert_lab.models import Parts


def pair_probabilities(model, tokenizer, first: Sequence[str], second: Sequence[str], max_len: int = MAX_LEN,
                       device: torch.device | None = None, dtype: torch.dtype | None = None,
                       progress: Progress | None = None) -> np.ndarray:
    """P(label 0) from the pair head for each (A, B): P(original order) for an SOP head,
    P(is next) for an NSP head (`encoded_probabilities` of the pairs tokenised once)."""
    max_len = min(max_len, model.config.max_position_embeddings)
    return encoded_probabilities(model, tokenize_pairs(tokenizer, first, second, max_len), device, dtype, progress)


@torch.inference_mode()
def encoded_probabilities(model, pairs: EncodedPairs, device: torch.device | None = None, dtype: torch.dtype | None = None,
                          progress: Progress | None = None) -> np.ndarray:
    """P(label 0) from the pair head for each encoded pair, in input order. Pairs are batched by
    length; `progress` hears before each batch (and may raise to stop)."""
    device = device or next(model.parameters()).device
    parts = Parts.of(model)
    n = len(pairs.ids)
    out = np.empty(n, dtype=np.float64)
    done = 0
    for idx in length_batches(pairs.lengths, batch_tokens_for(model), max_batch=512):
        if progress is not None:
            progress(done / n, f"{done:,} of {n:,} pairs")
        done += len(idx)
        enc = pairs.batch(idx, device)
        with autocast(device, dtype):
            pooled = parts.encoder(**enc).pooler_output
            logits = parts.pair_head(pooled).float()
        out[idx] = torch.softmax(logits, -1)[:, 0].cpu().numpy()
    return out


@dataclass(frozen=True)
class MaskedPairs:
    """Pairs tokenised and masked once (the training masking: n-grams, 80/10/10, drawn with a
    fixed seed), to be batched by length: every model scored on them predicts the same tokens."""

    ids: list[list[int]]
    types: list[list[int]]
    masked: list[tuple]  # per pair: mask_sequence's (masked ids, positions, labels, ...)
    pad_id: int

    @classmethod
    def of(cls, tokenizer, first: Sequence[str], second: Sequence[str], max_len: int, seed: int = 4321) -> MaskedPairs:
        cfg, rng = masking_config(tokenizer), np.random.default_rng(seed)
        enc = tokenizer(clip_sides(tokenizer, first, max_len), clip_sides(tokenizer, second, max_len),
                        truncation="longest_first", max_length=max_len, return_token_type_ids=True)
        masked = [mask_sequence(np.asarray(ids, dtype=np.int64), cfg, rng) for ids in enc["input_ids"]]
        return cls(enc["input_ids"], enc["token_type_ids"], masked, tokenizer.pad_token_id)

    @property
    def lengths(self) -> list[int]:
        return [len(ids) for ids in self.ids]

    def batch(self, idx: Sequence[int]) -> tuple[dict[str, torch.Tensor], torch.Tensor, torch.Tensor, np.ndarray]:
        """The model inputs of pairs `idx`, padded; the masked positions (into the flattened batch),
        their labels, and the pair each belongs to."""
        lengths = self.lengths
        width = max(lengths[i] for i in idx)
        ids = torch.full((len(idx), width), self.pad_id, dtype=torch.long)
        types, attn = torch.zeros_like(ids), torch.zeros_like(ids)
        positions, labels, owners = [], [], []
        for row, i in enumerate(idx):
            masked, pos, lab, _ = self.masked[i]
            n = lengths[i]
            ids[row, :n] = torch.from_numpy(masked)
            types[row, :n] = torch.tensor(self.types[i])
            attn[row, :n] = 1
            positions.append(torch.from_numpy(pos) + row * width)
            labels.append(torch.from_numpy(lab))
            owners.append(np.full(len(lab), i))
        inputs = dict(input_ids=ids, token_type_ids=types, attention_mask=attn)
        return inputs, torch.cat(positions), torch.cat(labels), np.concatenate(owners)


def masked_logits(model, inputs: dict[str, torch.Tensor], positions: torch.Tensor, dtype: torch.dtype | None = None) -> torch.Tensor:
    """The MLM head's logits (M, V) at the masked positions of one batch of MaskedPairs."""
    device = next(model.parameters()).device
    parts = Parts.of(model)
    with autocast(device, dtype):
        hidden = parts.encoder(**{k: v.to(device) for k, v in inputs.items()}).last_hidden_state
        return parts.mlm_head(hidden.reshape(-1, hidden.shape[-1]).index_select(0, positions.to(device)))


@torch.inference_mode()
def mlm_hits(model, tokenizer, first: Sequence[str], second: Sequence[str], max_len: int = MAX_LEN,
             seed: int = 4321, dtype: torch.dtype | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per pair: (correct, predicted) masked tokens, with the training masking (n-grams,
    80/10/10) drawn with a fixed seed."""
    pairs = MaskedPairs.of(tokenizer, first, second, min(max_len, model.config.max_position_embeddings), seed)
    correct, predicted = np.zeros(len(pairs.ids), dtype=np.int64), np.zeros(len(pairs.ids), dtype=np.int64)
    for idx in length_batches(pairs.lengths, batch_tokens_for(model), max_batch=512):
        inputs, pos, lab, owner = pairs.batch(idx)
        logits = masked_logits(model, inputs, pos, dtype)
        hit = (logits.argmax(-1).cpu() == lab).numpy()
        np.add.at(correct, owner, hit)
        np.add.at(predicted, owner, 1)
    return correct, predicted


Task = Literal["mlm", "nsp", "sop"]
TASKS: tuple[Task, ...] = get_args(Task)
# metric -> (task, which rows); accuracy is computed over the rows' hits / n.
SUBSETS: dict[str, tuple[Task, str]] = {
    "mlm": ("mlm", "all"), "nsp": ("nsp", "natural"), "sop": ("sop", "natural"),
    "sop_lead": ("sop", "lead"), "sop_interior": ("sop", "interior"),
}


def score_eval_pairs(model, tokenizer, pairs: pd.DataFrame, max_len: int = MAX_LEN, dtype: torch.dtype | None = None,
                     limit: int | None = None, tasks: Sequence[Task] = TASKS) -> pd.DataFrame:
    """The held-out pairs of `tasks` with two columns added: hits and n (masked tokens
    for MLM; one pair for NSP and SOP). `limit` takes a fixed random sample of that many
    pairs per task, so that every source is represented (for quick checks in training)."""
    frames = []
    for name in tasks:
        frame = pairs[pairs.task == name]
        if limit and len(frame) > limit:
            frame = frame.sample(n=limit, random_state=0).sort_index()
        frame = frame.copy()
        if frame.empty:  # a pairs file without this task: no rows, nothing to score
            frame["hits"], frame["n"] = pd.Series(dtype=int), pd.Series(dtype=int)
        elif name == "mlm":
            frame["hits"], frame["n"] = mlm_hits(model, tokenizer, list(frame.a), list(frame.b), max_len, dtype=dtype)
        else:
            p0 = pair_probabilities(model, tokenizer, list(frame.a), list(frame.b), max_len, dtype=dtype)
            frame["hits"], frame["n"] = ((p0 < 0.5).astype(int) == frame.label.to_numpy()).astype(int), 1
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def wilson_interval(hits: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval of a proportion (sound near 0 and 1 and for small n)."""
    if n == 0:
        return float("nan"), float("nan")
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def accuracy_table(scored: pd.DataFrame, by_source: bool = False) -> pd.DataFrame:
    """Tidy accuracies with 95% intervals: metric (mlm, nsp, sop, sop_lead, sop_interior),
    source ('all', or each source with by_source), hits, n, accuracy, low, high."""
    masks = {"all": lambda f: f.index == f.index, "natural": lambda f: f.natural.astype(bool),
             "lead": lambda f: f.natural.astype(bool) & ~f.interior.astype(bool), "interior": lambda f: f.interior.astype(bool)}
    groups = [("all", scored)]
    if by_source and "source" in scored:
        groups += [(name, part) for name, part in scored.groupby("source", sort=True) if name]
    rows = []
    for source, frame in groups:
        for metric, (task, subset) in SUBSETS.items():
            part = frame[frame.task == task]
            part = part[masks[subset](part)]
            hits, n = int(part.hits.sum()), int(part.n.sum())
            if n:
                low, high = wilson_interval(hits, n)
                rows.append(dict(metric=metric, source=source, hits=hits, n=n, accuracy=hits / n, low=low, high=high))
    return pd.DataFrame(rows, columns=["metric", "source", "hits", "n", "accuracy", "low", "high"])


def intrinsic_eval(model, tokenizer, pairs: pd.DataFrame, max_len: int = MAX_LEN, dtype: torch.dtype | None = None,
                   limit: int | None = None, tasks: Sequence[Task] = TASKS) -> dict[str, float]:
    """Flat metrics for logs: <metric>_acc and its pair (or prediction) count, over all
    sources; NSP/SOP on natural pairs, SOP also on lead and interior pairs."""
    return flat_metrics(accuracy_table(score_eval_pairs(model, tokenizer, pairs, max_len, dtype, limit, tasks)))


def card_metrics(table: pd.DataFrame) -> dict[str, dict[str, float]]:
    """A card's metrics from `accuracy_table` (source 'all'): {metric: {accuracy, low,
    high, n}}, the form the shipped cards carry and the card shows with its interval."""
    return {row.metric: {"accuracy": float(row.accuracy), "low": float(row.low), "high": float(row.high), "n": int(row.n)}
            for row in table[table.source == "all"].itertuples()}


def flat_metrics(table: pd.DataFrame) -> dict[str, float]:
    """`accuracy_table`'s rows as <metric>_acc and their counts (metrics.jsonl's eval rows)."""
    result: dict[str, float] = {}
    count_names = {"mlm": "mlm_predictions", "nsp": "nsp_pairs", "sop": "sop_pairs", "sop_interior": "sop_interior_pairs"}
    for row in table.itertuples():
        result[f"{row.metric}_acc"] = float(row.accuracy)
        if row.metric in count_names:
            result[count_names[row.metric]] = int(row.n)
    return result
