"""Heavy computations of one server process take turns: visitors in turn, each visitor's in the
order asked.

Streamlit runs each visitor's script in a thread of its own, and each computation asks
torch for every core: twenty visitors computing at once on a 2-core server meant forty
compute threads fighting for two cores. `Turns` lets `slots` computations run at a time
(one: each already uses every core) and queues the others. A long
computation (a 5,000-pair upload) passes its turn between steps when someone waits
(`pass_turn`, called from its progress reports), so a visitor's typed pair waits for one
step of someone else's upload, never for all of it; and between its steps it waits while a
computation of a moment runs in the other lane (`wait_idle`: app/shell/runner.py). Whoever waits is told how many
computations are ahead and how many of those are its own (`waiting(ahead, yours)`, called every `poll` seconds: the page's message, and
where Streamlit can interrupt a visitor who left).

The next turn goes to the visitor whose last turn is the oldest (one who never had one first), and
within a visitor to its first computation asked: one browser's six tabs of heavy work take turns
with another visitor's one computation, step for step, instead of six steps to its one (first come
first served by computation, as before, gave a second visitor a seventh of the lane). A computation
asked without a visitor is a visitor of its own.

A thread already holding a turn gets nested ones at once (a computation that asks for another
within its turn). No Streamlit here: app/shell/runner.py, the one user of `Turns`, draws the
queue; tests drive this class with plain threads."""

from __future__ import annotations

import itertools
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

# told how many computations are ahead (running or queued before this one), and how many of them are the same visitor's
Waiting = Callable[[int, int], None]
REMEMBERED = 1024  # visitors whose last turn is remembered, the least recent forgotten first (then as one who had none)


@dataclass(frozen=True)
class _Alone:
    """The visitor of a computation asked without one: a visitor of its own."""

    ticket: int


class Turns:
    def __init__(self, slots: int = 1, poll: float = 0.5) -> None:
        if slots < 1:
            raise ValueError(f"slots must be at least 1, not {slots}")
        self.slots, self.poll = slots, poll
        self._cond = threading.Condition()
        self._queue: dict[int, Hashable] = {}  # ticket -> its visitor, waiting, in the order they asked
        self._running: Counter[Hashable] = Counter()  # visitor -> its computations running
        self._last: OrderedDict[Hashable, int] = OrderedDict()  # visitor -> the number of its last turn
        self._tickets, self._given = itertools.count(), 0  # tickets handed out; turns given
        self._held = threading.local()  # depth of this thread's turns, and its visitor

    def waiting(self) -> int:
        """Computations queued now (not counting those running)."""
        with self._cond:
            return len(self._queue)

    def busy(self, visitor: Hashable | None = None) -> int:
        """Computations running or queued now (`visitor`'s only, when given)."""
        with self._cond:
            if visitor is None:
                return self._running.total() + len(self._queue)
            return self._running[visitor] + sum(v == visitor for v in self._queue.values())

    def holds(self) -> bool:
        return getattr(self._held, "depth", 0) > 0

    @contextmanager
    def turn(self, waiting: Waiting | None = None, visitor: Hashable | None = None) -> Iterator[None]:
        """Run the block in this thread's turn (at once when it holds one already), asked for
        `visitor` (one browser's tabs are one visitor; None: a visitor of its own)."""
        if self.holds():
            self._held.depth += 1
            try:
                yield
            finally:
                if self.holds():  # not when a pass_turn inside lost the turn
                    self._held.depth -= 1
            return
        who = self._enter(waiting, visitor)
        self._held.depth, self._held.visitor = 1, who
        try:
            yield
        finally:
            if self.holds():  # a pass_turn whose wait to come back was interrupted has left the turn already
                self._held.depth = 0
                self._leave(who)

    def pass_turn(self, waiting: Waiting | None = None) -> bool:
        """Between two steps of a long computation holding a turn: when others wait, let the next
        in turn have theirs and come back in its own. Whether it passed. When the wait to come back
        raises (`waiting` draws, and Streamlit stops a script there), the turn is not held any more,
        and the blocks holding it leave nothing when they end: it was given back once, here."""
        if not self.holds():
            return False
        with self._cond:
            if not self._queue:
                return False
        depth, who = self._held.depth, self._held.visitor
        self._held.depth = 0
        self._leave(who)
        self._enter(waiting, who)
        self._held.depth = depth
        return True

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no computation runs or waits in this lane, at most `timeout` seconds (at
        once when this thread holds its turn: it would wait for itself). Whether it is idle."""
        if self.holds():
            return False
        with self._cond:
            return self._cond.wait_for(lambda: not self._running and not self._queue, timeout)

    def _order(self) -> list[int]:
        """The queued tickets in the order they will have their turns, if nobody else asks: each
        time, the visitor whose last turn is the oldest (never: first; then the first to ask), its
        first ticket. With the lock held."""
        tickets: dict[Hashable, list[int]] = {}
        for ticket, who in self._queue.items():
            tickets.setdefault(who, []).append(ticket)
        last = {who: self._last.get(who, -1) for who in tickets}
        order, clock = [], self._given + 1  # the turns to come, after every turn given
        while tickets:
            who = min(tickets, key=lambda w: (last[w], tickets[w][0]))
            order.append(tickets[who].pop(0))
            last[who], clock = clock, clock + 1
            if not tickets[who]:
                del tickets[who]
        return order

    def _enter(self, waiting: Waiting | None, visitor: Hashable | None) -> Hashable:
        """Wait for a turn; the visitor it was taken for (a ticket's own without one)."""
        with self._cond:
            ticket = next(self._tickets)
            who = visitor if visitor is not None else _Alone(ticket)
            self._queue[ticket] = who
        try:
            while True:
                with self._cond:
                    if self._take(ticket, who):
                        return who
                    self._cond.wait(self.poll)
                    if self._take(ticket, who):
                        return who
                    order = self._order()
                    before = order[:order.index(ticket)]
                    ahead = self._running.total() + len(before)
                    yours = self._running[who] + sum(self._queue[t] == who for t in before)
                if waiting is not None:
                    waiting(ahead, yours)  # outside the lock: it may draw, or raise (a visitor who left)
        except BaseException:
            with self._cond:
                if self._queue.pop(ticket, None) is not None:
                    self._cond.notify_all()
            raise

    def _take(self, ticket: int, who: Hashable) -> bool:
        """Take the turn when a slot is free and `ticket` is next. With the lock held."""
        if self._running.total() >= self.slots or self._order()[0] != ticket:
            return False
        del self._queue[ticket]
        self._running[who] += 1
        self._given += 1
        if not isinstance(who, _Alone):  # never seen again: nothing to remember
            self._last[who] = self._given
            self._last.move_to_end(who)
            while len(self._last) > REMEMBERED:
                self._last.popitem(last=False)
        self._cond.notify_all()  # the next in line may have a free slot too
        return True

    def _leave(self, who: Hashable) -> None:
        with self._cond:
            self._running[who] -= 1
            if not self._running[who]:
                del self._running[who]
            self._cond.notify_all()
