"""Figures built once for every visitor of this server process: a room draws the library's figures
(albert_lab.figures) through `shared(module)`, whose figure functions (`@built_once`) return the figure
built before from equal inputs (the same kept results make the same
figure for each of twenty visitors). With twenty visitors, building them again, plotly validating
every property of every trace, was most of what the pages' scripts did with the GIL held (py-spy
--gil during benchmarks/bench_class.py), and a page waits for every visitor's script before it.

Inputs are told equal by their content: a frame by its pickle (columns, dtypes, index and every
value), an array by its bytes, a number or string by itself, containers by their items, a theme (a
frozen dataclass) by its fields. An input of any other kind builds afresh. The figure returned is
shared (`is_shared` says so): it is drawn (app.shell.draw.chart, which fits it to its column once
per width and sends the dict made then) and never changed by its callers."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import pickle
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from types import ModuleType
from typing import Any, TypeVar

import numpy as np
import pandas as pd

F = TypeVar("F", bound=Callable[..., Any])
KEPT = 256  # figures kept, least recently drawn first out: a page draws a few per selection
_BUILT: OrderedDict[Hashable, Any] = OrderedDict()
_LOCK = threading.Lock()


class _Unknown(Exception):
    """An input whose content this module cannot fingerprint."""


def built_once(build: F) -> F:
    @functools.wraps(build)
    def shared(*args: Any, **kwargs: Any) -> Any:
        try:
            key = (build, fingerprint(args), fingerprint(kwargs))
        except _Unknown:
            return build(*args, **kwargs)
        with _LOCK:
            if key in _BUILT:
                _BUILT.move_to_end(key)
                return _BUILT[key]
        figure = build(*args, **kwargs)  # outside the lock: two visitors may build it at once, both the same
        _mark_shared(figure)
        with _LOCK:
            figure = _BUILT.setdefault(key, figure)
            _BUILT.move_to_end(key)
            while len(_BUILT) > KEPT:
                _BUILT.popitem(last=False)
        return figure

    return shared  # type: ignore[return-value]


def _mark_shared(built: Any) -> None:
    """Mark the plotly figures a builder returned (one, or in a tuple, list or dict) as shared."""
    if isinstance(built, (list, tuple)):
        for value in built:
            _mark_shared(value)
    elif isinstance(built, dict):
        for value in built.values():
            _mark_shared(value)
    elif type(built).__module__.startswith("plotly."):
        built._built_once = True  # plotly lets a figure hold attributes of its own whose names start with '_'


def is_shared(figure: Any) -> bool:
    """Whether `figure` is one built once for every visitor (never changed after it was built, but by draw.chart's
    fitting, once per width)."""
    return getattr(figure, "_built_once", False) is True


class shared:  # a function to its users: `figures = shared(oscillation)`
    """A module of the library's figures whose figure functions (those `albert_lab.figures.look.themed` made)
    are built once for every visitor (`built_once`); its other names as they are."""

    def __init__(self, module: ModuleType) -> None:
        self._module, self._built = module, {}

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._module, name)
        if not getattr(value, "themed", False):
            return value
        if name not in self._built:
            self._built[name] = built_once(value)
        return self._built[name]


def fingerprint(value: Any) -> Hashable:
    """A hashable stand-in for `value`'s content; raises _Unknown for a kind it does not know."""
    if value is None or isinstance(value, (bool, int, float, str, bytes)):
        return type(value).__name__, value
    if isinstance(value, (list, tuple)):
        return type(value).__name__, tuple(fingerprint(v) for v in value)
    if isinstance(value, dict):
        return "dict", tuple((fingerprint(k), fingerprint(v)) for k, v in value.items())
    if isinstance(value, (pd.DataFrame, pd.Series)):
        # its pickle holds columns, dtypes, index and every value: equal pickles are equal frames (equal frames
        # pickled apart, a string shared or not, only build again). 0.1 ms for 96 rows where pandas' own hash
        # of every value took 1.2 ms, on every draw of every visitor
        try:
            content = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as err:  # a cell that does not pickle
            raise _Unknown from err
        return type(value).__name__, hashlib.sha256(content).hexdigest()
    if isinstance(value, np.ndarray) and value.dtype != object:
        return "ndarray", value.shape, str(value.dtype), hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest()
    if dataclasses.is_dataclass(value) and not isinstance(value, type) and value.__dataclass_params__.frozen:  # a Theme
        return type(value).__name__, fingerprint(dataclasses.astuple(value))
    raise _Unknown(type(value).__name__)
