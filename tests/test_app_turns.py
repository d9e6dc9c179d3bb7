"""The server's heavy computations take turns (app/shell/turns.py): one at a time, in the order
asked, a long one passing its turn between steps, whoever waits told how many are ahead,
a visitor who leaves the queue leaving no hole in it. Plain threads, no Streamlit."""

import threading
import time

import pytest
from conftest import CEILING, held

from app.shell.turns import Turns

WAIT = CEILING  # seconds a test waits for a thread before it fails


def until(condition, what: str) -> None:
    end = time.monotonic() + WAIT
    while not condition():
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(0.002)


def started(target, *args) -> threading.Thread:
    thread = threading.Thread(target=target, args=args, daemon=True)
    thread.start()
    return thread


def test_one_at_a_time_in_the_order_asked_each_told_how_many_are_ahead():
    turns, order, told, release = Turns(slots=1, poll=0.01), [], {}, threading.Event()

    def holder() -> None:
        with turns.turn():
            order.append("holder")
            release.wait(WAIT)

    def visitor(name: str) -> None:
        with turns.turn(lambda ahead, yours: told.setdefault(name, ahead)):
            order.append(name)

    threads = [started(holder)]
    until(lambda: order == ["holder"], "the holder's turn")
    for i, name in enumerate(["a", "b", "c"]):
        threads.append(started(visitor, name))
        until(lambda i=i, name=name: turns.waiting() == i + 1 and name in told, f"{name} queued")
    assert told == {"a": 1, "b": 2, "c": 3}  # the running one and those queued before
    assert turns.busy() == 4
    release.set()
    for thread in threads:
        thread.join(WAIT)
    assert order == ["holder", "a", "b", "c"]
    assert turns.busy() == 0


def test_a_long_computation_passes_its_turn_between_steps_only_when_someone_waits():
    turns, events, step_gate, short_queued = Turns(slots=1, poll=0.01), [], threading.Event(), threading.Event()

    def long() -> None:
        with turns.turn():
            for step in range(3):
                if step == 1:
                    step_gate.set()  # the short one asks now, during step 1
                    until(short_queued.is_set, "the short one in the queue")
                events.append(("passed" if turns.pass_turn() else "kept", step))
                events.append(("long step", step))

    def short() -> None:
        with turns.turn(lambda ahead, yours: short_queued.set()):
            events.append(("short", 0))

    first = started(long)
    step_gate.wait(WAIT)
    second = started(short)
    first.join(WAIT)
    second.join(WAIT)
    # alone, step 0 keeps its turn; the short pair runs before step 1, and step 2 keeps it again
    assert events == [("kept", 0), ("long step", 0), ("short", 0), ("passed", 1), ("long step", 1),
                      ("kept", 2), ("long step", 2)]


def test_a_visitor_who_leaves_the_queue_leaves_no_hole_and_nested_turns_do_not_wait():
    turns, order, release = Turns(slots=1, poll=0.01), [], threading.Event()

    class Left(BaseException):
        """What Streamlit raises in a script whose visitor moved on (a BaseException)."""

    def holder() -> None:
        with turns.turn():
            with turns.turn():  # nested: an analysis that loads its checkpoint within its turn
                order.append("holder")
            release.wait(WAIT)

    def leaver() -> None:
        def waiting(ahead: int, yours: int) -> None:
            raise Left

        with pytest.raises(Left), turns.turn(waiting):
            order.append("leaver")  # never runs

    threads = [started(holder)]
    until(lambda: order == ["holder"], "the holder's turn")
    threads.append(started(leaver))
    threads[-1].join(WAIT)
    assert turns.waiting() == 0  # its ticket went with it
    def after() -> None:
        with turns.turn():
            order.append("after")

    threads.append(started(after))
    until(lambda: turns.waiting() == 1, "the next visitor queued")
    release.set()
    for thread in threads:
        thread.join(WAIT)
    assert order == ["holder", "after"]  # the one who left never ran; the next one did
    assert turns.busy() == 0 and not turns.holds()


