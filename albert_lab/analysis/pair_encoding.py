"""Sentence pairs encoded as the analyses score them: each sentence tokenised once (in batches,
with progress), each pair cut as Google's code cuts it, [CLS] A [SEP] B [SEP] with segment ids."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from albert_lab.analysis.common import Progress
from albert_lab.data.corpus import MAX_SEGMENT_CHARS, clip_for_tokens
from albert_lab.errors import DataError

PAIR_SPECIALS = 3  # [CLS] A [SEP] B [SEP]
TOKENIZE_CHARS = 1 << 16  # characters tokenised between two progress reports (a Stop waits at most that long)


def check_segment(text: object, what: str, why: str = "a pair needs two non-blank segments") -> str:
    """A non-blank string, capped in length; `tokenizer('A', '')` would silently become a
    single-segment input, so blank segments are refused."""
    if not isinstance(text, str) or not text.strip():
        raise DataError(f"{what} is empty; {why}")
    return " ".join(text.split())[:MAX_SEGMENT_CHARS]


@dataclass(frozen=True)
class EncodedPairs:
    """Sentence pairs tokenised once, in input order: each row [CLS] A [SEP] B [SEP] with its
    segment ids (0 for [CLS] A [SEP], 1 for B [SEP]); rows are small arrays (int32 ids, int8 types)."""

    ids: list[np.ndarray]
    types: list[np.ndarray]
    pad_id: int

    @property
    def lengths(self) -> list[int]:
        return [len(row) for row in self.ids]

    def batch(self, idx: Sequence[int], device: torch.device | str = "cpu") -> dict[str, torch.Tensor]:
        """Rows `idx` (in that order), padded at the right to the longest of them."""
        width = max((len(self.ids[i]) for i in idx), default=0)
        ids = torch.full((len(idx), width), self.pad_id, dtype=torch.long)
        types, mask = torch.zeros_like(ids), torch.zeros_like(ids)
        for row, i in enumerate(idx):
            n = len(self.ids[i])
            ids[row, :n], types[row, :n], mask[row, :n] = torch.as_tensor(self.ids[i]), torch.as_tensor(self.types[i]), 1
        return {"input_ids": ids.to(device), "token_type_ids": types.to(device), "attention_mask": mask.to(device)}


def tokenize_pairs(tokenizer, first: Sequence[str], second: Sequence[str], max_len: int) -> EncodedPairs:
    """Each pair tokenised once (each side whole, up to MAX_SEGMENT_CHARS) and cut to `max_len`
    tokens as Google's run_classifier.py cuts it (`truncated_lengths`), with [CLS] and [SEP] around."""
    a, b = segment_ids(tokenizer, first), segment_ids(tokenizer, second)
    return pair_rows(tokenizer, a, b, [len(x) for x in a], [len(y) for y in b], max_len)


def pair_rows(tokenizer, a: Sequence[list[int]], b: Sequence[list[int]], len_a: Sequence[int], len_b: Sequence[int],
              max_len: int) -> EncodedPairs:
    """[CLS] A [SEP] B [SEP] of each (a, b), cut to `max_len` as `truncated_lengths` cuts the whole sides,
    whose lengths are len_a and len_b (a and b may hold only their first max_len ids: a cut keeps no more)."""
    cls, sep = tokenizer.cls_token_id, tokenizer.sep_token_id
    ids, types = [], []
    for x, y, lx, ly in zip(a, b, len_a, len_b):
        lx, ly = truncated_lengths(lx, ly, max_len - PAIR_SPECIALS)
        row = np.empty(lx + ly + PAIR_SPECIALS, dtype=np.int32)
        row[0], row[1:lx + 1], row[lx + 1], row[lx + 2:-1], row[-1] = cls, x[:lx], sep, y[:ly], sep
        ids.append(row)
        types.append(np.repeat(np.array([0, 1], dtype=np.int8), [lx + 2, ly + 1]))
    return EncodedPairs(ids, types, tokenizer.pad_token_id)


def encode_pairs(tokenizer, first: Sequence[str], second: Sequence[str], max_len: int,
                 device: torch.device | str = "cpu") -> dict[str, torch.Tensor]:
    """[CLS] A [SEP] B [SEP] for each pair (tokenize_pairs), padded to the longest pair, in input order."""
    return tokenize_pairs(tokenizer, first, second, max_len).batch(range(len(first)), device)


