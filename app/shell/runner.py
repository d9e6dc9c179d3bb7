"""The one runner of the pages' heavy work: every computation a page asks for goes through `run`,
as parts (one per checkpoint, or one): analyses of the sidebar's checkpoints (`Part.of`), and other
heavy work (`Part.call`: the Depth lab's nets, a model made and offered, app/shell/making.py). For
each part it
- returns a finished result at once: results are kept in this server process for every visitor,
  under the part's key (the analysis, the checkpoints and their files' stamps, every input), and
  a result many visitors ask for is computed by the first while the others wait for it;
- else computes it in this visitor's turn (`TURNS`, app/shell/turns.py): one heavy computation at
  a time on this server (each uses every core), visitors in turn (`visitor`: one browser's tabs are one
  visitor) and each visitor's in the order asked; a long one passes its turn between its progress reports
  when someone waits, and whoever waits is told how many are ahead and how many of those are its other tabs';
  a moment of the cores (`batches.together`: typed pairs) has a lane of its own (`QUICK`), one at a time
  too, and never waits for a long computation's step: with twenty visitors and an upload, a typed
  pair waited for the upload's batches under the load (24 s median, 40 s p95 in
  benchmarks/bench_class.py); while it works, a long computation waits between its steps
  (`YIELD_SECONDS` at most a step), leaving it the cores;
- with a cost (the analysis record's, albert_lab.analysis.registry.Cost; app/shell/costs.py's for the
  Depth lab's nets), shows a progress bar with
  the time left (the record's guess until this server has timed its own pace, pace.estimate) and a
  Stop button. A Stop ends the part being computed at its next progress report drawn (the library's
  `progress(fraction, what)` callbacks, analysis.common.Progress: the callback's Streamlit call is
  where a rerun interrupts the script; drawn at most every DRAW_EVERY seconds), or when it ends if it
  reports none; then the page draws the parts finished and offers the others (`each`: checkpoints,
  or what an `Each` names, one at a time), or says the
  one computation was stopped and offers to compute it after all. Without a cost, a short
  computation (a typed pair, a lens): no bar, the page's spinner if it draws one;
- (app/shell/batches.py) computes what many visitors ask at once in one pass where it can
  (`together`: the typed pairs asked while one waits for the quick lane are scored in one batch);
- gives a part that fails with a user's error (AlbertLabError) its note, naming it, and goes on
  with the others; when every part fails, the error goes to the page's guard."""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import streamlit as st

from albert_lab.errors import AlbertLabError
from app.shell import owner, pace
from app.shell.guard import without_server_paths
from app.shell.results import MISSING, join_or_claim, kept_result, release, store
from app.shell.state import shell
from app.shell.text import fmt_duration, plain, plural
from app.shell.turns import Turns

if TYPE_CHECKING:
    from albert_lab.analysis.common import Progress
    from albert_lab.analysis.registry import Cost
    from app.shell.selection import Selection

T = TypeVar("T")
TURNS = Turns(slots=1)  # this server process's heavy computations, one at a time: each uses every core
QUICK = Turns(slots=1)  # its computations of a moment (a typed pair), one at a time beside them
# A heavy computation waits between its steps while the quick lane works, at most this long a step:
# beside an upload's thread, 13 typed pairs took 11.8 s on two shared cores and their visitors waited
# 13 s for the lane (bench_class, 20 visitors); a stream of typed pairs still never stops an upload.
YIELD_SECONDS = 10.0
DRAW_EVERY = 0.25  # seconds between two draws of a bar: a report's draw is where a Stop interrupts the script


