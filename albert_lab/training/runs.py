"""Runs as their readers see them: status (a run whose process died is reported as
failed, with its last log lines), listing, new run ids, and the one-run-at-a-time slot.
The folder layout and its file primitives are albert_lab.runfolder's.

The UI and the CLI only read run folders, so a run lives on after the browser closes.
"""

from __future__ import annotations

import fcntl
import math
import os
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from albert_lab.errors import RunError
from albert_lab.runfolder import HELD_OUT_PAIR_METRICS, PAIR_METRICS, RunFolder, check_run_id

LOCK = ".train.lock"  # one run trains at a time per runs folder
OWNERS = ".owners"  # <runs>/.owners/<run id>: an opaque owner tag (the app: a hash of the browser's token)
ACTIVE = ("queued", "running")
HEARTBEAT_S = 5.0
PID_MAX = 4_194_304  # Linux's PID_MAX_LIMIT: no process id is larger


def is_pid(value: object) -> bool:
    """A process id: 0 and negative numbers name process groups to os.kill, not a process."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 < value <= PID_MAX


def process_alive(pid: int | None) -> bool:
    """True if `pid` is a live training worker (not a recycled pid, not a zombie)."""
    if not is_pid(pid):
        return False
    proc = Path(f"/proc/{pid}")
    if proc.exists():
        try:
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            return False
        return state != "Z" and ("albert_lab" in cmdline or "albert-lab" in cmdline)
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


FINAL_EVALUATION = "final evaluation"  # run.json's message while a finished run scores all its held-out pairs


@dataclass
class RunInfo:
    id: str
    path: Path
    status: str
    config: dict[str, Any]
    step: int = 0
    total_steps: int | None = None
    message: str = ""
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def name(self) -> str:
        return self.config.get("name") or self.id

    @property
    def active(self) -> bool:
        return self.status in ACTIVE

    @property
    def folder(self) -> RunFolder:
        return RunFolder(self.path)

    def metrics(self, kind: str | None = None) -> list[dict[str, Any]]:
        """The run's metric rows, or only those of one kind ('train', 'eval', 'resume')."""
        rows = self.folder.metric_rows()
        if self.config.get("objective") == "none":  # runs logged before: 'pair_acc' 1.0 on filler labels, measured nothing
            rows = [{k: v for k, v in r.items() if k not in PAIR_METRICS} if r.get("kind") == "train" else r for r in rows]
            if not self.config.get("init_from"):  # ... and the held-out accuracy of a seeded head nothing trained: chance
                rows = [{k: v for k, v in r.items() if not k.startswith(HELD_OUT_PAIR_METRICS)} if r.get("kind") == "eval"
                        else r for r in rows]
        return rows if kind is None else [r for r in rows if r.get("kind") == kind]

    @property
    def evaluating(self) -> bool:
        """Its steps done, the run is scoring all its held-out pairs (the trainer's message says so)."""
        return self.active and self.message.startswith(FINAL_EVALUATION)

    def latest_step(self, metrics: list[dict[str, Any]] | None = None) -> int:
        """The last step done: run.json's or its metrics' (run.json is written less often: a
        run in its final evaluation read 'step 10 of 12'; a killed run's metrics go further)."""
        rows = self.metrics() if metrics is None else metrics
        return max([self.step, *(int(m.get("step", 0)) for m in rows)])

    def gradflow(self) -> list[dict[str, Any]]:
        return self.folder.gradflow_rows()

    def log_tail(self, lines: int = 20) -> str:
        log = self.folder.log
        if not log.is_file():
            return ""
        with open(log, "rb") as handle:
            handle.seek(max(0, log.stat().st_size - 64_000))
            return "\n".join(handle.read().decode(errors="replace").splitlines()[-lines:])


def read_run(path: Path) -> RunInfo:
    """The run's state as readers should see it: a queued/running run whose process is
    gone is reported as failed, with the end of its log."""
    try:
        raw = RunFolder(path).read()
        if not isinstance(raw, dict):
            raise TypeError("run.json does not hold an object")
    except (OSError, ValueError, TypeError, RecursionError) as err:
        raise RunError(f"{path}: not a readable run folder ({err})") from None
    if problem := _run_json_problem(raw):
        raise RunError(f"{path}: run.json {problem}; it was edited or damaged, and only the training process writes it")
    info = RunInfo(id=path.name, path=path, status=raw.get("status", "failed"), config=raw.get("config", {}),
                   step=int(raw.get("step", 0)), total_steps=raw.get("total_steps"), message=raw.get("message", ""),
                   raw=raw)
    starting = raw.get("pid") is None and time.time() - max(raw.get("created", 0), raw.get("created_resume", 0)) < 60
    if info.active and not starting and not process_alive(raw.get("pid")):
        info.status = "failed"
        tail = info.log_tail(8)
        info.message = (f"the training process (pid {raw.get('pid')}) ended without finishing"
                        + (f"; last log lines:\n{tail}" if tail else ""))
    return info


