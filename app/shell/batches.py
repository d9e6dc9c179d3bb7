"""What many visitors ask at once, computed in one pass: `together` puts an item (one visitor's
typed pair) in the quick lane of app/shell/runner.py, and items of one group asked while another
waits for that lane or is computed are computed with it. Twenty typed pairs asked at once are a
few batches, not twenty turns of the lane one after the other: each pass costs about as much in
torch operations, which take turns with every visitor's Python for the GIL."""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from app.shell.results import MISSING, keep_result, kept_result
from app.shell.runner import Part, quick_turn

T = TypeVar("T")


class _Ask:
    """One visitor's item waiting to be computed together with others'."""

    def __init__(self, item: Any) -> None:
        self.item, self.result, self.error = item, MISSING, None
        self.leads = False  # this visitor takes the lane for the items asked with it
        self.done, self.woken = threading.Event(), threading.Event()  # woken: done, or made the leader


_TOGETHER: dict[Hashable, list[_Ask]] = {}  # group -> the items asked and not yet taken by a pass, with _TOGETHER_LOCK
_TOGETHER_LOCK = threading.Lock()


def together(key: Hashable, group: Hashable, item: Any, many: Callable[[list[Any]], list[T]], name: str) -> T:
    """`many([item])[0]`, kept for every visitor under `key` like the runner's parts, in the quick
    lane; items of one `group` (the same checkpoints) asked while another waits for the lane or is
    computed are computed in the same pass. When a pass fails, each of its items is computed
    alone, so one visitor's error is not another's."""
    if (found := kept_result(key)) is not MISSING:
        return found
    ask = _Ask(item)
    with _TOGETHER_LOCK:
        asks = _TOGETHER.setdefault(group, [])
        asks.append(ask)
        ask.leads = len(asks) == 1  # the first asker takes the lane for everyone asking before its turn comes
    while not ask.done.is_set():
        if ask.leads:
            _lead(ask, group, many, Part(name, key, lambda _: None))
        else:
            ask.woken.wait(0.5)
            ask.woken.clear()
    if ask.error is not None:
        raise ask.error
    keep_result(key, ask.result)
    return copy.deepcopy(ask.result)


def _lead(ask: _Ask, group: Hashable, many: Callable[[list[Any]], list[Any]], part: Part) -> None:
    """Take the quick lane and compute every item of `group` asked until then. A leader whose
    visitor leaves while waiting for the lane hands the lead to the next item asked."""
    taken: list[_Ask] = []
    try:
        with quick_turn(part):
            with _TOGETHER_LOCK:
                taken = _TOGETHER.pop(group)
            _compute_together(taken, many)
    except BaseException:
        if not taken:
            with _TOGETHER_LOCK:
                asks = _TOGETHER.get(group, [])
                if ask in asks:
                    asks.remove(ask)
                if asks:
                    asks[0].leads = True
                    asks[0].woken.set()
                else:
                    _TOGETHER.pop(group, None)
        raise


def _compute_together(asks: list[_Ask], many: Callable[[list[Any]], list[Any]]) -> None:
    """Each ask's result or error, then each is told."""
    try:
        try:
            for ask, result in zip(asks, many([a.item for a in asks]), strict=True):
                ask.result = result
        except Exception:
            if len(asks) == 1:
                raise
            for ask in asks:  # each alone: the error is the one whose item caused it
                try:
                    [ask.result] = many([ask.item])
                except Exception as err:  # raised in the script of the visitor who asked
                    ask.error = err
    except Exception as err:  # the one item's error, raised in its visitor's script
        asks[0].error = err
    finally:
        for ask in asks:
            ask.done.set()
            ask.woken.set()
