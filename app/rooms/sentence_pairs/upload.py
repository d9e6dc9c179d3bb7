"""The Sentence pairs page's upload tab: a pairs file scored by every picked checkpoint, its
chart and its summary."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import streamlit as st

from albert_lab.analysis.pairs import SUMMARY_MEANINGS, labelled_accuracy, majority, score_pairs, summarize
from albert_lab.analysis.registry import SCORE
from albert_lab.data.pairs_file import read_pairs
from albert_lab.data.textfile import MAX_PAIR_ROWS, MAX_UPLOAD_MB
from albert_lab.figures import sentence_pairs
from albert_lab.readings.sentence_pairs import NO_LABELS, upload_reading
from app.rooms.sentence_pairs import pair_rows, slicing
from app.rooms.sentence_pairs.common import PairsState
from app.rooms.sentence_pairs.scores import show_scores
from app.shell import draw, links, runner
from app.shell.built import shared
from app.shell.guard import guard
from app.shell.registry import keys
from app.shell.runner import Part
from app.shell.selection import Selection
from app.shell.state import kept, widget
from app.shell.text import fmt_bytes, plain, plural

pair_figures = shared(sentence_pairs)  # the library's figures, built once for every visitor

key = keys(__file__)  # this room's widget keys
LABEL_COLUMNS = ("accuracy", "order_accuracy", "labelled")  # the summary's columns about labels
PRIVATE = "uploaded files are not part of links: an upload stays private to the visitor who made it"
LINKED_NOTE = (f"This link opens the Upload pairs tab, but not the file its maker scored here: {PRIVATE}. Upload a pairs "
               "file to score it with the checkpoints picked.")
MAKER_NOTE = f"The page's link opens this tab without your file: {PRIVATE}."


@dataclass(frozen=True)
class Upload:
    """An uploaded file's pairs, known to the runner's key by the file's name and SHA-256 (its rows are not hashed
    on every script run)."""

    name: str
    sha256: str
    pairs: pd.DataFrame = field(compare=False, hash=False, repr=False)


def score_upload(bundles: list, upload: Upload, progress: Any) -> pd.DataFrame:
    """Both orders of every pair of the upload, by each checkpoint, as the runner's Part.of calls it."""
    return score_pairs(bundles, upload.pairs, progress=progress)


def upload_chart(summary: pd.DataFrame, scores: pd.DataFrame) -> None:
    """Accuracy with 95% intervals when the file has labels, and what they say of this file; else how
    P(A → B) is spread."""
    labelled = labelled_accuracy(summary)
    if not len(labelled):
        draw.chart(pair_figures.spread_figure(scores), "pairs-file")
        return
    draw.chart(pair_figures.accuracy_figure(labelled, majority(scores)[1]), "pairs-file")
    st.caption("Each head is scored on its own question, so the points are not one measure: an SOP head is right when "
               "it says whether A then B is the original order, an NSP head when it says whether B is the segment "
               "after A (its label 1: B from another document). The bars are 95% intervals.")
    st.markdown(upload_reading(labelled, scores))


def _upload_changed() -> None:
    """The file removed from the uploader (its x) is forgotten; leaving the page is not a removal."""
    if widget(key("file")) is None:
        kept(PairsState).forget_upload()


