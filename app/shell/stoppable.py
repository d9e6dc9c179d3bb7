"""Long computations behind a progress bar that gives the time left and a Stop button (a
first visit on a busy machine took 10-30 s with nothing to stop it):
- `each_checkpoint`: one checkpoint at a time; each result is cached by the page, so a stop
  keeps the ones finished, and the page draws them and offers to go on;
- `computation`: one computation that tells its progress (the library's `progress`
  callbacks: layer by layer, pass by pass, batch by batch). A Stop ends it at the next
  report (the callback's Streamlit call is where a rerun interrupts the script); the page
  then says so and offers to compute it after all. Finished results are kept per key.
Both take turns with every other visitor's heavy work (`TURNS`, app/shell/turns.py): one at a time
on this server, first come first served, a long one passing its turn between steps; `queued`
is the same for a short computation, and whoever waits is told how many are ahead."""

from __future__ import annotations

import copy
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

import streamlit as st

from app.shell import ui
from app.shell.state import shell
from app.shell.text import fmt_duration, plural
from app.shell.turns import Turns

if TYPE_CHECKING:
    from albert_lab.analysis.common import Progress

T = TypeVar("T")
TURNS = Turns(slots=1)  # this server process's heavy computations, one at a time: each uses every core


def queue_words(ahead: int) -> str:
    return (f"Waiting for {plural(ahead, 'computation')} of other visitors to finish: this server computes one "
            "thing at a time, in the order asked")


@contextmanager
def queued() -> Iterator[None]:
    """Run the block in this visitor's turn (app/shell/turns.py), saying while it waits how many
    computations are ahead; a short computation, such as one typed pair."""
    note = st.empty()
    try:
        with TURNS.turn(lambda ahead: note.info(queue_words(ahead), icon=":material/hourglass_top:")):
            note.empty()
            yield
    finally:
        note.empty()


def each_checkpoint(kind: str, request: Any, names: Sequence[str], run_one: Callable[[str], Any],
                    guess_s: float) -> tuple[list[Any], bool]:
    """`run_one(name)` for each checkpoint, or only those finished before a Stop of this
    same `request` (the page's inputs); returns (results, stopped). The bar appears only
    when a checkpoint takes long enough to see it (cached ones return at once)."""
    state = shell().each.setdefault(kind, {"request": None, "done": [], "stopped": False})
    if state["request"] != request:
        state.update(request=request, done=[], stopped=False)
    todo = [n for n in names if n in state["done"]] if state["stopped"] else list(names)
    bar, stop, results, shown = st.empty(), st.empty(), [], False
    try:
        for i, name in enumerate(todo):
            if name not in state["done"]:
                left = ui.estimate(kind, len(todo) - i, guess_s)
                bar.progress(i / len(todo), text=f"{name} ({i + 1} of {len(todo)}): about {fmt_duration(left)} left")
                if not shown:
                    shown = stop.button("Stop", key=f"_stop_{kind}", icon=":material/stop:", on_click=_stop, args=(kind,),
                                        help="Stops after the checkpoint being computed; those finished are drawn") or True
            start = time.perf_counter()
            results.append(run_one(name))
            if name not in state["done"]:
                state["done"].append(name)
                if (seconds := time.perf_counter() - start) > 0.5:  # a cache hit teaches nothing
                    ui.learn(kind, seconds, 1)
    finally:  # a checkpoint's error is shown without a bar or a Stop button that would do nothing
        bar.empty()
        stop.empty()
    if state["stopped"] and len(todo) < len(names):
        st.info(f"Stopped: {len(todo)} of {len(names)} checkpoints computed.", icon=":material/stop_circle:")
        st.button("Compute the others", key=f"_go_on_{kind}", on_click=_go_on, args=(kind,))
    return results, state["stopped"] and len(todo) < len(names)


def _stop(kind: str) -> None:
    shell().each[kind]["stopped"] = True


def _go_on(kind: str) -> None:
    shell().each[kind]["stopped"] = False


