"""The app's time estimates, in one place: the units of work each kind of computation is
counted in (a model's forward cost per token, relative to albert-sop's, times steps, pairs or
tokens) and the seconds per unit guessed before this process has timed one itself
(app.ui.estimate: from then on its own pace). No Streamlit here:
benchmarks/bench_estimates.py checks these guesses against measurement."""

from __future__ import annotations

from albert_lab.spec import ModelSpec, forward_cost

REFERENCE_COST = 256 ** 2 * 6  # albert-sop's forward cost per token (H = 256, L = 6): size 1
REFERENCE_TOKENS = 24  # a typed pair of two short sentences, with [CLS] and two [SEP]s

# Seconds per unit at size 1 on the 2-core CPU the app is served from, measured busy (load 4 on
# 2 cores: a class server is busy) with benchmarks/bench_estimates.py; docs/benchmarks.md has the runs.
SECONDS_PER_UNIT = {
    "attribution": 0.1,  # one integration step of a REFERENCE_TOKENS pair (50 steps of albert-sop: 4.9 s busy)
    "score_upload": 0.005,  # one pair, read both ways (600 pairs of albert-sop: 2.5 s)
    "table5": 0.15,  # one held-out pair per task and pairs set (200 of albert-sop: 52 s busy)
}


# Seconds a kind of work takes the first time in a server process, on top of its units: the first
# attribution imports captum and builds its hooks (13.2 s against 5.4 s for the next, at load 8).
FIRST_TIME_SECONDS = {"attribution": 8.0}


# The Training page's Start, from the click to the run's folder, with the form's defaults (lab-albert on
# long-mix, 8,000 pieces), measured by benchmarks/bench_first_start.py on 2 cores at load 2-2.5: with the
# tokenizer made (at install: `corpora --install`), and when a corpus and vocabulary need a new one first.
START_SECONDS = {"tokenizer made": 1.5, "new tokenizer": 41.0}


def size(spec: ModelSpec) -> float:
    """A model's forward cost per token relative to albert-sop's."""
    return forward_cost(spec) / REFERENCE_COST


def attribution_units(spec: ModelSpec, steps: int, tokens: int) -> float:
    """Integrated gradients: `steps` forward and backward passes over the pair's `tokens`."""
    return steps * size(spec) * max(tokens, 8) / REFERENCE_TOKENS