@dataclass(frozen=True)
class Part(Generic[T]):
    """One part of a page's computation: one checkpoint's share, or all of it."""

    name: str  # the checkpoint, or what is computed ('Gradients of albert-sop on 16 texts'): the bar's and a note's words
    key: Hashable  # what the result depends on: the analysis, the checkpoints and their files' stamps, every input
    work: Callable[[Progress], T]  # the computation, given the callback it may report its progress to
    units: float = 1.0  # units of work: the time guess is units x the cost's seconds per unit

    @classmethod
    def of(cls, name: str, selection: Selection, analysis: Callable[..., T], /, *args: Any, units: float = 1.0,
           progress: bool = False, **kwargs: Any) -> Part[T]:
        """`analysis(selection.bundles(), *args, **kwargs)`, keyed on the analysis, the selection
        (checkpoints, device, dtype, casings given, the files' stamps) and the arguments: pages
        name the analysis and its inputs, never the device or dtype, and a checkpoint rewritten in
        place (a run that saved again) is computed afresh. With `progress`, the analysis is given
        the runner's callback as `progress=` (a bar's time left, and a Stop at its reports). Every
        argument is part of the key, so each must be hashable as it is, or a list, tuple or dict
        of such; a large input goes in as its digest's holder (see app/rooms/sentence_pairs/upload.py)."""
        code = analysis.__code__  # pages run as __main__: the file tells two pages' functions apart
        key = (code.co_filename, analysis.__qualname__, selection.key(), _frozen(args), _frozen(kwargs))

        def work(report: Progress) -> T:
            return analysis(selection.bundles(), *args, **kwargs, **({"progress": report} if progress else {}))

        return cls(name, key, work, units)

    @classmethod
    def call(cls, name: str, f: Callable[..., T], /, *args: Any, units: float = 1.0, progress: bool = False,
             **kwargs: Any) -> Part[T]:
        """`f(*args, **kwargs)`, keyed on `f` and the arguments: heavy work that is no analysis of the
        sidebar's checkpoints (a Depth lab net trained, a model made from a folder). With `progress`,
        `f` is given the runner's callback as `progress=`. The arguments as Part.of's."""
        code = f.__code__
        key = (code.co_filename, f.__qualname__, _frozen(args), _frozen(kwargs))

        def work(report: Progress) -> T:
            return f(*args, **kwargs, **({"progress": report} if progress else {}))

        return cls(name, key, work, units)


@dataclass(frozen=True)
class Each:
    """What `run`'s parts are when computed one at a time, in a Stop's words: 'Stopped: 1 of 2
    {what} {done}.' and a button '{rest}'."""

    what: str = "checkpoints"
    done: str = "computed"
    rest: str = "Compute the others"


CHECKPOINTS = Each()


def run(parts: Sequence[Part[T]], cost: Cost | None = None, *, each: bool | Each = False, keep: bool = True,
        asked: bool = False) -> list[T]:
    """The parts' results, in their order. `cost`: the analysis record's, for the bar, the time
    left and the Stop (None: a short computation, no bar). `each`: the parts are computed one at
    a time, checkpoints (True) or what an `Each` names; else one part, one computation. `keep`:
    results kept for every visitor (False: the page keeps its own). `asked`: a button pressed anew,
    which computes even what was stopped. After a Stop, only the parts finished before it (none
    for one computation), with what was stopped said and a button for the rest."""
    words = each if isinstance(each, Each) else CHECKPOINTS if each else None  # None: one computation
    request = tuple(part.key for part in parts)
    state = _state(cost.kind, request, asked) if cost is not None else None
    todo = [p for p in parts if p.name in state["done"]] if state is not None and state["stopped"] else list(parts)
    shown = Shown(cost, words, todo, TURNS)
    results, failed = [], []
    try:
        for i, part in enumerate(todo):
            try:
                results.append(_one(part, keep, shown, i))
            except AlbertLabError as err:
                failed.append((part.name, err))
                continue
            if state is not None and part.name not in state["done"]:
                state["done"].append(part.name)
    finally:  # an error is shown without a bar or a Stop button that would do nothing
        shown.clear()
    if failed and not results:
        raise failed[0][1]
    for name, err in failed:
        st.error(plain(without_server_paths(f"{name}: {err}")), icon=":material/error:")
    if state is not None and state["stopped"] and len(todo) < len(parts):
        if words is not None:
            st.info(f"Stopped: {len(todo)} of {len(parts)} {words.what} {words.done}.", icon=":material/stop_circle:")
        else:
            st.info(f"Stopped before it finished: {_lower(parts[0].name)}.", icon=":material/stop_circle:")
        st.button(words.rest if words else "Compute it after all", key=f"_{'go_on' if words else 'again'}_{cost.kind}",
                  on_click=_go_on, args=(cost.kind,))
    return results