def segment_ids(tokenizer, texts: Sequence[str]) -> list[list[int]]:
    """Each text's token ids without special tokens: the whole text, so that no cut can change a
    word's pieces (WordPiece makes a too-long or unknown word one [UNK]; SentencePiece segments a
    word as a whole). Inputs are capped at MAX_SEGMENT_CHARS where they are read; the cap here only bounds
    the cost of a caller that did not. A release's tokenizer gives them from its fast path (`ids_of`)."""
    if not texts:
        return []
    texts = [t[:MAX_SEGMENT_CHARS] for t in texts]
    ids_of = getattr(tokenizer, "ids_of", None)  # tokenizer.py's release tokenizers
    return ids_of(texts) if ids_of is not None else tokenizer(texts, add_special_tokens=False)["input_ids"]


@dataclass(frozen=True)
class Segments:
    """Texts tokenised once, without special tokens: each one's first `keep` ids (all a pair cut to
    `keep` tokens can hold, as int32: memory stays 4 x `keep` bytes per text), its whole length, and
    of its pieces (special tokens aside) how many there are and how many are the unknown token."""

    heads: list[np.ndarray]
    lengths: list[int]
    pieces: list[int]
    unknown: list[int]

    def pairs(self, tokenizer, first: Sequence[int], second: Sequence[int], max_len: int) -> EncodedPairs:
        """[CLS] A [SEP] B [SEP] of texts first[i] and second[i], cut to `max_len` as the whole texts are cut."""
        return pair_rows(tokenizer, [self.heads[i] for i in first], [self.heads[i] for i in second],
                         [self.lengths[i] for i in first], [self.lengths[i] for i in second], max_len)


def tokenize_segments(tokenizer, texts: Sequence[str], keep: int, progress: Progress | None = None) -> Segments:
    """`segment_ids` of `texts` in batches of about TOKENIZE_CHARS characters; `progress` hears before
    each batch (and may raise to stop)."""
    count = piece_counts(tokenizer)
    found = Segments([], [], [], [])
    start = 0
    while start < len(texts):
        end, size = start, 0
        while end < len(texts) and (size < TOKENIZE_CHARS or end == start):
            size += len(texts[end])
            end += 1
        if progress is not None:
            progress(start / len(texts), f"{start:,} of {len(texts):,} sentences")
        for ids in segment_ids(tokenizer, texts[start:end]):
            found.heads.append(np.array(ids[:keep], dtype=np.int32))
            found.lengths.append(len(ids))
            pieces, unknown = count(ids)
            found.pieces.append(pieces)
            found.unknown.append(unknown)
        start = end
    return found


def piece_counts(tokenizer) -> Callable[[list[int]], tuple[int, int]]:
    """A function of a list of ids: how many pieces it holds, special tokens other than the unknown
    token aside, and how many of those are the unknown token."""
    unk = tokenizer.unk_token_id
    special = set(tokenizer.all_special_ids) - {unk}

    def count(ids: list[int]) -> tuple[int, int]:
        return len(ids) - (0 if special.isdisjoint(ids) else sum(map(ids.count, special))), ids.count(unk)

    return count


def truncated_lengths(la: int, lb: int, max_tokens: int) -> tuple[int, int]:
    """Google's `_truncate_seq_pair`: remove the last token of the longer side, of B on a tie, until
    the two fit in `max_tokens`; the lengths it leaves, computed at once (the longer side down to the
    shorter, then B and A in turn, B first)."""
    excess = la + lb - max_tokens
    if excess <= 0:
        return la, lb
    cut = min(abs(la - lb), excess)
    la, lb, excess = (la - cut, lb, excess - cut) if la > lb else (la, lb - cut, excess - cut)
    return la - excess // 2, lb - (excess + 1) // 2


def clip_sides(tokenizer, texts: Sequence[str], max_len: int) -> list[str]:
    """Each text cut to the characters of its first `max_len` tokens, so that a fast tokenizer's
    longest-first truncation, whose time and memory grow with the square of the tokens it removes
    (120 pairs of 4,000-letter words: 72 s, 13 GB), never has more than ~2 x max_len to go through.
    A Python tokenizer (a release's: no offsets) truncates in one step: its texts are only capped.
    Scoring does not cut text at all (tokenize_pairs): a cut inside a word can change its pieces."""
    if not getattr(tokenizer, "is_fast", False):
        return [t[:MAX_SEGMENT_CHARS] for t in texts]
    texts = [clip_for_tokens(t, max_len) for t in texts]
    try:
        offsets = tokenizer(texts, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
    except (NotImplementedError, ValueError, TypeError, KeyError):  # a tokenizer without offsets: the character cut alone
        return texts
    return [t if len(spans) <= max_len else t[:spans[max_len][0]] for t, spans in zip(texts, offsets)]
