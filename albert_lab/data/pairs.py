"""Segment pairs as in ALBERT's reference data pipeline (create_pretraining_data.py).

For each document, consecutive segments are gathered into a chunk until it reaches a
target length (max length, or with probability `short_seq_prob` a random shorter
one). A = the first k segments of the chunk (k random), B = the rest. Then:

- sop:  with probability 0.5 A and B are swapped; label 1 = swapped, 0 = original.
- nsp:  with probability 0.5 B is taken from a random other document; label 1 =
        not next, 0 = is next. The chunk's unused segments go back to the pool.
- none: A and B in order; no pair loss.

Unlike the reference code, a one-segment chunk is not given a random B under SOP:
that would be an NSP negative hidden inside the SOP task.

chunk_start='random' (not in the paper) starts each document's walk at a random
segment, so that more pairs come from inside documents: with short documents such as
Wikipedia lead sections, almost every chunk otherwise contains the first sentence.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from albert_lab.data.tokenized import TokenizedDocs
from albert_lab.errors import DataError
from albert_lab.spec import Objective

ChunkStart = Literal["document", "random"]


@dataclass(frozen=True)
class Instance:
    tokens_a: np.ndarray  # (len_a,) int32
    tokens_b: np.ndarray  # (len_b,) int32; may be empty for objective 'none'
    label: int  # 0 = original order / is next; 1 = swapped / random next
    first_segment: bool  # whether the pair contains the document's first segment

    @property
    def length(self) -> int:
        """Sequence length with [CLS] A [SEP] B [SEP]."""
        return len(self.tokens_a) + len(self.tokens_b) + (3 if len(self.tokens_b) else 2)


def check_pairable(segment_counts: list[int], objective: Objective, name: str = "corpus") -> None:
    """Raise a clear error when no pair can be made, from the number of segments of each
    document (checked on the raw corpus, before a tokenizer is trained or a run starts)."""
    if not segment_counts or not any(segment_counts):
        raise DataError(f"{name}: no text to train on")
    multi = sum(count >= 2 for count in segment_counts)
    if objective == "sop" and multi == 0:
        raise DataError(f"{name}: every document has a single segment, so no sentence-order pairs can be made; "
                        "documents need two or more sentences")
    if objective == "nsp" and len(segment_counts) < 2:
        raise DataError(f"{name}: NSP needs at least two documents (negatives come from another document)")


def create_instances(docs: TokenizedDocs, objective: Objective, max_seq_len: int, rng: np.random.Generator,
                     short_seq_prob: float = 0.1, chunk_start: ChunkStart = "document") -> list[Instance]:
    """One pass over all documents (an 'epoch' of pairs), in a random document order."""
    instances: list[Instance] = []
    for doc in rng.permutation(docs.num_documents):
        instances.extend(_from_document(docs, int(doc), objective, max_seq_len, rng, short_seq_prob, chunk_start))
    return instances


def _from_document(docs: TokenizedDocs, doc: int, objective: Objective, max_seq_len: int,
                   rng: np.random.Generator, short_seq_prob: float, chunk_start: ChunkStart) -> list[Instance]:
    segments = docs.segments(doc)
    max_tokens = max_seq_len - 3
    target = max_tokens if rng.random() >= short_seq_prob else int(rng.integers(2, max_tokens + 1))
    out: list[Instance] = []
    chunk: list[int] = []  # segment indexes
    length = 0
    i = int(rng.integers(0, len(segments) - 1)) if chunk_start == "random" and len(segments) > 2 else 0
    while i < len(segments):
        chunk.append(i)
        length += len(segments[i])
        if i == len(segments) - 1 or length >= target:
            made, unused = _pair(docs, doc, segments, chunk, objective, target, rng)
            if made is not None:
                a, b = _truncate_pair(made.tokens_a, made.tokens_b, max_tokens, rng)
                out.append(Instance(a, b, made.label, made.first_segment))
            i -= unused
            chunk, length = [], 0
        i += 1
    return out


def _pair(docs: TokenizedDocs, doc: int, segments: list[np.ndarray], chunk: list[int], objective: Objective,
          target: int, rng: np.random.Generator) -> tuple[Instance | None, int]:
    """(instance or None, number of chunk segments to give back to the pool)."""
    first = chunk[0] == 0
    k = int(rng.integers(1, len(chunk))) if len(chunk) >= 2 else 1
    a = np.concatenate([segments[s] for s in chunk[:k]])
    rest = chunk[k:]
    if objective == "nsp" and (not rest or rng.random() < 0.5):
        b = _random_continuation(docs, doc, target - len(a), rng)
        return Instance(a, b, 1, first), len(rest)
    if not rest:  # one-segment chunk: no pair to make
        return (Instance(a, a[:0], 0, first), 0) if objective == "none" else (None, 0)
    b = np.concatenate([segments[s] for s in rest])
    if objective == "sop" and rng.random() < 0.5:
        return Instance(b, a, 1, first), 0
    return Instance(a, b, 0, first), 0


def _random_continuation(docs: TokenizedDocs, doc: int, target: int, rng: np.random.Generator) -> np.ndarray:
    """Consecutive segments of a random other document, from a random start."""
    other = int(rng.integers(0, docs.num_documents - 1))
    other += other >= doc  # never the same document
    segments = docs.segments(other)
    start = int(rng.integers(0, len(segments)))
    picked, length = [], 0
    for seg in segments[start:]:
        picked.append(seg)
        length += len(seg)
        if length >= max(target, 1):
            break
    return np.concatenate(picked)


def _truncate_pair(a: np.ndarray, b: np.ndarray, max_tokens: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Trim the longer side, from its front or back at random, until the pair fits."""
    while len(a) + len(b) > max_tokens:
        longer_is_a = len(a) > len(b)
        trunc = a if longer_is_a else b
        trunc = trunc[1:] if rng.random() < 0.5 else trunc[:-1]
        a, b = (trunc, b) if longer_is_a else (a, trunc)
    return a, b
