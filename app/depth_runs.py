"""Training the Depth lab's networks behind progress bars: the MLPs on the disc (shipped,
cached, or trained now) and the four VGG nets (with the time left at this machine's pace
and a Stop that keeps the nets already trained)."""

from __future__ import annotations

import time

import pandas as pd
import streamlit as st

from albert_lab.analysis import depth as depth_lib  # called through the module: tests stand in for its trainers
from albert_lab.analysis.depth import VGG_NETS, DepthConfig, describe, vgg_label
from app import depth_cache, ui
from app.depth_cache import VGG_RECORD_EVERY
from app.text import fmt_duration


@st.cache_data(show_spinner=False, max_entries=64)
def run_disc(cfg: DepthConfig):
    return depth_lib.train_disc(cfg)


_TRAINED: set[DepthConfig] = set()  # trained in this process: in run_disc's cache, no progress bar needed


def train_all(configs: list[DepthConfig]) -> list[tuple[pd.DataFrame, pd.DataFrame]]:
    """Each configuration's (history, flow): shipped, cached, or trained now behind a
    progress bar that says which network and about how long is left."""
    results: dict[DepthConfig, tuple] = {cfg: depth_cache.precomputed(cfg) for cfg in configs}
    todo = [cfg for cfg in configs if results[cfg] is None and cfg not in _TRAINED]
    units = {cfg: cfg.steps * (cfg.depth + 2) for cfg in configs}  # work ~ steps x layers (narrow nets: overhead)
    bar = st.progress(0.0) if todo else None
    for i, cfg in enumerate(todo):
        left = ui.estimate("depth", sum(units[c] for c in todo[i:]), 5e-4)
        bar.progress(i / len(todo), text=f"Training {describe(cfg)} ({i + 1} of {len(todo)}): about {fmt_duration(left)} left")
        start = time.perf_counter()
        results[cfg] = run_disc(cfg)
        ui.learn("depth", time.perf_counter() - start, units[cfg])
        _TRAINED.add(cfg)
    if bar is not None:
        bar.empty()
    return [results[cfg] if results[cfg] is not None else run_disc(cfg) for cfg in configs]


VGG_SECONDS_PER_UNIT = 5e-4  # one SGD step of one weight layer, idle 2-core CPU: the four nets' 300 steps in ~14 s


def vgg_nets(steps: int, lr: float) -> list[tuple[pd.DataFrame, pd.DataFrame]]:
    """The four nets' (history, flow): shipped, kept, or trained now behind a progress bar
    that gives the time left at this machine's measured pace, and a Stop button (a click
    interrupts the run at the next update; the nets already trained are kept)."""
    todo = [(d, bn) for d, bn in VGG_NETS if depth_cache.vgg_result(d, bn, steps, lr) is None]
    total, start = sum(steps * d for d, _ in todo), time.perf_counter()
    # when the bar last moved; units (steps x layers) of the nets finished; the clock and units when
    # the pace is first measured (step 5: loading the digits and the first steps are slower)
    pace = dict(shown=0.0, done=0, since=0.0, since_units=0)
    bar, stop = (st.progress(0.0), st.empty()) if todo else (None, None)
    if todo:
        stop.button("Stop training", key="vgg_stop", icon=":material/stop:", on_click=stop_vgg,
                  help="Stops at the next step; the nets already trained are kept and drawn")
    for i, (depth, batchnorm) in enumerate(todo):
        def progress(step: int, depth: int = depth, label: str = f"{vgg_label(depth, batchnorm)} ({i + 1} of {len(todo)})"
                     ) -> None:
            now = time.perf_counter()
            if now - pace["shown"] >= 0.5 or step == 1:  # a bar update is where Stop can interrupt
                pace["shown"], units = now, pace["done"] + step * depth
                if not pace["since"] and step >= 5:
                    pace["since"], pace["since_units"] = now, units
                measured = pace["since"] and units > pace["since_units"]  # this machine's own pace, now
                left = ((now - pace["since"]) / (units - pace["since_units"]) * (total - units) if measured
                        else ui.estimate("vgg", total - units, VGG_SECONDS_PER_UNIT))
                bar.progress(units / total, text=f"Training {label}: step {step} of {steps}, "
                             f"about {fmt_duration(left)} left at this machine's pace")

        result = depth_lib.train_vgg(depth, batchnorm, steps, lr, record_every=VGG_RECORD_EVERY, progress=progress)
        depth_cache.keep_vgg(depth, batchnorm, steps, lr, result)
        pace["done"] += steps * depth
    if todo:
        ui.learn("vgg", time.perf_counter() - start, total)
        bar.empty()
        stop.empty()
    return [r for r in (depth_cache.vgg_result(d, bn, steps, lr) for d, bn in VGG_NETS) if r is not None]


def stop_vgg() -> None:
    st.session_state["vgg_done"], st.session_state["vgg_stopped"] = False, True
