"""Which training runs this browser started, across reloads.

Each browser gets a random owner token, kept in a cookie that the page sets on its first
visit (Streamlit reads cookies, it cannot set them) and sends with every later connection:
a reload or a second tab of the same browser keeps the Cancel button of its runs, while
other browsers (a class sharing one server) see them read-only. The server keeps only a
hash of the token per run, in <runs>/.owners/<run id>, so a restarted app still knows.
"""

from __future__ import annotations

import hashlib
import re
import secrets

import streamlit as st

from albert_lab.paths import runs_dir
from albert_lab.training.queue import owner_of, record_owner
from app.shell.state import shell

COOKIE = "albert_lab_owner"
_TOKEN = re.compile(r"[A-Za-z0-9_-]{22,64}")  # what secrets.token_urlsafe writes; anything else is ignored


def _cookie() -> str | None:
    value = st.context.cookies.get(COOKIE)
    return value if isinstance(value, str) and _TOKEN.fullmatch(value) else None


def token() -> str:
    """This browser's owner token: its cookie's, else a new one for this session."""
    found = _cookie()
    if found:
        shell().owner_token = found
        return found
    if shell().owner_token is None:
        shell().owner_token = secrets.token_urlsafe(24)
    return shell().owner_token


def digest() -> str:
    """What the server keeps of this browser's token (the owner tag of the runs it starts):
    its hash, so that the records under <runs>/.owners/ never hold a token."""
    return hashlib.sha256(token().encode()).hexdigest()


def address() -> str | None:
    """What the server keeps of the visitor's network address (a hash), for the runs budget per
    address, which no dropped cookie escapes; None where Streamlit does not know it (AppTest)."""
    ip = st.context.ip_address
    return hashlib.sha256(f"address|{ip}".encode()).hexdigest() if isinstance(ip, str) and ip else None


def claim(run_id: str) -> None:
    """This browser started `run_id` (jobs.start_run recorded its owner tag already; this
    also keeps it in the session)."""
    shell().my_runs.add(run_id)
    if owner_of(runs_dir(), run_id) is None:
        record_owner(runs_dir(), run_id, digest())


def owns(run_id: str) -> bool:
    return run_id in shell().my_runs or owner_of(runs_dir(), run_id) == digest()


def remember() -> None:
    """In every script run of a session without the cookie: the browser stores this session's
    token, so the next visit (a reload) owns what this one starts. Every run, not once: a click
    while the first run was still arriving made the browser drop that run's elements, the cookie's
    script among them, and no later run sent it again (the cookie never came)."""
    if _cookie():
        return
    cookie = f"{COOKIE}={token()}; path=/; max-age=31536000; SameSite=Strict"
    with st.sidebar:
        st.html(f"<script>document.cookie = {cookie!r};</script>", unsafe_allow_javascript=True)
