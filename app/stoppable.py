"""A long computation over several checkpoints, one at a time, behind a progress bar that
gives the time left and a Stop button (a first visit on a busy machine took 15-30 s with
nothing to stop it). Each checkpoint's result is cached by the page, so a stop keeps the
ones finished; the page then draws them and offers to go on."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import streamlit as st

from app import ui
from app.text import fmt_duration


def each_checkpoint(kind: str, request: Any, names: Sequence[str], run_one: Callable[[str], Any],
                    guess_s: float) -> tuple[list[Any], bool]:
    """`run_one(name)` for each checkpoint, or only those finished before a Stop of this
    same `request` (the page's inputs); returns (results, stopped). The bar appears only
    when a checkpoint takes long enough to see it (cached ones return at once)."""
    state = st.session_state.setdefault(f"_each_{kind}", {"request": None, "done": [], "stopped": False})
    if state["request"] != request:
        state.update(request=request, done=[], stopped=False)
    todo = [n for n in names if n in state["done"]] if state["stopped"] else list(names)
    bar, stop, results, shown = st.empty(), st.empty(), [], False
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
    bar.empty()
    stop.empty()
    if state["stopped"] and len(todo) < len(names):
        st.info(f"Stopped: {len(todo)} of {len(names)} checkpoints computed.", icon=":material/stop_circle:")
        st.button("Compute the others", key=f"_go_on_{kind}", on_click=_go_on, args=(kind,))
    return results, state["stopped"] and len(todo) < len(names)


def _stop(kind: str) -> None:
    st.session_state[f"_each_{kind}"]["stopped"] = True


def _go_on(kind: str) -> None:
    st.session_state[f"_each_{kind}"]["stopped"] = False
