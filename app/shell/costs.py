"""The app's time estimates, read from the analyses' records (albert_lab.analysis.registry): the
units of work (a model's forward cost per token, relative to albert-sop's, times steps, pairs or
tokens) and the seconds per unit guessed before this process has timed one itself
(app.shell.pace.estimate: from then on its own pace), by the name the app times each kind of work under.
No Streamlit here: benchmarks/bench_estimates.py checks these guesses against measurement."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from albert_lab.analysis.registry import ANALYSES, RELAXATION_COST, attribution_units, relaxation_units, size, text_units

COSTS = (*(a.cost for a in ANALYSES if a.cost is not None), RELAXATION_COST)  # the records', and the relaxation curve's
SECONDS_PER_UNIT = {cost.kind: cost.seconds for cost in COSTS}
# Seconds a kind of work takes the first time in a server process, on top of its units (captum's import and hooks)
FIRST_TIME_SECONDS = {a.cost.kind: a.cost.first for a in ANALYSES if a.cost is not None and a.cost.first}

# The Training page's Start, from the click to the run's folder, with the form's defaults (lab-albert on
# long-mix, 8,000 pieces), measured by benchmarks/bench_first_start.py on 2 cores at load 2-2.5: with the
# tokenizer made (at install: `corpora --install`), and when a corpus and vocabulary need a new one first.
START_SECONDS = {"tokenizer made": 1.5, "new tokenizer": 41.0}

def card_units(card: dict[str, Any], texts: int) -> float:
    """text_units of the checkpoint a model card describes (pages know its card before loading it; its
    spec as the card shows it, which may say 'not recorded' where a ModelSpec would refuse it)."""
    return text_units(SimpleNamespace(**card["spec"]), texts)


__all__ = ["FIRST_TIME_SECONDS", "SECONDS_PER_UNIT", "START_SECONDS", "attribution_units", "card_units", "relaxation_units",
           "size", "text_units"]
