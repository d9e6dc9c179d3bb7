"""Training the Depth lab's networks behind progress bars: the MLPs on the disc (shipped,
cached, or trained now) and the four VGG nets, each with the time left at this machine's pace
and a Stop that keeps the nets already trained."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from functools import partial

import pandas as pd
import streamlit as st

from albert_lab.analysis import depth as depth_lib  # called through the module: tests stand in for its trainers
from albert_lab.analysis.depth import VGG_NETS, DepthConfig, describe, vgg_label
from albert_lab.analysis.registry import Cost
from app.rooms.depth_lab import cache as depth_cache
from app.rooms.depth_lab.cache import VGG_RECORD_EVERY
from app.shell import pace, runner
from app.shell.costs import DISC_COST, VGG_COST, disc_units, vgg_units
from app.shell.registry import keys
from app.shell.state import kept
from app.shell.text import fmt_duration

key = keys(__file__)  # this room's widget keys


@dataclass
class DepthLabState:
    """What the Depth lab keeps between runs (app.shell.state.kept)."""

    request: str | None = None  # the MLP settings last trained for
    stopped: bool = False  # their training was stopped: nothing more is trained until asked
    vgg_done: bool = False  # the VGG comparison was asked for
    vgg_stopped: bool = False  # and stopped: the nets trained so far are shown
    heat_for: str | None = None  # the results the gradient-heatmap choice was made for

_DISC_TRAINED: OrderedDict[DepthConfig, tuple[pd.DataFrame, pd.DataFrame]] = OrderedDict()  # this process's, newest last


class _Pace:
    """The bar of a training of `total` units (app.shell.costs: disc_units, vgg_units) and the time it has
    left, at this machine's pace measured from step 5 on (loading data and the first steps are
    slower), before that at the cost's learned or measured seconds per unit. The bar moves at
    most twice a second: a bar update is where a Stop interrupts the script. Each step first
    calls `between` (runner.heavy_turn's: the heavy lane's turn passed when others wait)."""

    def __init__(self, bar, total: float, cost: Cost) -> None:
        self.bar, self.total, self.cost = bar, total, cost
        self.shown = self.since = self.fraction = 0.0
        self.done = self.since_units = 0.0  # units of the networks finished; units when the pace was first measured
        self.between: Callable[[], None] = lambda: None

    def say(self, words: str) -> None:
        """`words` on the bar, where it stands (what the training waits for)."""
        self.bar.progress(self.fraction, text=words)

    def report(self, step: int, per_step: float, label: str, steps: int) -> None:
        self.between()
        now = time.perf_counter()
        if now - self.shown < 0.5 and step != 1:
            return
        self.shown, units = now, self.done + step * per_step
        if not self.since and step >= 5:
            self.since, self.since_units = now, units
        measured = self.since and units > self.since_units
        left = ((now - self.since) / (units - self.since_units) * (self.total - units) if measured
                else pace.estimate(self.cost.kind, self.total - units, self.cost.seconds))
        self.fraction = min(1.0, units / self.total)
        self.bar.progress(self.fraction, text=f"Training {label}: step {step} of {steps}, about "
                          f"{fmt_duration(left)} left at this machine's pace")


def train_all(configs: list[DepthConfig]) -> tuple[list[tuple[pd.DataFrame, pd.DataFrame]], bool]:
    """Each configuration's (history, flow): shipped, trained earlier in this process, or
    trained now behind a progress bar (which network, its step, the time left at this
    machine's measured pace) and a Stop button; returns (results, stopped). A Stop ends
    training at the next bar update; the networks already trained are kept and drawn, and
    nothing is trained again for these settings until the user asks."""
    found = {cfg: depth_cache.precomputed(cfg) or _DISC_TRAINED.get(cfg) for cfg in configs}
    state = kept(DepthLabState)
    if state.request != repr(configs):
        state.request, state.stopped = repr(configs), False
    todo = [] if state.stopped else [cfg for cfg in configs if found[cfg] is None]
    if todo:
        bar, stop = st.progress(0.0), st.empty()
        timer = _Pace(bar, sum(disc_units(c) for c in todo), DISC_COST)
        stop.button("Stop training", key=key("stop"), icon=":material/stop:", on_click=_stop_disc,
                    help="Stops at the next step; the networks already trained are kept and drawn")
        try:
            with runner.heavy_turn(timer.say) as timer.between, pace.one_thread():  # one training at a time, visitors in turn
                for i, cfg in enumerate(todo):
                    progress = partial(timer.report, per_step=disc_units(cfg) / cfg.steps, steps=cfg.steps,
                                       label=f"{describe(cfg)} ({i + 1} of {len(todo)})")
                    started = time.perf_counter()
                    found[cfg] = depth_lib.train_disc(cfg, progress=progress)
                    pace.learn(DISC_COST.kind, time.perf_counter() - started, disc_units(cfg))
                    timer.done += disc_units(cfg)
                    _DISC_TRAINED[cfg] = found[cfg]
                    while len(_DISC_TRAINED) > 64:  # the last settings tried, a few MB at most
                        _DISC_TRAINED.popitem(last=False)
        finally:  # an error is shown without a bar or a Stop that would do nothing
            bar.empty()
            stop.empty()
    results = [(found[cfg][0].copy(), found[cfg][1].copy()) for cfg in configs if found[cfg] is not None]
    return results, len(results) < len(configs)


def _stop_disc() -> None:
    kept(DepthLabState).stopped = True


def go_on_disc() -> None:
    kept(DepthLabState).stopped = False


def vgg_nets(steps: int, lr: float) -> list[tuple[pd.DataFrame, pd.DataFrame]]:
    """The four nets' (history, flow): shipped, kept, or trained now behind a progress bar
    that gives the time left at this machine's measured pace, and a Stop button (a click
    interrupts the run at the next update; the nets already trained are kept)."""
    todo = [(d, bn) for d, bn in VGG_NETS if depth_cache.vgg_result(d, bn, steps, lr) is None]
    total, start = vgg_units(steps, todo), time.perf_counter()
    bar, stop = (st.progress(0.0), st.empty()) if todo else (None, None)
    timer = _Pace(bar, total, VGG_COST)
    if todo:
        stop.button("Stop training", key=key("vgg_stop"), icon=":material/stop:", on_click=stop_vgg,
                  help="Stops at the next step; the nets already trained are kept and drawn")
    with runner.heavy_turn(timer.say) if todo else nullcontext(timer.between) as timer.between, pace.one_thread():
        for i, (depth, batchnorm) in enumerate(todo):
            progress = partial(timer.report, per_step=vgg_units(1, [(depth, batchnorm)]), steps=steps,
                               label=f"{vgg_label(depth, batchnorm)} ({i + 1} of {len(todo)})")
            result = depth_lib.train_vgg(depth, batchnorm, steps, lr, record_every=VGG_RECORD_EVERY, progress=progress)
            depth_cache.keep_vgg(depth, batchnorm, steps, lr, result)
            timer.done += vgg_units(steps, [(depth, batchnorm)])
    if todo:
        pace.learn(VGG_COST.kind, time.perf_counter() - start, total)
        bar.empty()
        stop.empty()
    return [r for r in (depth_cache.vgg_result(d, bn, steps, lr) for d, bn in VGG_NETS) if r is not None]


def stop_vgg() -> None:
    state = kept(DepthLabState)
    state.vgg_done, state.vgg_stopped = False, True
