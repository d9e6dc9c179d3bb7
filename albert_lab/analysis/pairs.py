"""Scoring sentence pairs with SOP and NSP heads, side by side.

For a pair (A, B) each checkpoint's pair head gives P(label 0) for the input A->B
and for the swapped input B->A. Label 0 means "original order" for an SOP head and
"B is the next segment" for an NSP head (transformers' convention). A head that is
missing from its checkpoint or was never trained is not scored: its rows carry NaN
and a note, never silent noise.

Uploaded files are read by data/pairs_file.py (read_pairs); typed pairs become the
same frame through pairs_frame.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np
import pandas as pd
import torch

from albert_lab.analysis.common import Progress
from albert_lab.analysis.intrinsic import encoded_probabilities, wilson_interval
from albert_lab.analysis.pair_encoding import PAIR_SPECIALS, EncodedPairs, Segments, check_segment, piece_counts, tokenize_segments
from albert_lab.analysis.registry import Report
from albert_lab.checkpoint.load import ModelBundle
from albert_lab.data.corpus import MAX_LEN
from albert_lab.limits import SCORE_TOLERANCE
from albert_lab.models import pair_linear
from albert_lab.spec import forward_cost


def pairs_frame(first: Sequence[str], second: Sequence[str], labels: Sequence[int | None] | None = None) -> pd.DataFrame:
    """Pairs typed in by hand, in the shape read_pairs returns; a blank sentence is
    refused (DataError naming it), never scored as a one-segment input."""
    labels = labels or [None] * len(first)
    several = len(first) > 1
    first = [check_segment(a, f"sentence A{f' of pair {i}' if several else ''}") for i, a in enumerate(first, 1)]
    second = [check_segment(b, f"sentence B{f' of pair {i}' if several else ''}") for i, b in enumerate(second, 1)]
    frame = pd.DataFrame(dict(row=range(1, len(first) + 1), sentence_a=first, sentence_b=second, label=labels))
    frame["label"] = frame["label"].astype("Int64")
    return frame


def unknown_shares(id_lists: Sequence[Sequence[int]], tokenizer) -> list[float]:
    """For each list of ids: the share of its pieces, special tokens aside, that are the
    unknown token."""
    count = piece_counts(tokenizer)
    return [unknown / pieces if pieces else 0.0 for pieces, unknown in map(count, map(list, id_lists))]


def score_pairs(bundles: ModelBundle | Sequence[ModelBundle], pairs: pd.DataFrame, max_len: int = MAX_LEN,
                progress: Progress | None = None) -> pd.DataFrame:
    """One row per (pair, checkpoint): p_ab = P(label 0 | A->B), p_ba = P(label 0 | B->A),
    the head's prediction for A->B and, when labelled, whether it is correct; `tokens`
    the pair's length with [CLS] and [SEP]s, `reads` the tokens the model reads (max_len, or its
    position table when shorter), `truncated` whether the pair exceeds that, `unknown` the share of its
    pieces the vocabulary does not have (Chinese or emoji for an English SentencePiece).
    Each sentence is tokenised once per checkpoint, both orders built from its ids.
    `progress` hears before each batch of sentences tokenised and of pairs scored, for each
    checkpoint (and may raise to stop)."""
    frames = []
    bundles = [bundles] if isinstance(bundles, ModelBundle) else list(bundles)
    costs, n = [forward_cost(b.spec) for b in bundles], len(pairs)
    for k, bundle in enumerate(bundles):
        frame = pairs.copy()
        frame.insert(0, "checkpoint", bundle.name)
        frame["head"] = bundle.heads.pair_kind
        frame["head_status"] = bundle.heads.pair
        length = min(max_len, bundle.spec.max_positions, bundle.model.config.max_position_embeddings)
        name = f"{bundle.name} ({k + 1} of {len(bundles)})"

        def read(_: float, words: str, k: int = k, name: str = name) -> None:  # the bar moves once the pairs are scored
            progress(sum(costs[:k]) / sum(costs), f"{name}: tokenizing, {words}")  # type: ignore[misc]

        def told(f: float, _: str, k: int = k, name: str = name) -> None:
            done = (sum(costs[:k]) + f * costs[k]) / sum(costs)  # the bar moves with the work, not the checkpoints
            progress(done, f"{name}: {round(f * n):,} of {n:,} pairs")  # type: ignore[misc]

        seg = tokenize_segments(bundle.tokenizer, [*pairs.sentence_a, *pairs.sentence_b], length,
                                read if progress is not None else None)
        frame["tokens"], frame["unknown"] = pair_columns(seg)
        frame["reads"] = length
        frame["truncated"] = frame["tokens"] > length  # the model sees the first `length` tokens (longest side cut first)
        if bundle.heads.pair_usable:
            dtype, tf32 = scoring_precision(bundle)
            with tf32_matmuls(tf32):
                both = encoded_probabilities(bundle.model, both_orders(bundle.tokenizer, seg, length), device=bundle.device,
                                             dtype=dtype, progress=told if progress is not None else None)
            frame["p_ab"], frame["p_ba"] = both[:n], both[n:]
            frame["prediction"] = (frame["p_ab"] < 0.5).astype("Int64").mask(frame["p_ab"].isna())  # NaN predicts nothing
            frame["note"] = np.where(frame["p_ab"].isna(), "not scored: the head's output is NaN", "")
        else:
            frame["p_ab"] = frame["p_ba"] = np.nan
            frame["prediction"] = pd.array([pd.NA] * len(frame), dtype="Int64")
            frame["note"] = f"not scored: pair head {bundle.heads.pair}"
        frame["correct"] = _correct(frame)
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def judged(scores: pd.DataFrame, label: int | None) -> pd.DataFrame:
    """`scores` (score_pairs' rows) given `label` (0: A then B is the original order for an SOP head, B the next
    segment for an NSP head; 1: swapped, or random; None: no label): each head's `correct` against it (NA where
    there is no label or the head predicts nothing). A label changes no score: nothing is scored again."""
    frame = scores.assign(label=pd.array([label] * len(scores), dtype="Int64"))
    frame["correct"] = _correct(frame)
    return frame


def _correct(frame: pd.DataFrame) -> pd.Series:
    """Whether each row's prediction is its label: NA where either is missing."""
    return (frame["prediction"] == frame["label"]).astype("boolean")


