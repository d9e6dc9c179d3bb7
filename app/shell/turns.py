"""Heavy computations of one server process take turns, first come first served.

Streamlit runs each visitor's script in a thread of its own, and each computation asks
torch for every core: twenty visitors computing at once on a 2-core server meant forty
compute threads fighting for two cores. `Turns` lets `slots` computations run at a time
(one: each already uses every core) and queues the others in the order they asked. A long
computation (a 5,000-pair upload) passes its turn between steps when someone waits
(`pass_turn`, called from its progress reports), so a visitor's typed pair waits for one
step of someone else's upload, never for all of it; and between its steps it waits while a
computation of a moment runs in the other lane (`wait_idle`: app/shell/runner.py). Whoever waits is told how many
computations are ahead (`waiting(n)`, called every `poll` seconds: the page's message, and
where Streamlit can interrupt a visitor who left).

A thread already holding a turn gets nested ones at once (a computation that asks for another
within its turn). No Streamlit here: app/shell/runner.py, the one user of `Turns`, draws the
queue; tests drive this class with plain threads."""

from __future__ import annotations

import itertools
import threading
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager

Waiting = Callable[[int], None]  # told how many computations are ahead (running or queued before this one)


class Turns:
    def __init__(self, slots: int = 1, poll: float = 0.5) -> None:
        if slots < 1:
            raise ValueError(f"slots must be at least 1, not {slots}")
        self.slots, self.poll = slots, poll
        self._cond = threading.Condition()
        self._queue: deque[int] = deque()  # tickets waiting, in the order they asked
        self._running = 0
        self._tickets = itertools.count()
        self._held = threading.local()  # depth of this thread's turns

    def waiting(self) -> int:
        """Computations queued now (not counting those running)."""
        with self._cond:
            return len(self._queue)

    def busy(self) -> int:
        """Computations running or queued now."""
        with self._cond:
            return self._running + len(self._queue)

    def holds(self) -> bool:
        return getattr(self._held, "depth", 0) > 0

    @contextmanager
    def turn(self, waiting: Waiting | None = None) -> Iterator[None]:
        """Run the block in this thread's turn (at once when it holds one already)."""
        if self.holds():
            self._held.depth += 1
            try:
                yield
            finally:
                self._held.depth -= 1
            return
        self._enter(waiting)
        self._held.depth = 1
        try:
            yield
        finally:
            self._held.depth = 0
            self._leave()

    def pass_turn(self, waiting: Waiting | None = None) -> bool:
        """Between two steps of a long computation holding a turn: when others wait, go to
        the back of the queue and come back when they had theirs. Whether it passed."""
        if not self.holds():
            return False
        with self._cond:
            if not self._queue:
                return False
        depth = self._held.depth
        self._held.depth = 0
        self._leave()
        self._enter(waiting)
        self._held.depth = depth
        return True

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no computation runs or waits in this lane, at most `timeout` seconds (at
        once when this thread holds its turn: it would wait for itself). Whether it is idle."""
        if self.holds():
            return False
        with self._cond:
            return self._cond.wait_for(lambda: not self._running and not self._queue, timeout)

    def _enter(self, waiting: Waiting | None) -> None:
        with self._cond:
            ticket = next(self._tickets)
            self._queue.append(ticket)
        try:
            while True:
                with self._cond:
                    if self._running < self.slots and self._queue[0] == ticket:
                        self._queue.popleft()
                        self._running += 1
                        self._cond.notify_all()  # the next in line may have a free slot too
                        return
                    self._cond.wait(self.poll)
                    if self._running < self.slots and self._queue[0] == ticket:
                        continue
                    ahead = self._running + self._queue.index(ticket)
                if waiting is not None:
                    waiting(ahead)  # outside the lock: it may draw, or raise (a visitor who left)
        except BaseException:
            with self._cond:
                if ticket in self._queue:
                    self._queue.remove(ticket)
                    self._cond.notify_all()
            raise

    def _leave(self) -> None:
        with self._cond:
            self._running -= 1
            self._cond.notify_all()