def test_slots_are_counted():
    with pytest.raises(ValueError, match="slots must be at least 1"):
        Turns(slots=0)
    turns = Turns(slots=2, poll=0.01)
    inside, release = [], threading.Event()

    def visitor() -> None:
        with turns.turn():
            inside.append(1)
            release.wait(WAIT)

    threads = [started(visitor) for _ in range(3)]
    until(lambda: len(inside) == 2 and turns.waiting() == 1, "two running, one queued")
    release.set()
    for thread in threads:
        thread.join(WAIT)
    assert len(inside) == 3 and turns.busy() == 0


@pytest.mark.parametrize("finished", [True, False])
def test_many_visitors_asking_for_one_computation_wait_for_the_first(finished):
    """Twenty first visits of a page compute its kept result once (app.shell.results): the
    others wait, told so, and take it; when the first stops, the next one computes it."""
    from collections import OrderedDict

    from app.shell.results import _COMPUTING, MISSING
    from app.shell.results import join_or_claim as _join_or_claim
    from app.shell.results import release as _release

    results, lock, told, got = OrderedDict(), threading.Lock(), [], []
    key = ("gradflow", "test", finished)
    assert _join_or_claim(key, results, lock, lambda: None) is MISSING  # the first claims it
    waiter = started(lambda: got.append(_join_or_claim(key, results, lock, lambda: told.append(1))))
    until(lambda: told, "the second visitor told it waits")
    assert not got
    _release(key, "frame" if finished else MISSING, results, lock)
    waiter.join(WAIT)
    assert got == (["frame"] if finished else [MISSING])  # stopped: the second computes it now
    assert (key in _COMPUTING) is (not finished)
    assert dict(results) == ({key: "frame"} if finished else {})
    if not finished:
        _release(key, "frame", results, lock)
        assert _join_or_claim(key, results, lock, lambda: None) == "frame" and key not in _COMPUTING


def test_waiting_for_a_lane_to_be_idle():
    """wait_idle: at once when nothing runs or waits; until the last leaves, at most its timeout;
    never for the caller's own turn."""
    lane = Turns()
    assert lane.wait_idle(5)
    release = held(lane)
    started = time.monotonic()
    assert not lane.wait_idle(0.2) and time.monotonic() - started >= 0.2
    threading.Timer(0.3, release.set).start()
    started = time.monotonic()
    assert lane.wait_idle(10) and 0.25 <= time.monotonic() - started < 5
    with lane.turn():
        assert not lane.wait_idle(5)  # its own turn: no wait (it would be for ever)


def test_visitors_take_turns_and_each_is_told_how_many_ahead_are_its_own():
    """The next turn goes to the visitor whose last one is the oldest: a visitor asking after
    another's three tabs goes before that visitor's second and third; each waiting tab is told
    how many computations are ahead and how many of them are its own visitor's."""
    turns, order, told, release = Turns(slots=1, poll=0.01), [], {}, threading.Event()

    def tab(name: str, visitor: str) -> None:
        with turns.turn(lambda ahead, yours: told.__setitem__(name, (ahead, yours)), visitor):
            order.append(name)
            if name == "a1":
                release.wait(WAIT)

    threads = [started(tab, "a1", "a")]
    until(lambda: order == ["a1"], "a1's turn")
    for i, (name, visitor) in enumerate([("a2", "a"), ("a3", "a"), ("b1", "b")]):
        threads.append(started(tab, name, visitor))
        until(lambda i=i, name=name: turns.waiting() == i + 1 and name in told, f"{name} queued")
    until(lambda: told["a3"] == (3, 2), "a3 told again after b1 came")
    assert told["b1"] == (1, 0)  # only a1, running: b1 goes before a2 and a3
    assert told["a2"] == (2, 1)  # a1 and b1; a1 its own
    assert turns.busy("a") == 3 and turns.busy("b") == 1
    release.set()
    for thread in threads:
        thread.join(WAIT)
    assert order == ["a1", "b1", "a2", "a3"]
    assert turns.busy() == 0


STEP = 0.02  # seconds of one step of a fake heavy computation