# ---- precision on a GPU ------------------------------------------------------------------------------
# A float32 model scores faster on CUDA with reduced-precision matmul inputs: TF32 (10 mantissa bits, unit
# roundoff u = 2^-11; products and sums in fp32) or bf16 autocast (7 bits, u = 2^-8, and each matmul's
# output rounded to bf16 as well). How far either moves a score p = P(label 0) from full float32's:
# - one matmul: both inputs of each product rounded, a relative error of at most 2u (TF32); bf16 also
#   rounds the result: 3u. Call it c u.
# - the path: the pair logits come after N = 6L + 3 matmuls in sequence (per layer application: Q/K/V,
#   scores, weights x values, output, FFN in, FFN out; the embedding projection, pooler and head). The
#   LayerNorm after every sub-layer rescales the residual stream, so each error stays relative to the
#   state's scale; independent roundings add in quadrature: c u sqrt(N) on each component of the pooled
#   state (tanh: |h_i| <= 1, and tanh' <= 1 passes an error on at most whole).
# - the head: d = z0 - z1 = (w0 - w1) . h + b; the H components' independent errors add in quadrature
#   against its weights: |delta d| ~ c u sqrt(N) ||w0 - w1||_2, one standard deviation.
# - the probability: p = sigmoid(d), dp/dd = p (1 - p) <= 1/4.
# Four standard deviations (a Gaussian passes them once in 16,000 draws) times 1/4: |delta p| <= c u sqrt(N)
# ||w0 - w1||_2 (rounding_bound). The shipped checkpoints (L 6, ||w0 - w1||_2 0.43-0.70): TF32 at most
# 4.3e-3, bf16 0.051. ALBERT-base's shape with a head at its initial scale (L 12, ||w0 - w1||_2 0.78):
# TF32 6.6e-3, bf16 0.079. So TF32 keeps them within SCORE_TOLERANCE, bf16 does not.
TF32_PER_MATMUL = 2 * 2.0**-11  # c u
BF16_PER_MATMUL = 3 * 2.0**-8