def upload_tab(bundles: list) -> None:
    """A pairs file scored by every picked checkpoint, behind a progress bar with the time
    left and a Stop button (5,000 pairs take minutes with the larger models); the scores are
    kept for the same file and checkpoints, so the page's other widgets do not score it again."""
    st.markdown("A **.csv**, **.tsv** or **.jsonl** file with columns `sentence_a`, `sentence_b` and, optionally, "
                f"`label` (0 = A then B is the original order / B follows A, 1 = not). Up to {MAX_UPLOAD_MB} MB "
                f"and {MAX_PAIR_ROWS:,} rows.")
    uploaded = st.file_uploader("Pairs file", type=["csv", "tsv", "jsonl"], key=key("file"), max_upload_size=MAX_UPLOAD_MB,
                                on_change=_upload_changed)
    state = kept(PairsState)
    if uploaded is None and state.upload is None:
        links.carry(*slicing.LINKED, *pair_rows.LINKED)  # a link's slice and filters wait for the visitor's own file
        if state.linked_upload:
            st.info(LINKED_NOTE, icon=":material/link:")
        return
    state.linked_upload = False  # a file of one's own: the link's note is done
    st.caption(MAKER_NOTE)
    with guard("reading the upload"):  # the reader's messages name the file
        # the uploader empties when the user visits another page; the file is kept for the session
        name, data = (uploaded.name, draw.read_upload(uploaded)) if uploaded is not None else state.upload
        parsed = read_pairs(data, name)
        if uploaded is not None:
            state.upload = (name, data)  # once read: a file that fails is not kept
        else:
            left, right = st.columns([5, 1], vertical_alignment="center")
            left.caption(f"{plain(name)} ({fmt_bytes(len(data))}), uploaded earlier in this session, is scored below "
                         "(its scores are kept); upload another file to replace it.")
            right.button("Forget it", key=key("forget"), on_click=state.forget_upload)
        for problem in parsed.problems[:20]:
            st.warning(plain(problem), icon=":material/warning:")  # its columns and cells, as text
        if len(parsed.problems) > 20:
            st.warning(f"... and {len(parsed.problems) - 20:,} more problems")
        upload = Upload(name, hashlib.sha256(data).hexdigest(), parsed.pairs)
        done = runner.run([Part.of(f"Scoring {plural(len(parsed.pairs), 'pair')} with {plural(len(bundles), 'checkpoint')}",
                                   Selection.read().only([bd.name for bd in bundles]), score_upload, upload,
                                   units=sum(SCORE.units(bd, parsed.pairs) for bd in bundles), progress=True)], SCORE.cost)
        if not done:  # stopped
            return
        [scores] = done
        summary = summarize(scores)
        summary = summary[summary.pairs > 0]  # checkpoints not scored are named in the warnings above
        st.subheader(f"{plural(len(parsed.pairs), 'pair')} scored from {plain(name)}")
        upload_chart(summary, scores)
        if not summary.labelled.any():  # a file without labels: no accuracy to show, no columns of blanks
            summary = summary.drop(columns=list(LABEL_COLUMNS))
            st.caption(NO_LABELS)
        st.dataframe(summary, hide_index=True, width="stretch",
                     column_config={"head_status": "head is",  # short names: all fit 1400 px; the help is the CLI's legend
                                    "pairs": st.column_config.NumberColumn("pairs", help=SUMMARY_MEANINGS["pairs"]),
                                    "accuracy": st.column_config.NumberColumn("accuracy", format="%.3f",
                                                                              help=SUMMARY_MEANINGS["accuracy"]),
                                    "order_accuracy": st.column_config.NumberColumn(
                                        "by order", format="%.3f", help=SUMMARY_MEANINGS["order_accuracy"]),
                                    "labelled": st.column_config.NumberColumn("labelled", help=SUMMARY_MEANINGS["labelled"]),
                                    "mean_p_ab": st.column_config.NumberColumn("mean P(0 | A → B)", format="%.3f",
                                                                               help=SUMMARY_MEANINGS["mean_p_ab"]),
                                    "mean_p_ba": st.column_config.NumberColumn("mean P(0 | B → A)", format="%.3f",
                                                                               help=SUMMARY_MEANINGS["mean_p_ba"]),
                                    "prefers_ab": st.column_config.NumberColumn(
                                        "prefers A → B", format="%.3f", help=SUMMARY_MEANINGS["prefers_ab"])})
        show_scores(scores, "uploaded", bundles)
        scored = scores[scores.checkpoint.isin(summary.checkpoint)]  # no columns of blanks for a head not scored
        if len(scored):
            by, groups = slicing.slices_view(scored)
            pair_rows.pairs_view(scored, by, groups, bundles)
