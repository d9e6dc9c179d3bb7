"""What a page keeps between the runs of its script, typed: one dataclass per page (its
fields and their defaults say what is kept), one instance per browser session, under the
class's name. A page reads and writes attributes, never session-state strings; widgets keep
their own keys (app.shell.links.Control declares them)."""

from __future__ import annotations

from typing import TypeVar

import streamlit as st

T = TypeVar("T")


def kept(cls: type[T]) -> T:
    """This session's instance of `cls`, made with its defaults on first use."""
    return st.session_state.setdefault(cls.__name__, cls())