def rounding_bound(model, per_matmul: float) -> float:
    """The most a pair score moves (4 standard deviations) when every matmul of `model` rounds with relative error
    `per_matmul` (derived above)."""
    weight = pair_linear(model).weight.detach().float()  # (2, H)
    return per_matmul * math.sqrt(6 * model.config.num_hidden_layers + 3) * float((weight[0] - weight[1]).norm())


def scoring_precision(bundle: ModelBundle) -> tuple[torch.dtype, bool]:
    """(autocast dtype, TF32 matmuls) for scoring `bundle`'s pairs: on CUDA a float32 model under bf16 autocast
    where that keeps every score within SCORE_TOLERANCE of full float32 (rounding_bound), else in float32 with
    TF32 matmuls where they do, else in full float32; elsewhere, or loaded in another dtype, as loaded."""
    if bundle.device.type != "cuda" or bundle.dtype != torch.float32:
        return bundle.dtype, False
    if rounding_bound(bundle.model, BF16_PER_MATMUL) <= SCORE_TOLERANCE:
        return torch.bfloat16, False
    return torch.float32, rounding_bound(bundle.model, TF32_PER_MATMUL) <= SCORE_TOLERANCE


@contextmanager
def tf32_matmuls(on: bool) -> Iterator[None]:
    """CUDA's float32 matmuls in TF32 within the block (when `on`), as before after it. The setting is the
    process's, not the thread's: the first of concurrent blocks (the app's visitors) sets it, the last restores it."""
    if not on:
        yield
        return
    with _TF32.lock:
        if not _TF32.users:
            _TF32.before, torch.backends.cuda.matmul.fp32_precision = torch.backends.cuda.matmul.fp32_precision, "tf32"
        _TF32.users += 1
    try:
        yield
    finally:
        with _TF32.lock:
            _TF32.users -= 1
            if not _TF32.users:
                torch.backends.cuda.matmul.fp32_precision = _TF32.before


class _TF32:
    """tf32_matmuls' blocks running now, and the setting before the first."""

    lock, users, before = threading.Lock(), 0, ""


def pair_columns(seg: Segments) -> tuple[pd.array, list[float]]:
    """Of the pairs of `seg` (its first half the A sides, its second half the B sides): each one's
    tokens with [CLS] and [SEP]s, and the share of its pieces that are the unknown token."""
    n = len(seg.lengths) // 2
    tokens = pd.array([x + y + PAIR_SPECIALS for x, y in zip(seg.lengths[:n], seg.lengths[n:])], dtype="Int64")
    unknown = [(ua + ub) / (pa + pb) if pa + pb else 0.0
               for ua, ub, pa, pb in zip(seg.unknown[:n], seg.unknown[n:], seg.pieces[:n], seg.pieces[n:])]
    return tokens, unknown


def both_orders(tokenizer, seg: Segments, max_len: int) -> EncodedPairs:
    """The pairs of `seg` (its first half the A sides, its second half the B sides) A->B, then B->A."""
    n = len(seg.lengths) // 2
    return seg.pairs(tokenizer, [*range(n), *range(n, 2 * n)], [*range(n, 2 * n), *range(n)], max_len)


# What each column of `summarize` means: `albert-lab score`'s legend under its table, the page's column help.
SUMMARY_MEANINGS = {
    "pairs": "pairs the checkpoint's pair head scored",
    "accuracy": "on the labelled pairs, the share the head labels right: label 0 when P(label 0 | A -> B) > 0.5",
    "order_accuracy": ("on the labelled pairs, the share right by the order the head prefers (label 0 right when "
                       "P(A -> B) > P(B -> A), label 1 when the reverse): for files whose label-1 pairs are swapped "
                       "ones, as in SOP; not for random NSP pairs"),
    "labelled": "pairs with a label (0 or 1)",
    "mean_p_ab": "mean P(label 0) of the pairs as given (A -> B)",
    "mean_p_ba": "mean P(label 0) of the pairs swapped (B -> A)",
    "prefers_ab": "share of the pairs whose P(label 0) is higher as given than swapped",
}
LABEL_0 = "label 0: A then B is the original order (an SOP head) or B is the next segment after A (an NSP head)"


