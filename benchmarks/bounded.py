"""A benchmark's asynchronous run that ends when it must: bench_class's class of visitors.

`asyncio.run(asyncio.wait_for(main, timeout))` waits, after the timeout, for `main` to finish being
cancelled, and then for every task left: a cleanup that blocks (a websocket's close with a server
that no longer answers, Playwright closing a context or a browser, or stopping its driver, which
are known to hang when the task using them is cancelled) kept the benchmark waiting past its own
timeout, with nothing printed. Here the cancelled run gets GRACE seconds for its cleanup, whatever
is left then is abandoned, and the processes it started (Chromium, Playwright's driver) are ended
by their ids."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any

from benchmarks.served import proc_descendants

GRACE = 20.0  # seconds a cancelled run may take to clean up (its own closes are bounded shorter)
CLOSE_SECONDS = 10.0  # a browser's, a context's or Playwright's close at most


def run_until(main: Coroutine[Any, Any, Any], seconds: float, at_deadline: Callable[[], None],
              grace: float = GRACE) -> bool:
    """Run `main` for at most `seconds`; then call `at_deadline()` (to note what each visitor waits
    for, before cancelling changes it), cancel `main` and give it, then any task left, `grace`
    seconds each to end. Whether `main` finished in time (its error, if it raised one, is raised)."""
    loop = asyncio.new_event_loop()
    loop.set_exception_handler(_quiet_about_abandoned)
    task = loop.create_task(main)
    try:
        loop.run_until_complete(asyncio.wait([task], timeout=max(seconds, 0.0)))
        if task.done():
            task.result()
            return True
        at_deadline()
        task.cancel()
        loop.run_until_complete(asyncio.wait([task], timeout=grace))
        return False
    finally:
        left = [t for t in asyncio.all_tasks(loop) if not t.done()]
        for t in left:
            t.cancel()
        if left:
            loop.run_until_complete(asyncio.wait(left, timeout=grace))
        loop.close()  # without waiting for the default executor's threads: one may be blocked too


async def bounded(closing: Awaitable[Any], seconds: float = CLOSE_SECONDS) -> None:
    """Await a close for at most `seconds`; its failure is not the benchmark's (what it closed is
    ended by `end_children` if it is still running)."""
    try:
        await asyncio.wait_for(closing, seconds)
    except Exception:  # TimeoutError, or Playwright's error for a browser already gone
        pass


def end_children(keep: int) -> list[int]:
    """SIGKILL every process below this one except `keep` and its own (the server): Chromium and
    Playwright's driver where their bounded close did not end them. The ids ended."""
    ended = []
    for pid in sorted(proc_descendants(os.getpid()) - proc_descendants(keep) - {os.getpid()}):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            if stat[stat.rindex(")") + 2] == "Z":  # ended already, not yet reaped
                continue
            os.kill(pid, signal.SIGKILL)
            ended.append(pid)
        except (OSError, ValueError):  # gone meanwhile
            pass
    return ended


def _quiet_about_abandoned(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """Tasks abandoned after the grace are destroyed pending: expected, not worth a traceback."""
    if "was destroyed but it is pending" not in context.get("message", ""):
        loop.default_exception_handler(context)
