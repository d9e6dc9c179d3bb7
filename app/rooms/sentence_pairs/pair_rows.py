"""The upload tab's pairs one by one: a table to sort and filter (text, label, group of the slice picked),
each checkpoint's P(label 0) and right or wrong per pair, and one pair edited and scored again beside its
original scores (a counterfactual, as LIT's datapoint editor makes)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from albert_lab.analysis.pairs import judged, pairs_frame, score_pairs
from albert_lab.analysis.slices import matching, pair_table
from app.rooms.sentence_pairs.common import (
    LABEL_CHOICES,
    LABEL_HELP,
    LABEL_WORDS,
    RIGHT_WORDS,
    PairsState,
    label_choice,
    label_option,
    model_size,
)
from app.rooms.sentence_pairs.scores import ROW_HELP
from app.shell import links, runner
from app.shell.guard import guard
from app.shell.registry import keys
from app.shell.runner import Part
from app.shell.selection import Selection
from app.shell.state import kept
from app.shell.text import plain

key = keys(__file__)  # this room's widget keys
LINKED = (key("find"), key("flabel"), key("fgroup"), key("row"))  # in the link: the filters and the pair picked
LABELS = {"any": "any", "0": LABEL_WORDS[0], "1": LABEL_WORDS[1], "none": "no label"}
PREDICTS = {0: "0", 1: "1"}  # the label the head gives A → B (0: in order / next)


def rescore(bundles: list, a: str, b: str) -> pd.DataFrame:
    """One edited pair scored both ways by each checkpoint, as the runner's Part.of calls it."""
    return score_pairs(bundles, pairs_frame([a], [b]))


def pairs_view(scores: pd.DataFrame, by: str, groups: pd.Series, bundles: list) -> None:
    """The filters (in the link), the pairs that pass them, and the editor of one of them."""
    table = pair_table(scores)
    values = ["any", *map(str, groups.cat.categories)]
    filters = links.Controls(links.Control(key("find"), ""), links.Control(key("flabel"), "any", options=list(LABELS)),
                             links.Control(key("fgroup"), "any", options=values))
    filters.restore()
    st.subheader("Pairs")
    text, label, group = st.columns([2, 1, 1])
    text.text_input("Text contains", key=key("find"), placeholder="a word of sentence A or B")
    label.selectbox("Label", list(LABELS), key=key("flabel"), format_func=LABELS.get)
    group.selectbox(f"By {plain(by)}", values, key=key("fgroup"), help="a group of the slice picked above")
    filters.share()
    shown = matching(table, filters[key("find")], filters[key("flabel")], groups, filters[key("fgroup")])
    st.caption(f"{len(shown)} of {len(table)} pairs shown; click a column's name to sort by it. P(0) is P(label 0 | "
               "A → B): for an SOP head, A then B in the original order; for an NSP head, B the next segment.")
    names = list(scores.checkpoint.unique())
    config = {"row": st.column_config.NumberColumn("row", width="small", help=ROW_HELP),
              "label": st.column_config.NumberColumn("label", width="small"),
              "sentence_a": st.column_config.TextColumn("sentence A", width="medium"),
              "sentence_b": st.column_config.TextColumn("sentence B", width="medium")}
    for name in names:
        config[f"p0 {name}"] = st.column_config.ProgressColumn(f"P(0) {name}", min_value=0, max_value=1, format="%.3f")
        config[f"right {name}"] = st.column_config.TextColumn(f"{name} right?", width="small")
    rights = {f"right {name}": shown[f"right {name}"].astype(object).map({True: "right", False: "wrong"}).fillna("")
              for name in names}
    drawn = shown.assign(**rights)
    if table.label.isna().all():  # a file without labels: no columns of blanks
        drawn = drawn.drop(columns=["label", *rights])
    st.dataframe(drawn, hide_index=True, width="stretch", column_config=config)
    if len(shown):
        edit_pair(shown, scores, bundles)


