"""The results kept in this server process for every visitor, under each computation's key (the
analysis, the checkpoints and their files' stamps, every input: app/shell/runner.py's Part), the
least recently used out beyond KEPT; and a result many visitors ask for at once computed by the
first while the others wait for it (join_or_claim, release)."""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

import streamlit as st

KEPT = 96  # finished results kept in this server process, least recently used first out
MISSING = object()


_COMPUTING: dict[Hashable, threading.Event] = {}  # keys being computed now, with lock; set when done or given up


def join_or_claim(key: Hashable, results: OrderedDict, lock: threading.Lock, tell: Callable[[], None]) -> Any:
    """The kept result of `key`, waiting while another visitor computes it (twenty first
    visits of a page, one computation), or MISSING: then this visitor computes it and
    `release`s it after. `tell` draws the wait every half second (where a visitor who
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


def release(key: Hashable, result: Any, results: OrderedDict, lock: threading.Lock) -> None:
    """Keep a finished result (MISSING: stopped or failed, a waiting visitor computes it) and wake who waits."""
    with lock:
        if result is not MISSING:
            _store(results, key, result)
        _COMPUTING.pop(key).set()


def kept_result(key: Hashable) -> Any:
    """A copy of the result kept under `key` for every visitor, or MISSING."""
    results, lock = store()
    with lock:
        if key in results:
            results.move_to_end(key)
            return copy.deepcopy(results[key])
    return MISSING


def keep_result(key: Hashable, result: Any) -> None:
    """Keep `result` under `key` for every visitor (the least recently used out beyond KEPT)."""
    results, lock = store()
    with lock:
        _store(results, key, result)


def _store(results: OrderedDict, key: Hashable, result: Any) -> None:
    results[key] = result
    while len(results) > KEPT:
        results.popitem(last=False)


@st.cache_resource(show_spinner=False)
def store() -> tuple[OrderedDict, threading.Lock]:
    """This server process's kept results and their lock."""
    return OrderedDict(), threading.Lock()
