"""The server's queue of runs: its three locks, who started each run, and the budget of a
shared server. Server processes (the app's, the command line's) and detached training workers
share it, so every lock is one idiom, `held`: an exclusive flock(2) on a descriptor of its own,
which the kernel releases when the descriptor closes, also when its process is killed; two
threads of one process exclude each other as two processes do (each opens its own descriptor).

- the queue's lock (`queue_lock`): the runs folder's own, taken by one launch at a time while it
  counts the queue, prepares and adds its run; waited for.
- the training slot (`training_slot`, LOCK): one run trains at a time per runs folder; a worker
  waits for it as 'queued', looking for a cancel between tries.
- a run's claim (`run_claim`, CLAIM): a run folder's state checked and changed by one request at a
  time (a resume); a second request at the same instant is refused, not made to wait.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from albert_lab.errors import RunError
from albert_lab.runfolder import check_run_id
from albert_lab.training.runs import list_runs

LOCK = ".train.lock"  # <runs>/.train.lock: one run trains at a time per runs folder
CLAIM = ".claim.lock"  # <run>/.claim.lock: a run folder's state checked and changed by one request at a time
OWNERS = ".owners"  # <runs>/.owners/<run id>: an opaque owner tag (the app: a hash of the browser's token)


@contextmanager
def held(path: Path, what: str, busy: Callable[[], None] | None = None, poll_s: float = 1.0) -> Iterator[None]:
    """Hold the exclusive lock of `path`: a folder's own (nothing is written in it), or a lock file's,
    made if missing. With `busy` None, wait in the kernel until it is free; else, while another holds it,
    call `busy()` every `poll_s` seconds (it raises to give up). A path that cannot be opened is a
    RunError naming `what`."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY) if path.is_dir() else os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError as err:
        raise RunError(f"{what} cannot be locked ({err.strerror or err})") from None
    try:
        if busy is None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        else:
            while not _try_lock(fd):
                busy()
                time.sleep(poll_s)
        yield
    finally:
        os.close(fd)  # releases the lock


def _try_lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


@contextmanager
def queue_lock(root: Path) -> Iterator[None]:
    """The runs folder's queue, counted and added to by one launch at a time (its preparation: seconds,
    about 40 s on two cores when it trains a tokenizer). The lock is the folder's own: a launch refused
    while it prepares leaves nothing in the folder, not even a lock file."""
    with held(root, f"the runs folder {root}"):
        yield


@contextmanager
def training_slot(root: Path, poll_s: float = 1.0, should_stop: Callable[[], bool] = lambda: False,
                  on_wait: Callable[[], None] = lambda: None) -> Iterator[None]:
    """Hold the one-run-at-a-time lock (waiting as 'queued' until it is free; `on_wait()` is
    called once if it has to wait, and a RunError ends the wait once `should_stop()`)."""
    waited = False

    def busy() -> None:
        nonlocal waited
        if not waited:
            waited = True
            on_wait()
        if should_stop():
            raise RunError("cancelled while queued")

    with held(root / LOCK, f"the runs folder {root}", busy, poll_s):
        yield


@contextmanager
def run_claim(run_dir: Path) -> Iterator[None]:
    """Hold a run folder's own lock while its state is checked and changed (a resume): a second
    request at the same instant is told so, never let through to start a second worker."""
    name = Path(run_dir).name

    def busy() -> None:
        raise RunError(f"run {name} is being resumed by another request; it starts once, follow it instead")

    with held(Path(run_dir) / CLAIM, f"run {name}", busy):
        yield


def single_user() -> bool:
    """Whether the app serves one person (ALBERT_LAB_SINGLE_USER=1): then every browser
    session may cancel any run. Otherwise a session cancels only the runs it started and
    sees the others read-only (a class sharing one server)."""
    return os.environ.get("ALBERT_LAB_SINGLE_USER", "").strip().lower() in ("1", "true", "yes")


