"""The class benchmark ends when its --timeout says (benchmarks/bounded.py), even when a visitor's
cleanup blocks once cancelled, as closing a websocket or a browser can: what each visitor waited
for is noted before the visitors are stopped, and the run returns. The pattern it replaces,
asyncio.run(asyncio.wait_for(...)), is shown still blocked by the same cleanup."""

import asyncio
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

from benchmarks.bounded import run_until

ROOT = Path(__file__).resolve().parent.parent
WAIT = 30.0  # seconds the test allows a thread before it fails; the runs below end on events, not on this


async def visitor_whose_cleanup_blocks(asked: asyncio.Event | None = None, doing: list | None = None) -> None:
    """Waits for an answer that never comes; once cancelled, its cleanup waits for a close that never ends."""
    try:
        if doing is not None:
            doing.append("typed pair")
        await asyncio.Event().wait()
    finally:
        await asyncio.Event().wait()  # a websocket's close with a server that no longer answers


def test_a_class_whose_cleanup_blocks_ends_with_what_each_visitor_waited_for():
    doing, noted = [], []

    async def classroom() -> None:
        await asyncio.gather(visitor_whose_cleanup_blocks(doing=doing), asyncio.sleep(0))

    finished = run_until(classroom(), 0.2, lambda: noted.append(list(doing)), grace=0.2)
    assert finished is False
    assert noted == [["typed pair"]]  # noted at the deadline, before the visitors were stopped


def test_the_old_pattern_stays_blocked_where_the_bounded_run_returns():
    old_ended = threading.Event()

    def old() -> None:
        asyncio.run(asyncio.wait_for(visitor_whose_cleanup_blocks(), 0.2))  # what bench_class did
        old_ended.set()

    threading.Thread(target=old, daemon=True).start()
    returned = threading.Event()

    def new() -> None:
        run_until(visitor_whose_cleanup_blocks(), 0.2, lambda: None, grace=0.2)
        returned.set()

    threading.Thread(target=new, daemon=True).start()
    assert returned.wait(WAIT)
    assert not old_ended.is_set()  # still waiting for a cleanup that never ends


def test_a_finished_class_returns_its_result_and_its_error():
    async def done() -> None:
        await asyncio.sleep(0)

    async def failing() -> None:
        raise ValueError("the browser did not start")

    assert run_until(done(), 60.0, lambda: None) is True
    try:
        run_until(failing(), 60.0, lambda: None)
    except ValueError as err:
        assert str(err) == "the browser did not start"
    else:
        raise AssertionError("the class's error was not raised")


CHILDREN = """
import json, subprocess, sys
from benchmarks.bounded import end_children
sleep = [sys.executable, "-c", "import time; time.sleep(600)"]
server, left = subprocess.Popen(sleep), subprocess.Popen(sleep)
ended = end_children(keep=server.pid)
codes = [left.wait(30), server.poll()]
server.kill()
print(json.dumps({"ended": ended, "left": left.pid, "server": server.pid, "codes": codes}))
"""


def test_processes_left_behind_are_ended_by_their_ids_the_server_kept():
    # in a process of its own: this one's children (other tests' servers and browsers) are not the test's
    out = subprocess.run([sys.executable, "-c", CHILDREN], capture_output=True, text=True, timeout=WAIT, check=True,
                         cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    seen = json.loads(out.stdout)
    assert seen["ended"] == [seen["left"]]
    assert seen["codes"] == [-9, None]  # the one left behind killed, the server still running then
