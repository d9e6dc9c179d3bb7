"""Pre-tokenised documents, cached on disk so a second run on the same corpus and
tokenizer starts at once. Stored flat: one int32 array of token ids plus offsets
of segments and of documents (no pickles: numpy .npz without object arrays)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from albert_lab.data.corpus import MAX_SEGMENT_CHARS, Document
from albert_lab.paths import cache_dir
from albert_lab.tokenizer import fingerprint


@dataclass(frozen=True)
class TokenizedDocs:
    ids: np.ndarray  # (num_tokens,) int32
    segment_bounds: np.ndarray  # (num_segments + 1,) int64 offsets into ids
    document_bounds: np.ndarray  # (num_documents + 1,) int64 offsets into segments

    @property
    def num_documents(self) -> int:
        return len(self.document_bounds) - 1

    @property
    def num_tokens(self) -> int:
        return len(self.ids)

    def segments(self, doc: int) -> list[np.ndarray]:
        """The token ids of each segment of document `doc`."""
        lo, hi = self.document_bounds[doc], self.document_bounds[doc + 1]
        b = self.segment_bounds
        return [self.ids[b[s]:b[s + 1]] for s in range(lo, hi)]

    def num_segments(self, doc: int) -> int:
        return int(self.document_bounds[doc + 1] - self.document_bounds[doc])


def tokenize_documents(docs: Sequence[Document], tokenizer, cache_key: str | None = None) -> TokenizedDocs:
    """Tokenise every segment of every document (no special tokens). With `cache_key`
    (e.g. the corpus fingerprint and split), the result is cached per tokenizer."""
    path = None
    if cache_key:
        path = cache_dir() / "tokenized" / f"{cache_key}-{fingerprint(tokenizer)}-{MAX_SEGMENT_CHARS}.npz"
        if path.is_file():
            try:
                with np.load(path, allow_pickle=False) as data:
                    return TokenizedDocs(data["ids"], data["segment_bounds"], data["document_bounds"])
            except (OSError, ValueError, KeyError):
                path.unlink(missing_ok=True)  # a damaged cache file is rebuilt
    texts = [s[:MAX_SEGMENT_CHARS] for d in docs for s in d.segments]
    # segments are cut to the model later; verbose=False: no "longer than the maximum" warning per corpus
    encoded = tokenizer(texts, add_special_tokens=False, verbose=False)["input_ids"] if texts else []
    lengths = np.fromiter((len(e) for e in encoded), dtype=np.int64, count=len(encoded))
    result = TokenizedDocs(
        ids=np.fromiter((t for e in encoded for t in e), dtype=np.int32, count=int(lengths.sum())),
        segment_bounds=np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
        document_bounds=np.concatenate([[0], np.cumsum([len(d.segments) for d in docs])]).astype(np.int64),
    )
    if path is not None:
        _save_atomic(path, result)
    return result


def _save_atomic(path: Path, docs: TokenizedDocs) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}.npz")  # unique per thread too
    np.savez(tmp, ids=docs.ids, segment_bounds=docs.segment_bounds, document_bounds=docs.document_bounds)
    os.replace(tmp, path)
