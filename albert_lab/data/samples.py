"""Built-in sample texts for the analyses: held-out Wikipedia lead sections."""

from __future__ import annotations

from functools import lru_cache

from albert_lab.data.corpus import Document, load_builtin


@lru_cache(maxsize=4)
def sample_documents(n: int = 16, min_segments: int = 3) -> tuple[Document, ...]:
    """The first `n` held-out documents with at least `min_segments` sentences."""
    docs = [d for d in load_builtin().heldout if len(d.segments) >= min_segments]
    return tuple(docs[:n])


def sample_texts(n: int = 16) -> list[str]:
    return [" ".join(d.segments) for d in sample_documents(n)]
