"""Run directories: the only interface between a training process and its readers.

runs/<run-id>/
  run.json        config + status (queued, running, succeeded, failed, cancelled),
                  pid, heartbeat, step; written atomically (tmp file + rename)
  metrics.jsonl   one JSON object per log step (kind 'train') or evaluation ('eval')
  gradflow.jsonl  per-layer gradient-flow snapshots
  checkpoint/     the latest checkpoint, written atomically, with trainer state
  log.txt         the process's output
  cancel          present when a cancel was requested

The UI and the CLI only read these files, so a run lives on after the browser closes.
A run whose process died is reported as failed, with its last log lines.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from albert_lab.errors import RunError

LOCK = ".train.lock"  # one run trains at a time per runs folder
STATUSES = ("queued", "running", "succeeded", "failed", "cancelled")
ACTIVE = ("queued", "running")
HEARTBEAT_S = 5.0


def write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(data, indent=2, default=str))
    os.replace(tmp, path)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """All well-formed lines; a corrupted or half-written line is skipped, not fatal."""
    if not path.is_file():
        return []
    rows = []
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(row, dict):
                rows.append(row)
    return rows


def append_jsonl(path: Path, row: dict[str, Any]) -> None:
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(row, default=float) + "\n")
        handle.flush()


def process_alive(pid: int | None) -> bool:
    """True if `pid` is a live training worker (not a recycled pid, not a zombie)."""
    if not pid:
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

    def metrics(self) -> list[dict[str, Any]]:
        return read_jsonl(self.path / "metrics.jsonl")

    def gradflow(self) -> list[dict[str, Any]]:
        return read_jsonl(self.path / "gradflow.jsonl")

    def log_tail(self, lines: int = 20) -> str:
        log = self.path / "log.txt"
        if not log.is_file():
            return ""
        with open(log, "rb") as handle:
            handle.seek(max(0, log.stat().st_size - 64_000))
            return "\n".join(handle.read().decode(errors="replace").splitlines()[-lines:])


def read_run(path: Path) -> RunInfo:
    """The run's state as readers should see it: a queued/running run whose process is
    gone is reported as failed, with the end of its log."""
    try:
        raw = json.loads((path / "run.json").read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise RunError(f"{path}: not a readable run folder ({err})") from None
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


def list_runs(root: Path) -> list[RunInfo]:
    """All runs, newest first; folders that are not runs are skipped."""
    runs = []
    for path in root.iterdir() if root.is_dir() else []:
        if path.is_dir() and not path.name.startswith(".") and (path / "run.json").is_file():
            try:
                runs.append(read_run(path))
            except RunError:
                continue
    return sorted(runs, key=lambda r: r.raw.get("created", ""), reverse=True)


def update_run(path: Path, **changes: Any) -> dict[str, Any]:
    """Read-modify-write run.json (only the run's own process writes after creation)."""
    data = json.loads((path / "run.json").read_text())
    data.update(changes)
    write_json_atomic(path / "run.json", data)
    return data


def new_run_id(name: str = "") -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    slug = "".join(c if c.isalnum() or c in "-_" else "-" for c in name.strip().lower())[:32].strip("-")
    return f"{stamp}-{slug}-{os.getpid() % 10000:04d}" if slug else f"{stamp}-{os.getpid() % 10000:04d}"


@contextmanager
def training_slot(root: Path, poll_s: float = 1.0, should_stop=lambda: False):
    """Hold the one-run-at-a-time lock (waiting as 'queued' until it is free)."""
    handle = open(root / LOCK, "a+")  # noqa: SIM115 - held across the yield, closed in finally
    try:
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if should_stop():
                    raise RunError("cancelled while queued") from None
                time.sleep(poll_s)
        yield
    finally:
        handle.close()
