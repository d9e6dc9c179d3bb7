"""The bounds of the numeric options every front end shares, and their one check: a seed
(numpy's and SentencePiece's range), CPU threads, a probe's steps and pairs, CKA's tokens.
A value outside is an AlbertLabError naming the option, before any work."""

from __future__ import annotations

import os

from albert_lab.errors import AlbertLabError

MAX_SEED = 2**32 - 1  # numpy.random.seed and SentencePiece take 0..2**32-1
MAX_PROBE_STEPS = 100_000  # full-batch steps on cached features (the default is 300)
MAX_PROBE_PAIRS = 200_000  # pairs whose features a probe caches (one H-vector each)
MAX_CKA_TOKENS = 8192  # an N x N float64 Gram matrix per application: 8192 tokens are 0.5 GB each


def max_threads() -> int:
    """CPU threads a run may ask for: four per core (more only slows, and 1e9 aborts in libgomp)."""
    return 4 * (os.cpu_count() or 1)


def check_range(value: int | None, low: int, high: int, name: str) -> None:
    """Refuse an integer outside low..high, naming the option (`--seed`, `seed`)."""
    if value is not None and not (isinstance(value, int) and not isinstance(value, bool) and low <= value <= high):
        shown = str(value)[:40] + ("..." if len(str(value)) > 40 else "")
        raise AlbertLabError(f"{name}: must be {low:,}..{high:,}, got {shown}")
