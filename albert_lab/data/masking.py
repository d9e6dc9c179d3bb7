"""ALBERT's n-gram masked-LM targets.

15% of tokens (at most `max_predictions` per sequence) are chosen as whole-word
n-grams, n <= 3 with p(n) = (1/n) / sum_k (1/k) = 6/11, 3/11, 2/11. Each chosen
token becomes [MASK] with probability 0.8, a random token with 0.1, and stays as is
with 0.1; all of them are predicted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

import numpy as np

RESERVED = re.compile(r"\[[A-Za-z]+\d*\]|<[a-z]+>")  # [CLS], [unused12], <pad>: never a random replacement


@dataclass(frozen=True)
class MaskingConfig:
    vocab_size: int
    mask_id: int
    special_ids: frozenset[int]  # never masked: [CLS], [SEP], <pad>
    word_start: np.ndarray  # (vocab_size,) bool: piece starts a word ("▁..." in SentencePiece, not "##..." in WordPiece)
    masked_lm_prob: float = 0.15
    max_predictions: int = 20
    max_ngram: int = 3
    first_random_id: int = 5  # random replacements avoid the special pieces

    @property
    def ngram_probs(self) -> np.ndarray:
        p = 1.0 / np.arange(1, self.max_ngram + 1)
        return p / p.sum()

    @cached_property
    def ngram_cdfs(self) -> dict[int, np.ndarray]:
        """For each longest allowed n, the cumulative distribution that Generator.choice
        builds from p(n) (the same arithmetic, so the same draws), computed once."""
        cdfs = {}
        for longest in range(1, self.max_ngram + 1):
            p = self.ngram_probs[:longest]
            cdf = (p / p.sum()).cumsum()
            cdfs[longest] = cdf / cdf[-1]
        return cdfs


def masking_config(tokenizer, max_predictions: int = 20, masked_lm_prob: float = 0.15, max_ngram: int = 3) -> MaskingConfig:
    pieces = tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))
    wordpiece = any(p.startswith("##") for p in pieces)  # BERT's WordPiece marks continuations, SentencePiece word starts
    if wordpiece:
        word_start = np.array([not p.startswith("##") for p in pieces], dtype=bool)
    else:
        word_start = np.array([p.startswith("▁") or p.startswith("[") or p.startswith("<") for p in pieces], dtype=bool)
    special = frozenset(i for i in (tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id) if i is not None)
    # Random replacements start after the reserved pieces the vocabulary opens with
    # (<pad>..[MASK] for ours; [PAD], [unused0..98], [UNK]..[MASK], [unused99..993] for BERT's).
    first_random = next((i for i, p in enumerate(pieces) if not RESERVED.fullmatch(p)), len(pieces))
    return MaskingConfig(vocab_size=len(tokenizer), mask_id=tokenizer.mask_token_id, special_ids=special,
                         word_start=word_start, masked_lm_prob=masked_lm_prob, max_predictions=max_predictions,
                         max_ngram=max_ngram, first_random_id=first_random)


def sample_ngram_length(rng: np.random.Generator, cfg: MaskingConfig, longest: int) -> int:
    """n in 1..min(max_ngram, longest) with p(n) proportional to 1/n."""
    # rng.choice(longest, p=p) draws one uniform and searches the cdf; done here without its
    # per-call checks (60% of a batch's masking time), the stream and the results are unchanged.
    return int(cfg.ngram_cdfs[longest].searchsorted(rng.random(), side="right")) + 1


def prediction_budget(cfg: MaskingConfig, length: int) -> int:
    """Predictions in a sequence of `length` tokens at most (it grows with the length)."""
    return min(cfg.max_predictions, max(1, round(length * cfg.masked_lm_prob)))


def mask_sequence(tokens: np.ndarray, cfg: MaskingConfig, rng: np.random.Generator
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[int]]:
    """Mask one sequence (with its special tokens).

    Returns (masked tokens (T,), predicted positions (P,), their labels (P,), the
    n-gram lengths in words that were used)."""
    words = _words(tokens, cfg)
    budget = prediction_budget(cfg, len(tokens))
    chosen: list[int] = []
    covered: set[int] = set()
    lengths: list[int] = []
    for start in rng.permutation(len(words)):
        if len(chosen) >= budget:
            break
        n = sample_ngram_length(rng, cfg, min(cfg.max_ngram, len(words) - start))
        # Shorten the n-gram while it would exceed the budget (as the reference code does).
        while n > 1 and len(chosen) + sum(len(w) for w in words[start:start + n]) > budget:
            n -= 1
        span = [i for w in words[start:start + n] for i in w]
        if len(chosen) + len(span) > budget or covered.intersection(span):
            continue
        covered.update(span)
        chosen.extend(span)
        lengths.append(n)
    positions = np.array(sorted(chosen), dtype=np.int64)
    labels = tokens[positions].copy()
    masked = tokens.copy()
    roll = rng.random(len(positions))
    masked[positions[roll < 0.8]] = cfg.mask_id
    randomised = positions[roll >= 0.9]  # 0.8 <= roll < 0.9: kept as is
    masked[randomised] = rng.integers(cfg.first_random_id, cfg.vocab_size, len(randomised))
    return masked, positions, labels, lengths


def _words(tokens: np.ndarray, cfg: MaskingConfig) -> list[list[int]]:
    """Group maskable positions into whole words (a word = a word-start piece + continuations)."""
    words: list[list[int]] = []
    for i, t in enumerate(tokens.tolist()):
        if t in cfg.special_ids:
            continue
        if words and not cfg.word_start[t] and words[-1][-1] == i - 1:
            words[-1].append(i)
        else:
            words.append([i])
    return words
