"""Launches that race (two browser sessions in the same second share one process) and
checkpoint saves killed between their two renames (issue #15)."""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path

import pytest

from albert_lab.checkpoint.discover import check_folder, discover_checkpoints
from albert_lab.errors import CheckpointError
from albert_lab.runfolder import RunFolder, write_json_atomic
from albert_lab.training.runs import claim_run_dir, list_runs

CONFIG = {"model_type": "albert", "vocab_size": 100, "embedding_size": 8, "hidden_size": 16, "num_hidden_layers": 2,
          "num_attention_heads": 2, "intermediate_size": 32, "max_position_embeddings": 32}


def test_launches_in_the_same_second_get_distinct_run_folders(tmp_path):
    start, claimed = threading.Barrier(8), []

    def launch():
        start.wait()
        claimed.append(claim_run_dir(tmp_path, "same name"))

    threads = [threading.Thread(target=launch) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(claimed) == 8 and len({p.name for p in claimed}) == 8 and all(p.is_dir() for p in claimed)
    assert len({p.name.split("-same-name")[0] for p in claimed}) <= 2  # the same second (or two), told apart by suffix
    assert list_runs(tmp_path) == []  # claimed folders hold no run.json yet: readers skip them


def test_concurrent_atomic_writes_of_one_file_never_collide(tmp_path):
    path, errors = tmp_path / "run.json", []

    def write(n: int):
        try:
            for i in range(30):
                write_json_atomic(path, {"writer": n, "i": i})
        except OSError as err:
            errors.append(err)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and json.loads(path.read_text())["i"] == 29
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"]


def _dead_pid() -> int:
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def _killed_between_renames(run: Path, pid: int) -> Path:
    """A run folder as a save killed between its two renames leaves it: no checkpoint/,
    the previous one parked as .checkpoint.old-<pid>, the new one half-written."""
    run.mkdir(parents=True)
    RunFolder(run).run_json.write_text(json.dumps({"id": run.name, "status": "cancelled", "config": {}}))
    old = run / f".checkpoint.old-{pid}"
    old.mkdir()
    (old / "config.json").write_text(json.dumps(CONFIG))
    (run / f".checkpoint.tmp-{pid}").mkdir()
    return old


def test_a_checkpoint_killed_between_its_renames_is_recovered_by_readers(tmp_path):
    runs = tmp_path / "runs"
    _killed_between_renames(runs / "r1", _dead_pid())
    found = discover_checkpoints(shipped=tmp_path / "none", runs=runs)
    assert [info.name for info in found] == ["run:r1"] and (runs / "r1" / "checkpoint" / "config.json").is_file()

    _killed_between_renames(runs / "r2", _dead_pid())
    folder = runs / "r2" / "checkpoint"
    with pytest.raises(CheckpointError, match="no weights"):  # the loading path: recovered, then refused for its weights
        check_folder(folder)
    assert (folder / "config.json").is_file() and not list((runs / "r2").glob(".checkpoint.old-*"))


def test_a_save_still_in_progress_is_left_alone(tmp_path):
    old = _killed_between_renames(tmp_path / "r", 1)  # pid 1 is alive: its save is mid-way, not killed
    discover_checkpoints(shipped=tmp_path / "none", runs=tmp_path)
    assert old.is_dir() and not (tmp_path / "r" / "checkpoint").exists()