def computation(kind: str, key: Hashable, what: str, work: Callable[[Progress], T], units: float, guess_per_unit: float,
                keep: bool = True) -> T | None:
    """`work(progress)` behind a progress bar with the time left and a Stop button; its
    result, or None if this `key` was stopped (the page then shows why and a button to
    compute it after all). With `keep`, a finished result is kept for the same key (any
    session: the key names the checkpoint files' stamps and every input) and returned at
    once next time, as a copy."""
    results, lock = _results()
    with lock:
        if keep and key in results:
            results.move_to_end(key)
            return copy.deepcopy(results[key])
    stopped = shell().stopped
    if stopped.get(kind) == key:
        st.info(f"Stopped before it finished: {what[:1].lower()}{what[1:]}.", icon=":material/stop_circle:")
        st.button("Compute it after all", key=f"_again_{kind}", on_click=stopped.pop, args=(kind, None))
        return None
    bar, stop = st.empty(), st.empty()
    guess = ui.estimate(kind, units, guess_per_unit)
    bar.progress(0.0, text=f"{what}: about {fmt_duration(guess)} left")
    stop.button("Stop", key=f"_stop_{kind}", icon=":material/stop:", on_click=_stop_key, args=(kind, key),
                help="Stops the computation at its next step; nothing is lost but the time spent")
    began, script_thread = [time.perf_counter()], threading.get_ident()  # restarted when its turn comes

    def waiting(ahead: int) -> None:
        bar.progress(0.0, text=f"{what}: {queue_words(ahead)[:1].lower()}{queue_words(ahead)[1:]}")

    def progress(fraction: float, doing: str) -> None:
        if threading.get_ident() != script_thread:  # e.g. a GPU backward's own thread: no page to draw on
            return
        TURNS.pass_turn(lambda ahead: bar.progress(min(max(fraction, 0.0), 1.0), text=f"{what}: {doing}; paused, "
                                                   f"{queue_words(ahead)[:1].lower()}{queue_words(ahead)[1:]}"))
        elapsed = time.perf_counter() - began[0]
        left = elapsed * (1 - fraction) / fraction if fraction >= 0.1 else max(guess - elapsed, 0.0)
        when = "under a second left" if left < 1 else f"about {fmt_duration(left)} left"
        bar.progress(min(max(fraction, 0.0), 1.0), text=f"{what}: {doing}; {when}")

    try:
        kept = _join_or_claim(key, results, lock, lambda: bar.progress(
            0.0, text=f"{what}: being computed for another visitor; it is shown here when done")) if keep else MISSING
        result: Any = MISSING
        if kept is MISSING:
            try:
                with TURNS.turn(waiting):
                    began[0] = time.perf_counter()
                    result = work(progress)
            finally:
                if keep:
                    _release(key, result, results, lock)
    except Exception:  # the page's guard shows it; a Stop (a BaseException) leaves the page to the rerun
        bar.empty()
        stop.empty()
        raise
    bar.empty()
    stop.empty()
    if kept is not MISSING:
        return copy.deepcopy(kept)
    seconds = time.perf_counter() - began[0]
    if seconds > 0.5:
        ui.learn(kind, seconds, units)
    return copy.deepcopy(result) if keep else result


_COMPUTING: dict[Hashable, threading.Event] = {}  # keys being computed now, with lock; set when done or given up


def _join_or_claim(key: Hashable, results: OrderedDict, lock: threading.Lock, tell: Callable[[], None]) -> Any:
    """The kept result of `key`, waiting while another visitor computes it (twenty first
    visits of a page, one computation), or MISSING: then this visitor computes it and
    `_release`s it after. `tell` draws the wait every half second (where a visitor who
    leaves is interrupted)."""
    while True:
        with lock:
            if key in results:
                results.move_to_end(key)
                return results[key]
            running = _COMPUTING.get(key)
            if running is None:
                _COMPUTING[key] = threading.Event()
                return MISSING
        tell()
        running.wait(0.5)


def _release(key: Hashable, result: Any, results: OrderedDict, lock: threading.Lock) -> None:
    """Keep a finished result (MISSING: stopped or failed, a waiting visitor computes it) and wake who waits."""
    with lock:
        if result is not MISSING:
            results[key] = result
            while len(results) > KEPT:
                results.popitem(last=False)
        _COMPUTING.pop(key).set()


MISSING = object()
KEPT = 32  # finished computations kept in this server process, least recently used first out


@st.cache_resource(show_spinner=False)
def _results() -> tuple[OrderedDict, threading.Lock]:
    return OrderedDict(), threading.Lock()


def _stop_key(kind: str, key: Hashable) -> None:
    shell().stopped[kind] = key


def was_stopped(kind: str, key: Hashable) -> bool:
    return shell().stopped.get(kind) == key


def forget_stop(kind: str) -> None:
    """A computation asked for again (a button pressed anew) runs even if it was stopped."""
    shell().stopped.pop(kind, None)
