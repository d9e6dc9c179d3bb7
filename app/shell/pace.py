"""How fast work goes on this server: the threads a computation takes (one while a training run
uses the cores, all but one while other visitors are here, all of them alone) and what each kind
of work took per unit here (estimate, learn: a progress bar's time left after its first run)."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from albert_lab.paths import runs_dir
from app.shell.serve import import_model_code

VISITING = 300.0  # seconds after a browser session's last script run that it still counts as here
_SEEN: dict[str, float] = {}  # browser session -> when its script last ran (monotonic), with _SEEN_LOCK
_SEEN_LOCK = threading.Lock()


def visitors() -> int:
    """Browser sessions whose script ran in the last VISITING seconds, this one counted (main.py
    marks each run through use_threads)."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx(suppress_warning=True)  # None outside a script run (a benchmark)
    now = time.monotonic()
    with _SEEN_LOCK:
        if ctx is not None:
            _SEEN[ctx.session_id] = now
        for session, seen in list(_SEEN.items()):
            if now - seen > VISITING:
                del _SEEN[session]
        return max(len(_SEEN), 1)


def use_threads(wait: bool = True) -> None:
    """While a training run uses the cores, the app computes on one thread (see the notes on
    2-vCPU machines in the reference); while other visitors are here, on all cores but one, which
    their pages and typed pairs keep (a long computation on every core took their share: at 20
    visitors on 2 cores, see docs/benchmarks.md); alone, on all of them. With wait=False (every
    script run) only if torch is imported already: a page that has not needed torch does not
    import it, nor wait for the background import (load_bundle calls this before computing)."""
    cores = max(1, os.cpu_count() or 1)
    threads = 1 if active_run() else max(1, cores - 1) if visitors() > 1 else cores
    torch = sys.modules.get("torch")
    # A module another thread is still importing is in sys.modules, its spec marked _initializing.
    if not wait and (torch is None or getattr(getattr(torch, "__spec__", None), "_initializing", False)):
        return
    if wait:
        import_model_code()  # never beside the warm-up's import
    import torch

    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)


@contextmanager
def one_thread() -> Iterator[None]:
    """Torch on one thread in the block, then as use_threads says: for the Depth lab's tiny nets, whose small
    operations a second thread only waits on (at load 4 on 2 cores, two threads took 4 to 12 times as long as
    one: benchmarks/bench_estimates.py). OpenMP's count is each thread's own: other visitors' runs keep theirs."""
    import_model_code()
    import torch

    torch.set_num_threads(1)
    try:
        yield
    finally:
        use_threads()


def active_run() -> bool:
    from albert_lab.training.runs import list_runs

    return any(r.active for r in list_runs(runs_dir()))


_SECONDS: dict[str, float] = {}  # what a kind of work took per unit last time, this process


def estimate(kind: str, units: float, guess_per_unit: float) -> float:
    return _SECONDS.get(kind, guess_per_unit) * units


def measured(kind: str) -> bool:
    """Whether `estimate` answers from this process's own timing rather than the guess."""
    return kind in _SECONDS


def learn(kind: str, seconds: float, units: float) -> None:
    if units > 0:
        _SECONDS[kind] = seconds / units
