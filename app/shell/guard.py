"""The error guard: what a user can cause ends as a message in the page, anything else as
a message with the traceback folded away for a bug report; never a bare traceback.

Under ALBERT_LAB_STRICT=1 (the test suite sets it) anything else is raised again after its
message: the page and the sidebar run inside a guard, so without it a bug would be only a
message and a test that looks for exceptions would not see it."""

from __future__ import annotations

import os
import re
import traceback
from collections.abc import Iterator
from contextlib import contextmanager

import streamlit as st

from albert_lab.errors import AlbertLabError
from app.shell.text import plain


@contextmanager
def guard(what: str = "", labels: dict[str, str] | None = None) -> Iterator[None]:
    """Show errors a user can cause as a message in the page, never a traceback; the
    rest of the page and the session stay usable. `labels`: the page's names for the
    library's field names ('num_groups' -> 'Groups (N)'), so the message names what the
    user sees."""
    try:
        yield
    except AlbertLabError as err:
        text = without_server_paths(str(err))
        for field, label in (labels or {}).items():
            text = re.sub(rf"\b{field}\b", label, text)
        st.error(f"{what + ': ' if what else ''}{plain(text)}", icon=":material/error:")  # it may quote a visitor's text
    except Exception as err:
        st.error(f"Something went wrong{' while ' + what if what else ''}: {type(err).__name__}: "
                 f"{plain(without_server_paths(str(err)))}",
                 icon=":material/bug_report:")
        with st.expander("Details for a bug report"):
            st.code(traceback.format_exc())
        if os.environ.get("ALBERT_LAB_STRICT") == "1":
            raise


def without_server_paths(text: str) -> str:
    """`text` with the server's own folders named as a visitor knows them: a path inside the project
    relative to it (`checkpoints/x`), one inside a folder the server lists by that folder's name; a
    library message names the absolute path it was given ('/srv/lab/runs/x has no config.json')."""
    from albert_lab.errors import AlbertLabError
    from albert_lab.paths import PROJECT_ROOT, allowed_roots

    try:
        roots = allowed_roots()
    except AlbertLabError:  # a listed folder that is no folder: its own message says so
        roots = []
    named = {str(root): (root.relative_to(PROJECT_ROOT).as_posix() if root.is_relative_to(PROJECT_ROOT) else root.name)
             for root in roots} | {str(PROJECT_ROOT) + os.sep: ""}
    for path in sorted(named, key=len, reverse=True):  # the longest first: a root inside the project before the project
        text = text.replace(path, named[path])
    return text