def edit_pair(shown: pd.DataFrame, scores: pd.DataFrame, bundles: list) -> None:
    """A pair of the table (its row in the link), its sentences in boxes to edit and its label to set, and the edited
    pair scored by every checkpoint when Re-score is pressed, beside its scores as uploaded, each head right or wrong
    against the label (a label changes no score: a new one is judged without scoring again)."""
    rows = [int(r) for r in shown.row]
    sentences = shown.set_index("row").sentence_a
    pick = links.Controls(links.Control(key("row"), rows[0], links.parse_int(1, 10**7), options=rows))
    pick.restore()
    st.markdown("**Edit a pair and score it again**")
    row = st.selectbox("Pair", rows, key=key("row"), format_func=lambda r: f"row {r}: {_short(sentences[r])}",
                       help="a pair of the table above (its filters choose among them)")
    pick.share()
    original = scores[scores.row == row]
    left, right = st.columns(2)
    a = left.text_area("Sentence A", original.sentence_a.iloc[0], key=key("edit_a", row))
    b = right.text_area("Sentence B", original.sentence_b.iloc[0], key=key("edit_b", row))
    uploaded = original.label.iloc[0]
    choice = st.selectbox("Label", LABEL_CHOICES, key=key("edit_label", row), format_func=label_option,
                          index=LABEL_CHOICES.index("none" if pd.isna(uploaded) else str(int(uploaded))),
                          help=LABEL_HELP)
    state = kept(PairsState)
    if st.button("Re-score", key=key("rescore"), type="primary"):
        state.edited = (row, a, b)
    if state.edited != (row, a, b):
        st.caption("Change a word, swap the sentences (and the label) or cut one short, then press Re-score: each "
                   "checkpoint scores the edited pair both ways, beside its scores as uploaded, right or wrong against "
                   "the label.")
        return
    with guard("re-scoring the pair"):
        pairs_frame([a], [b])  # a blank sentence: one line, before the runner
        # one pair: no bar, and not timed into the estimate of a file's scoring (its fixed costs would swell it)
        [edited] = runner.run([Part.of(f"Re-scoring row {row}", Selection.read().only([bd.name for bd in bundles]),
                                       rescore, a, b, units=sum(map(model_size, bundles)))])
        st.dataframe(compared(original, judged(edited, label_choice(choice))), hide_index=True, width="stretch",
                     column_config={**{c: st.column_config.NumberColumn(c, format="%.3f") for c in PROBABILITIES},
                                    **{c: st.column_config.TextColumn(c, help=SAYS_HELP) for c in SAYS},
                                    **{c: st.column_config.TextColumn(c, help=RIGHT_HELP) for c in RIGHTS}})


PROBABILITIES = ("A → B as uploaded", "A → B edited", "change", "B → A as uploaded", "B → A edited")  # P(label 0)
SAYS = ("says as uploaded", "says edited")
SAYS_HELP = "the label the head gives the pair as A → B: 0 (in order / B is next) when P(label 0) > 0.5, else 1"
RIGHTS = ("right as uploaded", "right edited")  # against the file's label; against the label set here
RIGHT_HELP = "the head's label against the pair's: as uploaded, the file's; edited, the one set above (blank: none)"


def compared(original: pd.DataFrame, edited: pd.DataFrame) -> pd.DataFrame:
    """Per checkpoint: P(label 0) both ways, as uploaded and edited, what the head predicts each time and whether
    that is right against each one's label (`correct`)."""
    before, after = original.set_index("checkpoint"), edited.set_index("checkpoint")
    frame = pd.DataFrame({PROBABILITIES[0]: before.p_ab, PROBABILITIES[1]: after.p_ab,
                          PROBABILITIES[2]: after.p_ab - before.p_ab,
                          PROBABILITIES[3]: before.p_ba, PROBABILITIES[4]: after.p_ba,
                          SAYS[0]: before.prediction.astype(object).map(PREDICTS).fillna(""),
                          SAYS[1]: after.prediction.astype(object).map(PREDICTS).fillna(""),
                          RIGHTS[0]: before.correct.astype(object).map(RIGHT_WORDS).fillna(""),
                          RIGHTS[1]: after.correct.astype(object).map(RIGHT_WORDS).fillna("")})
    return frame.rename_axis("checkpoint").reset_index()


def _short(text: str, chars: int = 60) -> str:
    return text if len(text) <= chars else text[:chars - 1] + "…"
