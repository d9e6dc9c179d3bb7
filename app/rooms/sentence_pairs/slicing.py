"""The upload tab's slices, as LIT users know them: the scored pairs grouped by label, length, unknown
pieces or a column of the file (a student, a topic), each checkpoint's accuracy per group with its 95%
interval, in a chart and a table that says where a group is too small to conclude."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from albert_lab.analysis.slices import LABEL, LENGTH, UNKNOWN, UNKNOWN_BINS, slice_accuracy, slice_names, slice_of
from albert_lab.figures import sentence_pairs
from albert_lab.readings.sentence_pairs import slices_reading, with_reads
from app.shell import draw, links
from app.shell.built import shared
from app.shell.registry import keys

pair_figures = shared(sentence_pairs)  # the library's figures, built once for every visitor

key = keys(__file__)  # this room's widget keys
LINKED = (key("slice"),)  # in the link: the slice picked
MAX_ROWS_SHOWN = 24  # the slices' table shows this many rows whole (groups x checkpoints), and scrolls beyond
SLICE_HELP = {LABEL: "the label your file gives (0: in order / is next; 1: not)",
              LENGTH: "the pair's words, A and B together, in three groups as near equal as ties allow",
              UNKNOWN: "the share of the pair's pieces the vocabulary does not have (the largest over the checkpoints): "
                       + ", ".join(words for _, words in UNKNOWN_BINS)}


def slices_view(scores: pd.DataFrame) -> tuple[str, pd.Series]:
    """The slice picked (in the link), its chart and table; returns the slice and each row's group in it."""
    names = slice_names(scores)
    chosen = links.Controls(links.Control(key("slice"), names[0], options=names))
    chosen.restore()
    st.subheader("Slices")
    by = st.selectbox("Slice the pairs by", names, key=key("slice"),
                      format_func=lambda name: name if name in SLICE_HELP else f"{name} (your column)",
                      help="; ".join(f"**{name}**: {words}" for name, words in SLICE_HELP.items())
                           + "; any other column of your file groups the pairs by its values.")
    chosen.share()
    groups = slice_of(scores, by)
    table = with_reads(slice_accuracy(scores, by), by)
    if not table.n.any():
        st.caption(slices_reading(table, by))
        return by, groups
    draw.chart(pair_figures.slice_figure(table, by), f"pairs-by-{by.replace(' ', '-')}")
    by_label = by == LABEL  # each group one label: answering it always scores 1 there, so no base rate is compared
    # what the interval allows beside the interval, the counts after it: at 1280 px the reading, last, was cut off
    shown = ["slice", "checkpoint", "accuracy", "low", "high", "reads", "n", "hits", "pairs", *([] if by_label else ["base"])]
    st.dataframe(table[shown].assign(slice=table.slice.astype(str)), hide_index=True, width="stretch",
                 column_config=_columns(by), height="content" if len(table) <= MAX_ROWS_SHOWN else "auto")
    for said in filter(None, slices_reading(table, by).split("\n\n")):  # the library's words, a caption each
        st.caption(said)
    draw.download(table.assign(slice=table.slice.astype(str)), f"pair-slices-{by.replace(' ', '-')}.csv",
                  "Download the slices (CSV)")
    return by, groups


def _columns(by: str) -> dict:
    number = st.column_config.NumberColumn
    return {"slice": st.column_config.TextColumn(by, width="small"),
            "pairs": number("pairs", help="pairs in the group, labelled or not"),
            "n": number("n", help="labelled pairs the checkpoint's head scored"),
            "hits": number("right", help="of those, the ones it labels right (label 0 when P(label 0 | A → B) > 0.5)"),
            "accuracy": number("accuracy", format="%.3f"), "low": number("95% low", format="%.3f"),
            "high": number("95% high", format="%.3f"),
            "base": number("base rate", format="%.3f",
                           help="what always answering the group's commoner label scores (by label: 1, so not compared)"),
            "reads": st.column_config.TextColumn("what it allows", width="large")}
