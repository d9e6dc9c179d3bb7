"""A visitor's script stopped while it waits (a rerun, a visitor who left: Streamlit raises in the
script's thread at its next draw) leaves the lanes as they were: the turn it passed is not given
back twice, so the lane still runs one computation at a time. Plain threads, no Streamlit."""

import threading

from test_app_turns import WAIT, started, until

from app.shell.turns import Turns


class Stopped(BaseException):
    """What Streamlit raises in a script whose visitor asked for another run or left."""


def test_a_long_computation_stopped_while_its_passed_turn_comes_back_leaves_the_lane_whole():
    turns, release, stopped = Turns(slots=1, poll=0.01), threading.Event(), threading.Event()
    holding, passed = threading.Event(), threading.Event()

    def leave_now(ahead: int, yours: int) -> None:  # the waiting visitor's page is drawn: there the stop is raised
        raise Stopped

    def long() -> None:
        try:
            with turns.turn(visitor="long"):
                holding.set()
                until(lambda: turns.waiting() == 1, "the short computation queued")
                passed.set()
                turns.pass_turn(leave_now)  # the short one takes the turn; coming back, the visitor has left
        except Stopped:
            stopped.set()

    def short() -> None:
        with turns.turn(visitor="short"):
            release.wait(WAIT)

    threads = [started(long)]
    assert holding.wait(WAIT)
    threads.append(started(short))
    assert passed.wait(WAIT) and stopped.wait(WAIT)
    assert turns.busy() == 1 and turns.busy("short") == 1 and turns.busy("long") == 0  # the short one alone runs

    third = threading.Event()

    def later() -> None:
        with turns.turn(visitor="later"):
            third.set()

    threads.append(started(later))
    until(lambda: turns.waiting() == 1, "a third computation queued behind the short one")
    assert not third.is_set()  # still one at a time
    release.set()
    assert third.wait(WAIT)
    for thread in threads:
        thread.join(WAIT)
    assert turns.busy() == 0
    with turns.turn():  # and the lane is free
        assert turns.busy() == 1
