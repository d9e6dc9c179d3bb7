"""What the app keeps between the runs of a page's script: the one module that touches
Streamlit's session state. Three kinds, each typed:

- the shell's own values: `shell()`, one `Shell` per browser session (its fields and their
  defaults say what is kept);
- a room's values: `kept(cls)`, one dataclass per room (declared in the room), one instance
  per browser session under a key derived from the room's name (`room_key`);
- widget values, which Streamlit keeps under each widget's key (a room's derived from its name
  and the option's, app.shell.registry.Room.key; app.shell.links.Control declares a page's linked
  ones): `widget`, `set_widget`, `has_widget`, `default_widget`.

Nothing else reads or writes session-state strings (tests/test_layering.py checks)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypeVar

import streamlit as st

T = TypeVar("T")
SHELL = "_shell"  # the session-state key of the shell's values
ROOMS = "app.rooms."


@dataclass
class Shell:
    shared: bool = False  # this run's page wrote its link (app.shell.links.share); main.py shares otherwise
    shared_now: dict[str, str] = field(default_factory=dict)  # what this run has put in the link so far (links.publish)
    url_pending: dict[str, str] = field(default_factory=dict)  # this run's own link values, applied once published
    selected: list[tuple[str, str]] = field(default_factory=list)  # the sidebar's picks: (name, source)
    extra_sources: dict[str, str] = field(default_factory=dict)  # folders and hub ids added in the sidebar
    casings: dict[str, str] = field(default_factory=dict)  # added releases' casing given in the sidebar: name -> 'cased'/'uncased'
    pending_pick: tuple[list[str], str] | None = None  # "Add" on the last run: the picks to set and the toast
    bf16_refused: str | None = None  # why bfloat16 went back to float32, said once
    url_applied: dict[str, str] = field(default_factory=dict)  # the link's values already given to widgets
    kept_controls: set[str] = field(default_factory=set)  # widget keys whose values outlive runs that do not draw them
    owner_token: str | None = None  # this browser's owner token (app.shell.owner)
    my_runs: set[str] = field(default_factory=set)  # the runs this session started
    plotly_prefetched: bool = False
    each: dict[str, dict[str, Any]] = field(default_factory=dict)  # app.shell.runner's Stops, by kind: request, done, stopped


def shell() -> Shell:
    """This session's shell values, made with their defaults on first use (not made again on every read:
    a page's run reads them tens of times)."""
    try:
        return st.session_state[SHELL]
    except KeyError:
        return st.session_state.setdefault(SHELL, Shell())


def room_key(stem: str) -> str:
    """The session-state key of room `stem`'s kept values."""
    return f"room:{stem}"


def kept(cls: type[T]) -> T:
    """This session's instance of room state `cls`, made with its defaults on first use,
    kept under the key of the room whose folder (app/rooms/<stem>/) declares `cls`."""
    if not cls.__module__.startswith(ROOMS):
        raise TypeError(f"{cls.__qualname__} is declared in {cls.__module__}, not in a room's module (app.rooms.<stem>)")
    stem = cls.__module__.removeprefix(ROOMS).split(".")[0]
    value = st.session_state.setdefault(room_key(stem), cls())
    if not isinstance(value, cls):  # one state class per room
        raise TypeError(f"room {stem} keeps a {type(value).__qualname__}, not a {cls.__qualname__}")
    return value


def widget(key: str, default: Any = None) -> Any:
    """The value of the widget `key` (kept by Streamlit), else `default`."""
    return st.session_state.get(key, default)


def set_widget(key: str, value: Any) -> None:
    """Give the widget `key` its value (before it is drawn in this run)."""
    st.session_state[key] = value


def has_widget(key: str) -> bool:
    return key in st.session_state


def default_widget(key: str, value: Any) -> Any:
    """The widget's value, given `value` first when it has none."""
    return st.session_state.setdefault(key, value)
