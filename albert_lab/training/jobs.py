"""Starting, cancelling and resuming runs as separate OS processes (UI and CLI alike).

start_run validates (once per launch: the worker trusts run.json's config, which passed) and
prepares everything first (corpus, tokenizer, pairs, an out dir that can be written); only
then does a run folder appear, renamed into
place complete, and a worker process start. In the foreground the worker trains on
that preparation; a background worker prepares from the caches it filled. Workers take a lock so that one run
trains at a time; others wait as 'queued'.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from albert_lab.devices import resolve_device
from albert_lab.errors import AlbertLabError, RunError
from albert_lab.paths import PROJECT_ROOT, compile_folders, runs_dir
from albert_lab.runfolder import RunFolder, check_run_id, write_json_atomic
from albert_lab.training.config import TrainConfig
from albert_lab.training.prepare import Prepared, prepare
from albert_lab.training.queue import QueueBudget, check_queue_room, queue_lock, record_owner, run_claim
from albert_lab.training.runs import RunInfo, claim_run_dir, read_run, update_run

MAX_WARNINGS = 20  # corpus lines skipped, as run.json lists them (the rest are counted in the log)


def create_run(config: TrainConfig, root: Path | None = None, run_id: str | None = None, owner: str | None = None,
               budget: QueueBudget | None = None, checked: bool = False, address: str | None = None,
               extra: dict | None = None) -> tuple[Path, Prepared]:
    """Validate, prepare and create the run folder (status queued). Nothing is written
    if anything is wrong. With a `budget`, a run past it (the queue full, in all, for `owner` or
    for `address`; more steps than it allows) is refused before the work and again, under the
    queue's lock, before its preparation, and a run stops after its `max_minutes`.
    `checked`: the caller validated `config` (the command line, in its flags' words). `extra`: more of
    run.json (a sweep's plan: training/sweep.py)."""
    if not checked:
        config.validate()
    root = (root or runs_dir()).resolve()
    if run_id is not None:
        check_run_id(run_id)  # before the corpus and tokenizer work, which takes a while
    _check_writable(root)
    if config.compiled(resolve_device("auto").type):
        compile_folders()  # a compiler cache others could write refused before the work (and again where it compiles)
    if budget is not None:
        config = within_budget(config, budget)
        check_queue_room(root, budget, owner, address)  # a full queue refuses at once, without waiting for the lock
        check_run_memory(config, budget)
    # Prepared, counted and added by one launch at a time: two launches never both take the last place,
    # and launches at once (a browser's rapid clicks: Streamlit leaves each click's script thread running
    # when the next one starts) never prepare side by side; those that waited may find the queue full.
    with queue_lock(root):
        if budget is not None:
            check_queue_room(root, budget, owner, address)
        prepared = prepare(config, cache_quota=budget.cache_quota if budget is not None else None)
        final = _create_folder(config, root, run_id, prepared, extra or {})
        if owner is not None:
            record_owner(root, final.name, owner, address)
    return final, prepared


def within_budget(config: TrainConfig, budget: QueueBudget) -> TrainConfig:
    """`config` as a shared server runs it: RunError past the budget's steps; its minutes capped."""
    if budget.max_steps is not None and (config.max_steps or 0) > budget.max_steps:
        raise RunError(f"steps: a run started here may take at most {budget.max_steps:,} steps (it asked {config.max_steps:,}) "
                       f"and {budget.max_minutes or 0:,.0f} minutes, to keep the server's one training slot turning; train "
                       "longer with `albert-lab train` on the command line")
    if budget.max_minutes is not None and not (config.max_minutes and config.max_minutes <= budget.max_minutes):
        config = replace(config, max_minutes=budget.max_minutes)  # the first of steps and minutes reached ends it
    return config


def check_run_memory(config: TrainConfig, budget: QueueBudget) -> None:
    """RunError where training the validated `config` needs more than the budget's share of this
    machine's memory (params.memory_needed: weights, gradients, optimizer state, activations)."""
    from albert_lab.params import machine_memory, memory_needed

    if budget.memory_share is None:
        return
    spec = config.sized_spec()
    need, allowed = memory_needed(spec, config.batch_size, config.max_seq_len), budget.memory_share * machine_memory()[0]
    if need > allowed:
        size = lambda n: f"{n / 2**30:,.1f} GiB" if n >= 2**30 else f"{n / 2**20:,.0f} MB"
        raise RunError(f"memory: training {spec.label} on batches of {config.batch_size} x {config.max_seq_len} tokens "
                       f"needs about {size(need)}; a run started here may take {size(allowed)} "
                       f"({budget.memory_share:.0%} of this server's memory, shared with every visitor): use a smaller "
                       "batch, shorter sequences or a smaller model")


def _create_folder(config: TrainConfig, root: Path, run_id: str | None, prepared: Prepared, extra: dict) -> Path:
    final = claim_run_dir(root, config.name, run_id)
    run_id = final.name
    tmp = root / f".{run_id}.tmp-{uuid.uuid4().hex[:12]}"  # unique: concurrent launches never share a temp name
    try:
        tmp.mkdir()
        write_json_atomic(RunFolder(tmp).run_json, {"id": run_id, "status": "queued", "created": time.time(), "pid": None,
                                             "config": config.to_dict(), "step": 0, "total_steps": config.max_steps,
                                             "spec_label": prepared.spec.label,
                                             "warnings": list(prepared.corpus.problems[:MAX_WARNINGS]),
                                             "skipped_lines": prepared.corpus.skipped, **extra})
        RunFolder(tmp).log.touch()
        os.replace(tmp, final)  # over the empty folder claim_run_dir made: atomic
    except OSError as err:
        shutil.rmtree(tmp, ignore_errors=True)
        if not RunFolder(final).is_run():
            shutil.rmtree(final, ignore_errors=True)
        raise RunError(f"could not create the run folder in {root}: {err}") from None
    return final


def _check_writable(root: Path) -> None:
    try:
        root.mkdir(parents=True, exist_ok=True)
        probe = root / f".write-test-{uuid.uuid4().hex[:12]}"
        probe.write_text("")
        probe.unlink()
    except OSError as err:
        raise RunError(f"cannot write runs to {root} ({err.strerror or err}); choose a writable folder") from None


def start_run(config: TrainConfig, root: Path | None = None, run_id: str | None = None,
              foreground: bool = False, announce: Callable[[RunInfo], None] | None = None,
              owner: str | None = None, budget: QueueBudget | None = None, checked: bool = False,
              address: str | None = None, extra: dict | None = None) -> RunInfo:
    """The one way to launch a run (browser and command line): validate and prepare,
    create the run folder, then train in a background worker process, or in this
    process with `foreground`. `announce(run)` is called once the folder exists. `owner`
    and `budget`: who starts it, and how many runs may be queued; `checked`: the caller
    validated `config`; `extra`: more of run.json (create_run)."""
    run_dir, prepared = create_run(config, root, run_id, owner, budget, checked, address, extra)
    if announce is not None:
        announce(read_run(run_dir))
    if foreground:
        from albert_lab.training.worker import run_worker

        run_worker(run_dir, prepared=prepared)
    else:
        spawn_worker(run_dir)
    return read_run(run_dir)


def spawn_worker(run_dir: Path) -> int:
    log = open(RunFolder(run_dir).log, "ab")  # noqa: SIM115 - handed to the child process, closed below
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.setdefault("PYTHONPATH", str(PROJECT_ROOT))
    process = subprocess.Popen([sys.executable, "-m", "albert_lab.training.worker", str(run_dir)], stdout=log,
                               stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=str(PROJECT_ROOT), env=env,
                               start_new_session=True)
    log.close()
    # Reap the worker when it ends, so that a finished run leaves no zombie behind in a
    # long-lived parent (the app's server); liveness checks then see it gone.
    threading.Thread(target=process.wait, name=f"reap-{process.pid}", daemon=True).start()
    return process.pid


def cancel_run(run_dir: Path) -> RunInfo:
    """Ask a run to stop: it saves its checkpoint and ends as 'cancelled'."""
    info = read_run(run_dir)
    if not info.active:
        raise RunError(f"run {info.id} has ended ({info.status}); only queued or running runs can be cancelled")
    # The cancel file is the whole request: the worker looks for it while queued and at every step. No signal
    # is sent: run.json's pid is only what the file says, and a forged -1 would have signalled every process.
    RunFolder(run_dir).cancel.touch()
    return read_run(run_dir)


def resume_run(run_dir: Path, foreground: bool = False) -> RunInfo:
    """Continue a failed or cancelled run from its last checkpoint. Checked and marked queued
    under the run's own lock (queue.run_claim): of two resumes at once, one starts, the other is told."""
    if not RunFolder(run_dir).is_run():
        read_run(run_dir)  # says what is wrong with the folder
    with run_claim(run_dir):
        info = read_run(run_dir)
        if info.active:
            raise RunError(f"run {info.id} is still {info.status}")
        if info.status == "succeeded":
            raise RunError(f"run {info.id} already finished; start a new run to train longer")
        try:
            TrainConfig.from_dict(info.config).validate()
        except AlbertLabError as err:  # RunError, SpecError
            raise RunError(f"{run_dir}: run.json's config cannot be resumed ({err}); start a new run") from None
        RunFolder(run_dir).cancel.unlink(missing_ok=True)
        update_run(run_dir, status="queued", pid=None, created_resume=time.time(), message="resuming")
    if foreground:
        from albert_lab.training.worker import run_worker

        run_worker(run_dir)
    else:
        spawn_worker(run_dir)
    return read_run(run_dir)