def was_stopped(kind: str, key: Hashable) -> bool:
    """Whether the one computation of `key` was stopped before it finished (for a page that
    computes only when a button is pressed, and says so itself)."""
    state = shell().each.get(kind)
    return state is not None and state["stopped"] and state["request"] == (key,)


def is_kept(part: Part) -> bool:
    """Whether `part`'s result is kept for every visitor: `run` gives it at once, with no turn."""
    results, lock = store()
    with lock:
        return part.key in results


def queue_words(ahead: int, yours: int = 0) -> str:
    """What a visitor waiting for a lane is told: `ahead` computations before its own, `yours` of them its other tabs'."""
    if not yours:
        whose = f"{plural(ahead, 'computation')} of other visitors"
    elif yours == ahead:
        whose = f"{plural(ahead, 'computation')} asked in your other tabs"
    else:
        whose = f"{plural(ahead, 'computation')}, {yours} of them asked in your other tabs,"
    return f"Waiting for {whose} to finish: this server computes one thing at a time, each visitor's in turn"


@contextmanager
def quick_turn(part: Part) -> Iterator[None]:
    """Hold the quick lane for a moment's work (`part`: what it is, in the words a wait is told in),
    on one thread, whoever waits told as the runner tells them: what app/shell/batches.py computes
    many visitors' typed pairs in."""
    shown = Shown(None, None, [part], QUICK)
    try:
        shown.begin(0, part)
        with QUICK.turn(shown.waiting, visitor()):
            shown.turn_came()
            from albert_lab.devices import one_thread  # torch: only a lane's computation needs it

            with one_thread():  # a moment's work: one thread, never a team held up by the cores' other users
                yield
    finally:
        shown.clear()


def visitor() -> str:
    """Who asks, for the lanes' turns: this browser (its owner token's hash, which its tabs share), so that
    one visitor's tabs take turns with other visitors rather than a turn each."""
    return owner.digest()


def _one(part: Part[T], keep: bool, shown: Shown, i: int) -> T:
    """The part's kept result, or the one computed now (by this visitor, or by another who asked first)."""
    if keep and (found := kept_result(part.key)) is not MISSING:
        return found
    results, lock = store()
    shown.begin(i, part)
    kept = join_or_claim(part.key, results, lock, shown.shared) if keep else MISSING
    if kept is not MISSING:
        return copy.deepcopy(kept)
    result: Any = MISSING
    try:
        with shown.lane.turn(shown.waiting, visitor()):
            shown.turn_came()
            result = part.work(shown.progress)
    finally:
        if keep:
            release(part.key, result, results, lock)
    shown.learn(part.units)
    return copy.deepcopy(result) if keep else result


