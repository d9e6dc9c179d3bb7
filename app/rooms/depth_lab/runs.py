"""The Depth lab's networks: the MLPs on the disc and the four VGG nets, each shipped
(app/rooms/depth_lab/default.json) or trained as a part of the one runner (app/shell/runner.py):
in this visitor's turn, behind its bar with the time left and its Stop, which keeps the nets
already trained; a net trained is kept for every visitor."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pandas as pd

from albert_lab.analysis import depth as depth_lib  # called through the module: tests stand in for its trainers
from albert_lab.analysis.depth import VGG_NETS, DepthConfig, describe, vgg_label
from app.rooms.depth_lab import cache as depth_cache
from app.rooms.depth_lab.cache import VGG_RECORD_EVERY
from app.shell import pace, runner
from app.shell.costs import DISC_COST, VGG_COST, disc_units, vgg_units
from app.shell.runner import Each, Part

if TYPE_CHECKING:
    from albert_lab.analysis.common import Progress

Trained = tuple[pd.DataFrame, pd.DataFrame]  # a net's (history, gradient flow)
NETWORKS = Each("networks", "trained for these settings", "Train the others")
NETS = Each("nets", "trained for these settings", "Train the others")


@dataclass
class DepthLabState:
    """What the Depth lab keeps between runs (app.shell.state.kept)."""

    vgg_asked: tuple[int, float] | None = None  # the VGG settings (steps, lr) Train was pressed for
    heat_for: str | None = None  # the results the gradient-heatmap choice was made for


def mlp_results(configs: list[DepthConfig]) -> list[Trained]:
    """Each configuration's (history, flow): shipped, or trained through the runner (kept for every
    visitor; after a Stop, those trained before it, and the runner's note and button for the others)."""
    shipped = {cfg: depth_cache.precomputed(cfg) for cfg in configs}
    parts = [Part.call(f"Training {describe(cfg)}", train_mlp, cfg, units=disc_units(cfg), progress=True)
             for cfg in configs if shipped[cfg] is None]
    trained = runner.run(parts, DISC_COST, each=NETWORKS) if parts else []
    return [found for found in shipped.values() if found is not None] + trained


def vgg_parts(steps: int, lr: float) -> list[Part[Trained]]:
    """The runner's parts of the VGG nets not shipped for these settings."""
    return [Part.call(f"Training {vgg_label(d, bn)}", train_vgg, d, bn, steps, lr, units=vgg_units(steps, [(d, bn)]),
                      progress=True) for d, bn in VGG_NETS if depth_cache.shipped_vgg(d, bn, steps, lr) is None]


def vgg_results(steps: int, lr: float, asked: bool) -> list[Trained]:
    """The four nets' (history, flow): shipped, or trained through the runner (`asked`: Train pressed anew)."""
    shipped = [found for d, bn in VGG_NETS if (found := depth_cache.shipped_vgg(d, bn, steps, lr)) is not None]
    parts = vgg_parts(steps, lr)
    return shipped + (runner.run(parts, VGG_COST, each=NETS, asked=asked) if parts else [])


def train_mlp(cfg: DepthConfig, progress: Progress) -> Trained:
    """One disc MLP, as the runner's Part.call trains it: on one thread, its steps on the runner's bar."""
    with pace.one_thread():
        return depth_lib.train_disc(cfg, progress=_steps(progress, cfg.steps))


def train_vgg(depth: int, batchnorm: bool, steps: int, lr: float, progress: Progress) -> Trained:
    """One VGG net, as the runner's Part.call trains it."""
    with pace.one_thread():
        return depth_lib.train_vgg(depth, batchnorm, steps, lr, record_every=VGG_RECORD_EVERY,
                                   progress=_steps(progress, steps))


def _steps(progress: Progress, steps: int) -> Callable[[int], None]:
    """The trainers' `progress(step)` as the runner's `progress(fraction, what)`."""
    return lambda step: progress(step / steps, f"step {step} of {steps}")