def record_owner(root: Path, run_id: str, owner: str, address: str | None = None) -> None:
    """Note who started `run_id` (an opaque tag: the app writes a hash of the browser's token) and
    from where (a hash of the network address), one per line."""
    record = root / OWNERS / check_run_id(run_id)
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text(owner + "\n" + (address + "\n" if address else ""))


def _owner_lines(root: Path, run_id: str) -> list[str]:
    try:
        return (root / OWNERS / check_run_id(run_id)).read_text().split("\n")
    except (OSError, RunError, UnicodeDecodeError):
        return []


def owner_of(root: Path, run_id: str) -> str | None:
    """The owner tag of `run_id`, or None (started from the command line, or the record is gone)."""
    return next(iter(_owner_lines(root, run_id)), "").strip() or None


def address_of(root: Path, run_id: str) -> str | None:
    """The network address tag `run_id` was started from, or None."""
    lines = _owner_lines(root, run_id)
    return lines[1].strip() or None if len(lines) > 1 else None


@dataclass(frozen=True)
class QueueBudget:
    """How many runs may be queued or running at once in one runs folder, in all and per owner
    (the app's browsers; limits.MAX_ACTIVE_RUNS and MAX_RUNS_PER_VISITOR), and the bytes the
    tokenizers and tokenized corpora their launches make may fill in the cache (limits.APP_CACHE_QUOTA),
    and the share of the machine's memory one run may need (limits.APP_RUN_MEMORY_SHARE)."""

    overall: int
    per_owner: int
    cache_quota: int | None = None
    memory_share: float | None = None
    per_address: int | None = None  # runs of one network address (limits.MAX_RUNS_PER_ADDRESS): a cookie can be dropped
    max_steps: int | None = None  # the most steps a run may ask for (limits.APP_MAX_STEPS) ...
    max_minutes: float | None = None  # ... and the minutes after which it stops, whatever it asked (APP_MAX_MINUTES)


def app_budget() -> QueueBudget:
    """The budget of runs started from the app, a server its visitors share (limits.py)."""
    from albert_lab import limits

    return QueueBudget(overall=limits.MAX_ACTIVE_RUNS, per_owner=limits.MAX_RUNS_PER_VISITOR, cache_quota=limits.APP_CACHE_QUOTA,
                       memory_share=limits.APP_RUN_MEMORY_SHARE, per_address=limits.MAX_RUNS_PER_ADDRESS,
                       max_steps=limits.APP_MAX_STEPS, max_minutes=limits.APP_MAX_MINUTES)


def check_queue_room(root: Path, budget: QueueBudget, owner: str | None = None, address: str | None = None) -> None:
    """RunError ('queue full') when a new run of `owner` from `address` would pass the budget; each
    queued or running run is a worker process."""
    active = [r for r in list_runs(root) if r.active]
    if owner is not None and (mine := sum(owner_of(root, r.id) == owner for r in active)) >= budget.per_owner:
        raise RunError(f"queue full: you have {mine} runs queued or running (at most {budget.per_owner} per browser); "
                       "start this one when one of them ends, or cancel one under 'Runs'")
    if address is not None and budget.per_address is not None and \
            (here := sum(address_of(root, r.id) == address for r in active)) >= budget.per_address:
        raise RunError(f"queue full: {here} runs started from your network address are queued or running (at most "
                       f"{budget.per_address} per address); start this one when one of them ends")
    if len(active) >= budget.overall:
        raise RunError(f"queue full: {len(active)} runs are queued or running on this server (at most {budget.overall}); "
                       "start yours when one ends")


def discard_upload(root: Path, upload: Path) -> bool:
    """Delete an uploaded corpus that no run in `root` trains on (its run was refused); True if deleted.
    Uploads are named by their content, so one that a run uses stays."""
    if any(Path(str(r.config.get("corpus", ""))).name == upload.name for r in list_runs(root)):
        return False
    upload.unlink(missing_ok=True)
    return True
