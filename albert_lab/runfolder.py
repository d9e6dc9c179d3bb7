"""A training run's folder as a type: its files by name, the rows its logs hold, and
writes that a reader can never see half done. The trainer writes these files; the
catalog, the CLI and the pages only read them (training/runs.py interprets status).

runs/<run-id>/
  run.json        config + status (queued, running, succeeded, failed, cancelled),
                  pid, heartbeat, step; written atomically (tmp file + rename)
  metrics.jsonl   a row per log step (kind 'train': training/progress.py's train_row), per evaluation
                  ('eval') and per resume ('resume')
  gradflow.jsonl  per-layer gradient-flow snapshots ({"step", "rows"})
  checkpoint/     the latest checkpoint, written atomically, with trainer state
  log.txt         the process's output
  cancel          present when a cancel was requested
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from albert_lab.errors import RunError

MAX_RUN_ID = 100  # characters; the folder's temporary name adds ~20 and a file name holds 255 bytes
RUN_ID_PUNCTUATION = "-_.+=@,"

PAIR_METRICS = ("pair_loss", "pair_acc")  # measured only when the run trains a pair task (not objective 'none')
# held-out NSP and SOP accuracies and counts (eval rows): measured only where the pair head trained or came with the start
HELD_OUT_PAIR_METRICS = ("eval_nsp", "eval_sop")


def loss_words(row: dict[str, Any]) -> str:
    """A training row's losses as a person reads them: 'loss 5.123 (MLM 4.987, pair 0.693)';
    no pair part where the pair loss was not measured."""
    pair = f", pair {row['pair_loss']:.3f}" if isinstance(row.get("pair_loss"), (int, float)) else ""
    return f"loss {row['loss']:.3f} (MLM {row.get('mlm_loss', float('nan')):.3f}{pair})"


def check_run_id(run_id: str) -> str:
    """A run id is a folder name inside the runs folder: letters, digits and -_.+=@, (no
    separators, no '..', no leading '.', which readers skip), at most MAX_RUN_ID characters.
    Returns it; raises RunError naming what is wrong."""
    shown = repr(run_id if len(run_id) <= 40 else run_id[:40] + "...")
    bad = sorted({c for c in run_id if not (c.isalnum() or c in RUN_ID_PUNCTUATION)})
    problem = ("is empty" if not run_id else
               f"has {len(run_id):,} characters, more than {MAX_RUN_ID}" if len(run_id) > MAX_RUN_ID else
               "names a folder outside the runs folder" if "/" in run_id or "\\" in run_id or ".." in run_id else
               "starts with '.' (a hidden folder, which run lists skip)" if run_id.startswith(".") else
               f"holds {', '.join(repr(c) for c in bad[:3])}" if bad else "")
    if problem:
        raise RunError(f"run id {shown} {problem}; a run id is a folder name: letters, digits and {RUN_ID_PUNCTUATION}, "
                       f"at most {MAX_RUN_ID} characters")
    return run_id


@dataclass(frozen=True)
class RunFolder:
    path: Path

    @property
    def id(self) -> str:
        return self.path.name

    @property
    def run_json(self) -> Path:
        return self.path / "run.json"

    @property
    def metrics(self) -> Path:
        return self.path / "metrics.jsonl"

    @property
    def gradflow(self) -> Path:
        return self.path / "gradflow.jsonl"

    @property
    def checkpoint(self) -> Path:
        return self.path / "checkpoint"

    @property
    def log(self) -> Path:
        return self.path / "log.txt"

    @property
    def cancel(self) -> Path:
        return self.path / "cancel"

    def is_run(self) -> bool:
        return self.run_json.is_file()

    def read(self) -> dict[str, Any]:
        return json.loads(self.run_json.read_text())

    def update(self, **changes: Any) -> dict[str, Any]:
        """Read-modify-write run.json (only the run's own process writes after creation)."""
        data = self.read()
        data.update(changes)
        write_json_atomic(self.run_json, data)
        return data

    def metric_rows(self) -> list[dict[str, Any]]:
        return read_jsonl(self.metrics)

    def gradflow_rows(self) -> list[dict[str, Any]]:
        return read_jsonl(self.gradflow)


def write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}")  # unique per writer, threads too
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
            except (json.JSONDecodeError, RecursionError):
                continue
            if isinstance(row, dict):
                rows.append(row)
    return rows


def append_jsonl(path: Path, row: dict[str, Any]) -> None:
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(row, default=float) + "\n")
        handle.flush()