def summarize(scores: pd.DataFrame) -> pd.DataFrame:
    """Per checkpoint: pairs scored, accuracy on labelled pairs (P(label 0) > 0.5), the same
    judged by the order the head prefers (label 0: P(A->B) > P(B->A); label 1: the other way;
    for files whose label-1 pairs are swapped ones, as in SOP), mean P(label 0) for A->B and
    B->A, and how often the head prefers A->B over B->A."""
    rows = []
    for name, group in scores.groupby("checkpoint", sort=False):
        labelled = group[group.label.notna() & group.p_ab.notna()]
        prefers = (labelled.p_ab > labelled.p_ba) & (labelled.label == 0) | (labelled.p_ba > labelled.p_ab) & (labelled.label == 1)
        rows.append(dict(checkpoint=name, head=group["head"].iloc[0], head_status=group.head_status.iloc[0],
                         pairs=int(group.p_ab.notna().sum()),
                         accuracy=float(labelled.correct.mean()) if len(labelled) else np.nan,
                         order_accuracy=float(prefers.mean()) if len(labelled) else np.nan,
                         labelled=len(labelled), mean_p_ab=float(group.p_ab.mean()), mean_p_ba=float(group.p_ba.mean()),
                         prefers_ab=float((group.p_ab > group.p_ba).mean()) if group.p_ab.notna().any() else np.nan))
    return pd.DataFrame(rows)


def base_rate(scores: pd.DataFrame) -> tuple[int, int]:
    """(label-0 pairs, labelled pairs) of the file, each pair once."""
    labels = scores.drop_duplicates("row").label.dropna()
    return int((labels == 0).sum()), len(labels)


def majority(scores: pd.DataFrame) -> tuple[int, float]:
    """The label a head that ignores the pairs would always answer to score best, and its accuracy."""
    zeros, n = base_rate(scores)
    return (0, zeros / n) if zeros >= n - zeros else (1, (n - zeros) / n)


def labelled_accuracy(summary: pd.DataFrame) -> pd.DataFrame:
    """The checkpoints of `summarize` that scored labelled pairs, with hits and the 95%
    Wilson interval of their accuracy (low, high)."""
    frame = summary[summary.labelled > 0].assign(hits=lambda f: (f.accuracy * f.labelled).round().astype(int))
    bounds = [wilson_interval(h, n) for h, n in zip(frame.hits, frame.labelled)]
    frame["low"], frame["high"] = [b[0] for b in bounds], [b[1] for b in bounds]
    return frame


def truncated_rows(scores: pd.DataFrame) -> list[int]:
    """Rows of pairs longer than the tokens the models read (each scored on the first `reads` tokens)."""
    rows = scores.drop_duplicates("row")
    return list(rows[rows.truncated.fillna(False).astype(bool)].row)


def unreadable_rows(scores: pd.DataFrame, threshold: float) -> pd.Series:
    """Row -> the largest share of its pieces unknown to a model's vocabulary, for rows at
    or above `threshold`."""
    unknown = scores.groupby("row", sort=False).unknown.max()
    return unknown[unknown >= threshold]


def report(scores: pd.DataFrame) -> Report:
    """What `albert-lab score` prints instead of the scores (--json and --out give them): one row per checkpoint."""
    summary = summarize(scores)
    legend = [f"  {name}: {meaning}" for name, meaning in SUMMARY_MEANINGS.items() if name in summary]
    return Report(text=summary.to_string(index=False, float_format=lambda v: f"{v:.3f}"),
                  after=("", f"Columns ({LABEL_0}):", *legend))
