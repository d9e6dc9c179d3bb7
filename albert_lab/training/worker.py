"""The training process: `python -m albert_lab.training.worker RUN_DIR`.

Records its pid, waits for the one-run-at-a-time slot, trains, and leaves the run's
final status in run.json. Any error ends as status 'failed' with the message; the
traceback goes to log.txt. The training code (torch, about 440 MB) is imported once the
slot is held: a queued worker holds some 20 MB while it waits.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING

from albert_lab.errors import AlbertLabError
from albert_lab.runfolder import RunFolder
from albert_lab.training.runs import update_run

if TYPE_CHECKING:
    from albert_lab.training.config import TrainConfig
    from albert_lab.training.prepare import Prepared


def run_worker(run_dir: Path, use_slot: bool = True, prepared: Prepared | None = None) -> str:
    """Train the run in `run_dir` in this process; `prepared`: what its launch prepared
    (in the foreground), else the worker prepares it here."""
    run_dir = run_dir.resolve()
    cancel_file = RunFolder(run_dir).cancel
    if threading.current_thread() is threading.main_thread():
        # Until training starts (and installs its own handler), SIGTERM means "cancel".
        signal.signal(signal.SIGTERM, lambda *_: cancel_file.touch())
    update_run(run_dir, pid=os.getpid(), heartbeat=time.time())
    try:
        from albert_lab.training.config import TrainConfig
        from albert_lab.training.queue import training_slot

        config = TrainConfig.from_dict(RunFolder(run_dir).read()["config"])
        if use_slot:
            waiting = (f"queued: another run in {run_dir.parent} is training (one at a time per runs folder; "
                       "give --runs-dir another folder to train side by side)")
            say_waiting = lambda: print(waiting, flush=True)
            with training_slot(run_dir.parent, should_stop=cancel_file.exists, on_wait=say_waiting):
                return _train(run_dir, config, prepared)
        return _train(run_dir, config, prepared)
    except AlbertLabError as err:
        status = "cancelled" if "cancelled while queued" in str(err) else "failed"
        update_run(run_dir, status=status, finished=time.time(), message=str(err))
        print(f"{status}: {err}", flush=True)
        return status
    except BaseException as err:
        traceback.print_exc()
        update_run(run_dir, status="failed", finished=time.time(), message=f"{type(err).__name__}: {err}")
        return "failed"


def _train(run_dir: Path, config: TrainConfig, prepared: Prepared | None) -> str:
    from albert_lab.training.loop import train  # imports torch: only once the run may train
    from albert_lab.training.sweep import is_sweep, run_sweep

    return run_sweep(run_dir, config, prepared) if is_sweep(run_dir) else train(run_dir, config, prepared)


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: python -m albert_lab.training.worker RUN_DIR", file=sys.stderr)
        return 2
    return 0 if run_worker(Path(sys.argv[1])) in ("succeeded", "cancelled") else 1


def exit_now(code: int) -> None:
    """End the process at once: the run's files are written and its slot free, and an interpreter's
    teardown of torch takes a second or more, beside the next run's worker that took the slot."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    exit_now(main())
