"""Runs as their readers see them: status (a run whose process died is reported as
failed, with its last log lines), listing, and new run ids. The folder layout and its file
primitives are albert_lab.runfolder's; the server's queue (the slot, the locks, owners and
budgets) is albert_lab.training.queue's.

The UI and the CLI only read run folders, so a run lives on after the browser closes.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from albert_lab.errors import RunError
from albert_lab.runfolder import HELD_OUT_PAIR_METRICS, PAIR_METRICS, RunFolder, check_run_id

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
