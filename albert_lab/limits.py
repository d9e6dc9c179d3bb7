"""The bounds of the numeric options every front end shares, and their one check: a seed
(numpy's and SentencePiece's range), CPU threads, a probe's steps and pairs, CKA's tokens, an
analysis's texts, its shortest sequence and its applications of a shared block (the options'
rows that carry them as a `Range` are albert_lab.fields'). A value outside is an AlbertLabError
naming the option, before any work. Beside them how far a faster GPU precision may move a pair
score, and the budgets of a shared server: runs queued per browser and overall, and the disk its
visitors may fill under runs/ (check_disk_quota)."""

from __future__ import annotations

import os
from pathlib import Path

from albert_lab.errors import AlbertLabError
from albert_lab.paths import PROJECT_ROOT

MAX_SEED = 2**32 - 1  # numpy.random.seed and SentencePiece take 0..2**32-1
MAX_PROBE_STEPS = 100_000  # full-batch steps on cached features (the default is 300)
MAX_PROBE_PAIRS = 200_000  # pairs whose features a probe caches (one H-vector each)
MAX_CKA_TOKENS = 8192  # tokens CKA draws: each application's state is N x H in float64 (25 MB at H = 384)
MAX_TEXTS = 256  # texts one analysis reads (paragraphs of a file, or of the text box): it keeps every layer's
# state of every token (4,000 texts took 15 GB on the 1.9M albert-sop)
MIN_SEQ_LEN = 8  # tokens an analysis or probe reads at least: [CLS] A [SEP] B [SEP] and a few pieces of each
MAX_REPEAT = 4  # applications of a shared block an analysis runs: k x L, k = 1..4
MAX_RANKS = 32  # ranks of one relaxation curve (`relax --ranks`, the relaxed view): each is a model built and measured
SCORE_TOLERANCE = 0.01  # how far a pair score may move from full float32's where a GPU scores faster (analysis/pairs.py)

# Queued or running runs one browser may have, each a worker process. One run trains at a time per
# runs folder: its worker holds torch, corpus, model and batches (on long-mix at the form's defaults
# lab-tiny 0.8 GB, lab-albert 1.2 GB, lab-bert 1.4 GB); a queued one waits without them in some 20 MB.
MAX_RUNS_PER_VISITOR = 2
# ... and one network address (a cookie is the browser's to drop: four cookie-less visitors held all 8 places). A class
# behind one NAT shares its address: half the server's places, so other visitors keep the other half
MAX_RUNS_PER_ADDRESS = 4
MAX_ACTIVE_RUNS = 8  # queued or running runs in one runs folder started from the app: one training, seven waiting
# A run started from the app holds the one training slot of a shared server: at most this many steps, and it stops
# (saved, 'succeeded') after this many minutes (a run of 100,000 steps said 16 days left). The shipped checkpoints
# took 6,000 steps, 51 minutes each on 2 cores; longer runs: `albert-lab train` on the command line
APP_MAX_STEPS = 10_000
APP_MAX_MINUTES = 60.0
APP_DISK_QUOTA = 4 << 30  # bytes the app's visitors may fill under runs/ (runs, conversions, probes, uploads)
APP_CACHE_QUOTA = 2 << 30  # bytes of tokenizers and tokenized corpora the app's launches may leave in the cache
APP_RUN_MEMORY_SHARE = 0.4  # of the machine's memory, the most one run started from the app may need (the
# rest for the pages of every visitor, the server and the queued workers)


def max_threads() -> int:
    """CPU threads a run may ask for: four per core (more only slows, and 1e9 aborts in libgomp)."""
    return 4 * (os.cpu_count() or 1)


def folder_bytes(folder: Path) -> int:
    """The bytes the files under `folder` hold (symlinks not followed; 0 where there is no folder)."""
    total, stack = 0, [folder]
    while stack:
        try:
            with os.scandir(stack.pop()) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(Path(entry.path))
                    elif entry.is_file(follow_symlinks=False):
                        total += entry.stat(follow_symlinks=False).st_blocks * 512
        except OSError:  # gone meanwhile, or unreadable: nothing to count
            continue
    return total


def check_disk_quota(folder: Path, adding: int = 0, quota: int | None = None, what: str = "this") -> None:
    """Refuse work that would take the files under `folder` past `quota` bytes (APP_DISK_QUOTA
    unless given), naming what to delete."""
    quota = APP_DISK_QUOTA if quota is None else quota
    used = folder_bytes(folder)
    if used + adding > quota:
        shown = folder.relative_to(PROJECT_ROOT).as_posix() if folder.is_relative_to(PROJECT_ROOT) else folder.name
        raise AlbertLabError(f"disk quota: {shown}/ holds {used / 2**30:.2f} GiB of the {quota / 2**30:.2f} GiB the app "
                             f"may write, and {what} needs {max(adding, 1) / 2**20:,.0f} MB more; delete old runs, "
                             "conversions or probes there (`albert-lab runs` lists runs)")