RUN_FIELDS: dict[str, tuple[type, ...]] = {  # run.json key -> the types it may hold (None: absent or null)
    "status": (str,), "step": (int,), "total_steps": (int, type(None)), "pid": (int, type(None)), "config": (dict,),
    "message": (str,), "created": (int, float), "created_resume": (int, float), "heartbeat": (int, float),
}


def _run_json_problem(raw: dict[str, Any]) -> str | None:
    """What is wrong with run.json's fields, or None."""
    for key, kinds in RUN_FIELDS.items():
        value = raw.get(key)
        if key not in raw or (value is None and type(None) in kinds):
            continue
        if isinstance(value, bool) or not isinstance(value, kinds) or (isinstance(value, float) and not math.isfinite(value)):
            shown = type(value).__name__ if isinstance(value, (dict, list)) or len(repr(value)) > 40 else repr(value)
            return f"field {key!r} holds {shown}, not {' or '.join(k.__name__ for k in kinds if k is not type(None))}"
        if key in ("step", "total_steps") and value < 0:
            return f"field {key!r} is negative ({value})"
        if key == "pid" and not is_pid(value):
            return f"field 'pid' holds {value if len(str(value)) <= 40 else 'a number too large'}, not a process id"
    return None


def list_runs(root: Path) -> list[RunInfo]:
    """All runs, newest first; folders that are not runs are skipped."""
    runs = []
    for path in root.iterdir() if root.is_dir() else []:
        if path.is_dir() and not path.name.startswith(".") and RunFolder(path).is_run():
            try:
                runs.append(read_run(path))
            except RunError:
                continue
    return sorted(runs, key=lambda r: r.raw.get("created", ""), reverse=True)


def running_run(root: Path) -> RunInfo | None:
    """The run that holds the runs folder's training slot, if one is training: the one a
    queued run waits for."""
    return next((r for r in list_runs(root) if r.status == "running"), None)


def update_run(path: Path, **changes: Any) -> dict[str, Any]:
    return RunFolder(path).update(**changes)


def claim_run_dir(root: Path, name: str = "", run_id: str | None = None) -> Path:
    """Reserve a run folder: an empty directory made with an exclusive mkdir, so that two
    launches in the same second (two browser sessions share one process id) get distinct
    ids, `<id>`, `<id>-2`, ...; a given `run_id` that exists is an error. The folder holds
    no run.json until the complete run is renamed over it, so readers skip it."""
    candidates = [check_run_id(run_id)] if run_id is not None else [(base := new_run_id(name)), *(f"{base}-{n}" for n in range(2, 1000))]
    for candidate in candidates:
        try:
            (root / candidate).mkdir()
            return root / candidate
        except FileExistsError:
            continue
    raise RunError(f"{root / candidates[0]} already exists; choose another run name")


def new_run_id(name: str = "") -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    slug = "".join(c if c.isalnum() or c in "-_" else "-" for c in name.strip().lower())[:32].strip("-")
    return f"{stamp}-{slug}-{os.getpid() % 10000:04d}" if slug else f"{stamp}-{os.getpid() % 10000:04d}"


@contextmanager
def training_slot(root: Path, poll_s: float = 1.0, should_stop=lambda: False, on_wait=lambda: None):
    """Hold the one-run-at-a-time lock (waiting as 'queued' until it is free; `on_wait()` is
    called once if it has to wait)."""
    handle = open(root / LOCK, "a+")  # noqa: SIM115 - held across the yield, closed in finally
    try:
        waited = False
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not waited:
                    waited = True
                    on_wait()
                if should_stop():
                    raise RunError("cancelled while queued") from None
                time.sleep(poll_s)
        yield
    finally:
        handle.close()


CLAIM = ".claim.lock"  # a run folder's own lock: its state checked and changed by one request at a time


@contextmanager
def run_claim(run_dir: Path):
    """Hold a run folder's own lock while its state is checked and changed (a resume): a second
    request at the same instant is told so, never let through to start a second worker."""
    try:
        handle = open(Path(run_dir) / CLAIM, "a+")  # noqa: SIM115 - held across the yield, closed in finally
    except OSError as err:
        raise RunError(f"run {Path(run_dir).name} cannot be locked ({err.strerror or err})") from None
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RunError(f"run {Path(run_dir).name} is being resumed by another request; it starts once, "
                           "follow it instead") from None
        yield
    finally:
        handle.close()


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


@contextmanager
def queue_lock(root: Path):
    """The runs folder's queue, counted and added to by one launch at a time (its preparation: seconds,
    about 40 s on two cores when it trains a tokenizer). The lock is the folder's own (flock on its
    descriptor): a launch refused while it prepares leaves nothing in the folder, not even a lock file."""
    handle = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield
    finally:
        os.close(handle)


def discard_upload(root: Path, upload: Path) -> bool:
    """Delete an uploaded corpus that no run in `root` trains on (its run was refused); True if deleted.
    Uploads are named by their content, so one that a run uses stays."""
    if any(Path(str(r.config.get("corpus", ""))).name == upload.name for r in list_runs(root)):
        return False
    upload.unlink(missing_ok=True)
    return True
