"""The app's time estimates, read from the analyses' records (albert_lab.analysis.registry): the
units of work (a model's forward cost per token, relative to albert-sop's, times steps, pairs or
tokens) and the seconds per unit guessed before this process has timed one itself
(app.shell.pace.estimate: from then on its own pace), by the name the app times each kind of work under.
No Streamlit here: benchmarks/bench_estimates.py checks these guesses against measurement."""

from __future__ import annotations

from collections.abc import Sequence
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from albert_lab.analysis.registry import ANALYSES, RELAXATION_COST, Analysis, Cost, attribution_units, relaxation_units, size, text_units

if TYPE_CHECKING:
    from albert_lab.analysis.depth import DepthConfig

# The Depth lab's trainings (albert_lab.analysis.depth), on one thread as the page trains them (pace.one_thread);
# measured by bench_estimates.py --only depth --only vgg (docs/benchmarks.md, "The time estimates").
DISC_COST = Cost("depth", 0.00016, "one SGD step of one layer of the disc MLP (disc_units)")
VGG_COST = Cost("vgg", 0.0012, "one SGD step of one weight layer of a VGG net on the digits (vgg_units)")
NORM_WEIGHT = 1.5  # a normalised MLP's cost per layer against a plain one's (disc_units)
COSTS = (*(a.cost for a in ANALYSES if a.cost is not None), RELAXATION_COST, DISC_COST, VGG_COST)
SECONDS_PER_UNIT = {cost.kind: cost.seconds for cost in COSTS}
# Seconds a kind of work takes the first time in a server process, on top of its units (captum's import and hooks)
FIRST_TIME_SECONDS = {a.cost.kind: a.cost.first for a in ANALYSES if a.cost is not None and a.cost.first}

# The Training page's Start, from the click to the run's folder, with the form's defaults (lab-albert on
# long-mix, 8,000 pieces), measured by benchmarks/bench_first_start.py: with the tokenizer made (at install:
# `corpora --install`), and when a corpus and vocabulary need a new one first.
START_SECONDS = {"tokenizer made": 1.5, "new tokenizer": 41.0}

def disc_units(cfg: DepthConfig) -> float:
    """One disc MLP's training: steps x (hidden layers + 2), wider than 64 costlier, a normalised one 1.5 times
    (BatchNorm's or LayerNorm's operations beside each layer's product)."""
    return cfg.steps * (cfg.depth + 2) * max(1.0, cfg.width / 64) * (1.0 if cfg.norm == "none" else NORM_WEIGHT)


def vgg_units(steps: int, nets: Sequence[tuple[int, bool]]) -> float:
    """VGG nets' training, each (weight layers, BatchNorm) for `steps` SGD steps: steps x (weight layers + 8, a
    step's batch, loss and bookkeeping: VGG-8 took 26 ms a step, VGG-38 76 ms)."""
    return sum(steps * (depth + 8) for depth, _ in nets)


def card_units(card: dict[str, Any], texts: int) -> float:
    """text_units of the checkpoint a model card describes (pages know its card before loading it; its
    spec as the card shows it, which may say 'not recorded' where a ModelSpec would refuse it)."""
    return text_units(SimpleNamespace(**card["spec"]), texts)


def record_units(record: Analysis, card: dict[str, Any], inputs: Any, **options: Any) -> float:
    """The units of `record`'s work (Analysis.units, its Cost's) on the checkpoint a model card describes, before
    loading it: for analyses whose units read no more than the spec."""
    return record.units(SimpleNamespace(spec=SimpleNamespace(**card["spec"])), inputs, **options)


__all__ = ["DISC_COST", "FIRST_TIME_SECONDS", "SECONDS_PER_UNIT", "START_SECONDS", "VGG_COST", "attribution_units",
           "card_units", "disc_units", "record_units", "relaxation_units", "size", "text_units", "vgg_units"]
