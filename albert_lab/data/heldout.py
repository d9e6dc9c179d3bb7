"""Held-out pairs for intrinsic evaluation (MLM, NSP, SOP), built from text.

The pairs are text, not token ids, so checkpoints with different tokenizers are
scored on the same pairs. Two kinds of SOP pairs:

- lead pairs start at a document's first segment, as most training pairs do;
- interior pairs start later and never contain the first segment. Wikipedia lead
  sections open with a definition ("X is a ..."), so SOP on lead pairs can be solved
  by spotting that sentence; interior accuracy says whether a model learned more.

Label convention (transformers'): 0 = original order / B is the next segment.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from albert_lab.data.corpus import Document

TARGET_WORDS = 90  # words per chunk: about the 125 tokens training chunks aim for


def build_eval_pairs(docs: Sequence[Document], seed: int = 1234) -> pd.DataFrame:
    """Held-out pairs; columns task (sop | nsp | mlm), a, b, label, interior, natural, doc.

    natural pairs are made the way training makes them: each document is walked in
    chunks of ~TARGET_WORDS from its first segment, and a chunk of two or more segments
    is split at a random point into A and B. Most contain the first segment; later
    chunks of long documents do not (interior). On top of these, one extra interior SOP
    pair per document of three or more segments (natural=False) gives the interior
    number a sample of useful size."""
    rng = np.random.default_rng(seed)
    rows: list[dict] = []
    usable = [d for d in docs if len(d.segments) >= 2]
    for i, doc in enumerate(usable):
        for start, end in _chunks(doc.segments):
            a, b = _split(doc.segments, start, end, rng)
            interior = start > 0
            rows.append(_sop_row(a, b, rng, interior, True, doc))
            rows.append(dict(task="mlm", a=a, b=b, label=0, interior=interior, natural=True, doc=doc.title,
                             source=doc.source))
            if rng.random() < 0.5:
                other = usable[(i + 1 + int(rng.integers(max(1, len(usable) - 1)))) % len(usable)]
                first = int(rng.integers(len(other.segments)))
                b = _take_words(other.segments[first:], max(1, TARGET_WORDS - len(a.split())))
                rows.append(dict(task="nsp", a=a, b=b, label=1, interior=interior, natural=True, doc=doc.title,
                                 source=doc.source))
            else:
                rows.append(dict(task="nsp", a=a, b=b, label=0, interior=interior, natural=True, doc=doc.title,
                                 source=doc.source))
        if len(doc.segments) >= 3:
            start = int(rng.integers(1, len(doc.segments) - 1))
            end = next(e for s, e in _chunks(doc.segments[start:]))  # one chunk from `start`
            a, b = _split(doc.segments, start, start + end, rng)
            rows.append(_sop_row(a, b, rng, True, False, doc))
    return pd.DataFrame(rows, columns=["task", "a", "b", "label", "interior", "natural", "doc", "source"])


def _chunks(segments: Sequence[str]) -> list[tuple[int, int]]:
    """(start, end) of consecutive chunks of ~TARGET_WORDS words with >= 2 segments."""
    out, start = [], 0
    while start < len(segments) - 1:
        end, words = start, 0
        while end < len(segments) and (words < TARGET_WORDS or end - start < 2):
            words += len(segments[end].split())
            end += 1
        out.append((start, end))
        start = end
    return out


def _split(segments: Sequence[str], start: int, end: int, rng: np.random.Generator) -> tuple[str, str]:
    k = int(rng.integers(start + 1, end))
    return " ".join(segments[start:k]), " ".join(segments[k:end])


def _sop_row(a: str, b: str, rng: np.random.Generator, interior: bool, natural: bool, doc: Document) -> dict:
    swap = rng.random() < 0.5
    return dict(task="sop", a=b if swap else a, b=a if swap else b, label=int(swap), interior=interior,
                natural=natural, doc=doc.title, source=doc.source)


def _take_words(segments: Sequence[str], words: int) -> str:
    out, count = [], 0
    for seg in segments:
        out.append(seg)
        count += len(seg.split())
        if count >= words:
            break
    return " ".join(out)
