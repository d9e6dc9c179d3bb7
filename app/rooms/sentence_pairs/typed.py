"""The Sentence pairs page's first tab: a pair typed, scored both ways by every picked
checkpoint, and how much to trust the numbers."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import streamlit as st

from albert_lab.analysis.evaluation import interior_accuracy, read_results
from albert_lab.analysis.pairs import judged, pairs_frame, score_pairs
from albert_lab.checkpoint.files import stamp
from albert_lab.figures import sentence_pairs
from app.rooms.sentence_pairs.common import EXAMPLE_A, EXAMPLE_B, LABEL_CHOICES, LABEL_HELP, label_choice, label_option, results_path
from app.rooms.sentence_pairs.scores import show_scores
from app.shell import batches, draw, links
from app.shell.built import shared
from app.shell.guard import guard
from app.shell.registry import keys

pair_figures = shared(sentence_pairs)  # the library's figures, built once for every visitor

key = keys(__file__)  # this room's widget keys


@st.cache_data(show_spinner=False)
def shipped_interior_accuracy(path: Path, stamp: float) -> dict[str, str]:
    """How well each shipped checkpoint orders held-out pairs from inside documents."""
    results = read_results(path)
    if results is None:
        return {}
    return {r.checkpoint: f"{r.accuracy:.2f} (95% interval {r.low:.2f}-{r.high:.2f}, {int(r.n):,} pairs)"
            for r in interior_accuracy(results).itertuples()}


def trust_caption() -> None:
    """How much to trust a typed pair's numbers: the shipped checkpoints' held-out accuracy."""
    path = results_path()
    known = shipped_interior_accuracy(path, path.stat().st_mtime if path.is_file() else 0.0)
    if known:
        st.caption("How much to trust these numbers: on held-out pairs from inside documents, the shipped "
                   "checkpoints order the two segments correctly with accuracy "
                   + "; ".join(f"**{name}** {text}" for name, text in known.items()) + " (chance is 0.50).")


def typed_tab(bundles: list) -> tuple[str, str]:
    """A pair typed and scored by every picked checkpoint; returns the pair (the attributions explain it)."""
    # A form: typing does not rerun the models; the pair is scored (and explained) when submitted.
    typed = links.Controls(links.Control(key("a"), EXAMPLE_A), links.Control(key("b"), EXAMPLE_B),
                           links.Control(key("label"), LABEL_CHOICES[0], options=LABEL_CHOICES))
    typed.restore()
    with st.form(key("form")):
        st.text_area("Sentence A", key=key("a"))
        st.text_area("Sentence B", key=key("b"))
        st.selectbox("Label (optional)", LABEL_CHOICES, key=key("label"), format_func=label_option,
                     help=f"{LABEL_HELP}: each head's prediction is then said right or wrong")
        st.form_submit_button("Score this pair", type="primary")
    typed.share()
    a, b = typed[key("a")], typed[key("b")]
    with guard("scoring"):
        pairs_frame([a], [b])  # a blank sentence: one line, before any queue
        # one pair: a moment of the cores, in the quick lane (never behind an upload's batch), scored in one batch
        # with the pairs other visitors type meanwhile; kept for every visitor under the pair and the checkpoints'
        # files, so a class opening the page scores its example once
        models = tuple((bd.name, bd.source, stamp(bd.source), str(bd.device), str(bd.dtype)) for bd in bundles)
        scores = batches.together(("typed pair", models, a, b), models, (a, b), lambda pairs: score_together(bundles, pairs),
                                 "the typed pair")
        scores = judged(scores, label_choice(typed[key("label")]))  # a label changes no score: nothing scored again
        draw.chart(pair_figures.pair_figure(scores), "pair-probabilities")
        show_scores(scores, "typed", bundles)
    trust_caption()
    return a, b


def score_together(bundles: list, pairs: list[tuple[str, str]]) -> list[pd.DataFrame]:
    """score_pairs of several visitors' typed pairs in one pass, each pair's rows as if scored alone (row 1)."""
    scores = score_pairs(bundles, pairs_frame([a for a, _ in pairs], [b for _, b in pairs]))
    return [scores[scores.row == i].assign(row=1).reset_index(drop=True) for i in range(1, len(pairs) + 1)]
