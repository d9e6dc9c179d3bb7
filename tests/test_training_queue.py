"""The queue's locks across processes: the app's server processes, the command line and detached
training workers share one runs folder. Each lock is held by another process here (a child that
says when it holds it), never by this one, and every wait is on an event (a line, a thread, an exit)."""

import ast
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import CEILING, wait_until

from albert_lab.errors import RunError
from albert_lab.training.queue import CLAIM, LOCK, _try_lock, held, queue_lock, run_claim, training_slot

ROOT = Path(__file__).resolve().parent.parent
HOLD = """import sys
from pathlib import Path
from albert_lab.training import queue
lock = {"queue": queue.queue_lock, "slot": queue.training_slot, "claim": queue.run_claim}[sys.argv[1]]
with lock(Path(sys.argv[2])):
    print("held", flush=True)
    sys.stdin.read()  # until the parent closes our stdin (or kills us)
"""


class Holder:
    """A child process holding one of the queue's locks until released or killed."""

    def __init__(self, kind: str, path: Path):
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
        self.process = subprocess.Popen([sys.executable, "-c", HOLD, kind, str(path)], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True, env=env)
        line = self.process.stdout.readline()  # the event: the child holds the lock
        assert line == "held\n", f"the holder ended without the lock ({self.process.wait(CEILING)})"

    def release(self) -> None:
        self.process.stdin.close()
        assert self.process.wait(CEILING) == 0

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(CEILING)
        self.process.stdin.close()


def free(path: Path) -> bool:
    """Whether the lock of `path` (a folder's own, or a lock file's) is free now, tried without waiting."""
    fd = os.open(path, os.O_RDONLY)
    try:
        return _try_lock(fd)
    finally:
        os.close(fd)


def in_thread(lock) -> list[str]:
    """Enter `lock` (a context manager) in a thread; the list gets 'held' once it holds it, or the error."""
    got: list[str] = []

    def enter():
        try:
            with lock:
                got.append("held")
        except RunError as err:
            got.append(str(err))

    threading.Thread(target=enter, daemon=True).start()
    return got


def test_the_queue_lock_makes_another_process_wait_and_leaves_no_file(tmp_path):
    holder = Holder("queue", tmp_path)
    assert not free(tmp_path)
    got = in_thread(queue_lock(tmp_path))
    assert got == []  # it cannot have passed: the child holds the folder's lock
    holder.release()
    wait_until(lambda: got == ["held"], "the waiting launch to take the queue's lock")
    assert list(tmp_path.iterdir()) == []  # the folder's own lock: no lock file


def test_a_killed_worker_frees_the_training_slot(tmp_path):
    """A worker killed while training (SIGKILL: no finally runs) leaves the slot to the next run."""
    holder = Holder("slot", tmp_path)
    assert not free(tmp_path / LOCK)
    holder.kill()
    with training_slot(tmp_path, poll_s=0.01):
        assert not free(tmp_path / LOCK)
    assert free(tmp_path / LOCK)


def test_a_queued_run_says_once_that_it_waits_and_stops_when_cancelled(tmp_path):
    holder = Holder("slot", tmp_path)
    said, tries = [], []
    should_stop = lambda: tries.append(1) or len(tries) >= 5
    with pytest.raises(RunError, match=r"^cancelled while queued$"), \
            training_slot(tmp_path, poll_s=0.01, should_stop=should_stop, on_wait=lambda: said.append(1)):
        pass
    assert len(said) == 1 and len(tries) == 5
    holder.release()
    assert free(tmp_path / LOCK)


def test_a_second_resume_is_refused_while_another_process_claims_the_run(tmp_path):
    run = tmp_path / "20250101-000000-x-0001"
    run.mkdir()
    holder = Holder("claim", run)
    with pytest.raises(RunError, match=f"^run {run.name} is being resumed by another request; it starts once, follow it instead$"), \
            run_claim(run):
        pass
    holder.release()
    with run_claim(run):
        assert not free(run / CLAIM)


def test_threads_of_one_process_exclude_each_other(tmp_path):
    """Each entry opens its own descriptor, so two threads (two Streamlit clicks) wait for each other as
    two processes do."""
    inside, most, lock = [0], [0], threading.Lock()
    barrier = threading.Barrier(8)

    def enter():
        barrier.wait()
        with held(tmp_path, "the folder"):
            with lock:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
            time.sleep(0.01)  # not a wait: the window another entry would have to pass through
            with lock:
                inside[0] -= 1

    threads = [threading.Thread(target=enter) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(CEILING)
    assert most[0] == 1 and inside[0] == 0


def test_a_lock_that_cannot_be_made_is_one_line(tmp_path):
    gone = tmp_path / "gone"
    with pytest.raises(RunError, match=r"^run gone cannot be locked \(No such file or directory\)$"), run_claim(gone):
        pass
    with pytest.raises(RunError, match=rf"^the runs folder {gone} cannot be locked \(No such file or directory\)$"), \
            training_slot(gone):
        pass


def test_every_lock_of_the_queue_is_the_one_idiom():
    """flock is called in `held` (and its non-blocking try) only; the locks are made with `held`."""
    tree = ast.parse((ROOT / "albert_lab" / "training" / "queue.py").read_text())
    calls = {node.name: {ast.unparse(c.func) for c in ast.walk(node) if isinstance(c, ast.Call)}
             for node in tree.body if isinstance(node, ast.FunctionDef)}
    assert {name for name, called in calls.items() if "fcntl.flock" in called} == {"held", "_try_lock"}
    assert all("held" in calls[name] for name in ("queue_lock", "training_slot", "run_claim"))
    others = [p for p in (ROOT / "albert_lab" / "training").glob("*.py") if p.name != "queue.py" and "flock" in p.read_text()]
    assert not others, others