def visitors_tabs(monkeypatch):
    """`tab(visitor, name, steps_until)`: a browser tab's heavy computation through the runner (plain
    threads, as its scripts' threads; an analysis or a Depth lab training alike, both the runner's parts),
    STEP-second steps with a progress report after each, until `steps_until()`; the steps' names in the
    order they ran; each thread's visitor (the browser whose owner token app.shell.owner.digest gives)."""
    from app.shell import owner, runner

    who, steps = {}, []
    monkeypatch.setattr(owner, "digest", lambda: who[threading.get_ident()])  # the browser's owner token

    def tab(visitor: str, name: str, until_done) -> None:
        who[threading.get_ident()] = visitor

        def work(progress):
            while not until_done():
                steps.append(name)
                time.sleep(STEP)
                progress(0.5, "a step")
            return name

        runner.run([runner.Part(name, ("tab", name), work)], keep=False)

    return tab, steps, who


def test_one_visitors_six_tabs_share_the_heavy_lane_step_for_step_with_another_visitor(monkeypatch):
    """Six tabs of one browser hold the heavy lane (runner.TURNS) with long computations (analyses, or
    Depth lab trainings, which ran beside it before); another visitor's computation then waits at most
    one step of theirs for each of its steps (a seventh of the lane, six steps of theirs for each of
    its own, when turns went to computations in the order asked)."""
    from app.shell import runner

    tab, steps, _ = visitors_tabs(monkeypatch)
    done = threading.Event()
    tabs = [started(tab, "a", f"a{i}", done.is_set) for i in range(6)]
    until(lambda: runner.TURNS.busy() == 6, "the six tabs in the heavy lane")
    asked = len(steps)
    other = started(tab, "b", "b", lambda: steps.count("b") == 5)
    other.join(WAIT)
    done.set()
    for thread in tabs:
        thread.join(WAIT)
    after = steps[asked:]
    b_steps = [i for i, name in enumerate(after) if name == "b"]
    waits = [later - earlier - 1 for earlier, later in zip([-1, *b_steps], b_steps)]  # the tabs' steps before each of b's
    assert len(b_steps) == 5 and max(waits) <= 1, (waits, after)
    assert runner.TURNS.busy() == 0


def test_typed_pairs_never_wait_for_six_heavy_tabs_of_one_visitor(monkeypatch):
    """The bound of the quick lane (runner.QUICK) while six tabs of one browser hold the heavy lane:
    another visitor's typed pair is computed at once, and while it is, the heavy tabs start no new
    step (at most the one that had begun when it was asked): its wait is its own work, never the
    tabs' queue. Fake work of known duration: 50 ms a pair, STEP a heavy step."""
    from app.shell import batches, runner

    tab, steps, who = visitors_tabs(monkeypatch)
    done, pairs, ended = threading.Event(), [], []

    def many(items):
        time.sleep(0.05)
        ended.append(len(steps))  # the tabs' steps begun so far
        return items

    who[threading.get_ident()] = "b"
    batches.together(("starved pair", "first"), "starved", 0, many, "the typed pair")  # what a first pair imports (torch)
    tabs = [started(tab, "a", f"a{i}", done.is_set) for i in range(6)]
    until(lambda: runner.TURNS.busy() == 6, "the six tabs in the heavy lane")
    for n in range(5):
        before = len(steps)
        assert batches.together(("starved pair", n), "starved", n, many, "the typed pair") == n
        pairs.append(ended[-1] - before)  # the tabs' steps begun from the ask to the pair's scores
        time.sleep(2 * STEP)  # the tabs step on between the pairs
    done.set()
    for thread in tabs:
        thread.join(WAIT)
    assert max(pairs) <= 1, pairs  # six or more, were the pair queued behind the tabs
    assert runner.TURNS.busy() == 0 and runner.QUICK.busy() == 0


def test_who_waits_is_told_whose_computations_are_ahead():
    from app.shell.runner import queue_words

    assert queue_words(3).startswith("Waiting for 3 computations of other visitors to finish: ")
    assert queue_words(2, 2).startswith("Waiting for 2 computations asked in your other tabs to finish: ")
    assert queue_words(3, 1).startswith("Waiting for 3 computations, 1 of them asked in your other tabs, to finish: ")
    assert queue_words(1).endswith("this server computes one thing at a time, each visitor's in turn")