class Shown:
    """What the page shows while parts compute: with a cost, a bar with the time left and a Stop
    button; without, a note while the part waits its turn. Drawn from the first part not kept on
    (kept results draw nothing, not even an empty placeholder)."""

    def __init__(self, cost: Cost | None, each: Each | None, todo: Sequence[Part], lane: Turns) -> None:
        self.cost, self.each, self.todo, self.lane = cost, each, todo, lane  # each: the parts one at a time, or None
        self.slot = self.stop = None
        self.i, self.label, self.guess, self.began, self.drawn = 0, "", 0.0, time.perf_counter(), 0.0
        self.script_thread = threading.get_ident()

    def begin(self, i: int, part: Part) -> None:
        self.i, self.began = i, time.perf_counter()
        if self.slot is None:
            self.slot = st.empty()
        if self.cost is None:
            if self.lane.busy() and not self.lane.holds():  # said at once: the part waits
                self.waiting(self.lane.busy(), self.lane.busy(visitor()))
            return
        self.label = f"{part.name} ({i + 1} of {len(self.todo)})" if self.each else part.name
        self.guess = pace.estimate(self.cost.kind, part.units, self.cost.seconds)
        left = pace.estimate(self.cost.kind, sum(p.units for p in self.todo[i:]), self.cost.seconds)
        self.slot.progress(i / len(self.todo), text=f"{self.label}: about {fmt_duration(left)} left")
        if self.stop is None:
            words = (f"Stops what is being computed at its next step, or when it ends; the {self.each.what} finished are drawn"
                     if self.each else "Stops the computation at its next step; nothing is lost but the time spent")
            self.stop = st.empty()
            self.stop.button("Stop", key=f"_stop_{self.cost.kind}", icon=":material/stop:", on_click=_stop,
                             args=(self.cost.kind,), help=words)

    def say(self, fraction: float, words: str, note: str | None = None) -> None:
        """`words` after the part's name on the bar; without a bar, `note` in a box."""
        if self.cost is not None:
            self.slot.progress((self.i + min(max(fraction, 0.0), 1.0)) / len(self.todo), text=f"{self.label}: {words}")
        elif note is not None:
            self.slot.info(note, icon=":material/hourglass_top:")

    def waiting(self, ahead: int, yours: int = 0) -> None:
        self.say(0.0, _lower(queue_words(ahead, yours)), queue_words(ahead, yours))

    def shared(self) -> None:
        self.say(0.0, "being computed for another visitor; it is shown here when done",
                 "Being computed for another visitor; it is shown here when done")

    def turn_came(self) -> None:
        self.after_quick(0.0, "starting")  # a computation's first step too: turns passed between several start them
        self.began, self.drawn = time.perf_counter(), 0.0  # the time left and the pace learned count from here; its first report drawn
        if self.cost is None:
            self.slot.empty()

    def after_quick(self, fraction: float, doing: str) -> None:
        """In the heavy lane, before a step: the visitors' moments first (they wait on the page for
        them), at most YIELD_SECONDS."""
        if self.lane is TURNS and QUICK.busy():
            self.say(fraction, f"{doing}; paused while typed pairs are scored")
            QUICK.wait_idle(YIELD_SECONDS)

    def progress(self, fraction: float, doing: str) -> None:
        if threading.get_ident() != self.script_thread:  # e.g. a GPU backward's own thread: no page to draw on
            return
        passed = self.lane.pass_turn(lambda ahead, yours: self.say(
            fraction, f"{doing}; paused, {_lower(queue_words(ahead, yours))}", queue_words(ahead, yours)))
        self.after_quick(fraction, doing)
        if self.cost is None:
            if passed:
                self.slot.empty()
            return
        if (now := time.perf_counter()) - self.drawn < DRAW_EVERY and not passed:  # a net's steps come every millisecond
            return
        self.drawn = now
        elapsed = time.perf_counter() - self.began
        left = elapsed * (1 - fraction) / fraction if fraction >= 0.1 else max(self.guess - elapsed, 0.0)
        later = sum(p.units for p in self.todo[self.i + 1:])
        left += pace.estimate(self.cost.kind, later, self.cost.seconds) if later else 0.0
        self.say(fraction, f"{doing}; {'under a second left' if left < 1 else f'about {fmt_duration(left)} left'}")

    def learn(self, units: float) -> None:
        if self.cost is not None and (seconds := time.perf_counter() - self.began) > 0.5:  # a blink teaches little about the pace
            pace.learn(self.cost.kind, seconds, units)

    def clear(self) -> None:
        for placeholder in (self.slot, self.stop):
            if placeholder is not None:
                placeholder.empty()


def _state(kind: str, request: tuple, asked: bool) -> dict[str, Any]:
    """This session's Stop of `kind`: the request it holds for, the parts done, whether stopped."""
    state = shell().each.setdefault(kind, {"request": None, "done": [], "stopped": False})
    if state["request"] != request or asked:
        state.update(request=request, done=[], stopped=False)
    return state


def _stop(kind: str) -> None:
    shell().each[kind]["stopped"] = True


def _go_on(kind: str) -> None:
    shell().each[kind]["stopped"] = False


def _lower(words: str) -> str:
    return words[:1].lower() + words[1:]


def _frozen(value: Any) -> Hashable:
    """A hashable stand-in for arguments: lists as tuples, dicts as sorted items."""
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _frozen(v)) for k, v in value.items()))
    return value
