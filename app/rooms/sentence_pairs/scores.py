"""The scores table of the Sentence pairs page, typed or uploaded: each checkpoint's P(label 0)
both ways, with the warnings that name the checkpoints they are about."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import streamlit as st

from albert_lab.analysis.common import checkpoint_notes
from albert_lab.analysis.pairs import truncated_rows, unreadable_rows
from albert_lab.data.corpus import MAX_LEN, MAX_SEGMENT_CHARS
from app.rooms.sentence_pairs.common import LABEL_WORDS, RIGHT_WORDS
from app.shell import draw
from app.shell.text import plain, plural

COLUMNS = ["sentence_a", "sentence_b", "checkpoint", "p_ab", "p_ba", "prediction", "head", "head_status",
           "tokens"]  # a typed pair's table, in this order: the pair, then what each checkpoint says of it
LABELS = {"head_status": "head is", "prediction": "predicts", "sentence_a": "sentence A", "sentence_b": "sentence B"}
ROW_HELP = ("The pair's row in your file as a spreadsheet numbers it: the header is row 1, so the first pair is row 2 "
            "(in a .jsonl file, its line). Warnings and problems name rows the same way.")  # an upload's Pairs table


def preferred_order(scores: pd.DataFrame) -> None:
    """Which order each head rates higher, the pair read both ways: a sharper question than
    P > 0.5 (a head can call both orders 'in order' and still prefer one; on ten ordinary
    pairs albert-sop-minilm was right 5 times of 10 by 0.5, 7 of 9 by the order it preferred)."""
    scored = scores.dropna(subset=["p_ab", "p_ba"])
    if scored.empty:
        return
    said = "; ".join(order_words(r.checkpoint, r.p_ab, r.p_ba) for r in scored.itertuples())
    st.markdown(f"Preferred order (the pair scored both ways): {said}.")
    st.caption("For an SOP head, the order it rates more likely original; for an NSP head, the order it rates more "
               "likely consecutive, which is about topic more than order. Comparing the two is a sharper question than "
               "P(label 0) > 0.5: a head may call both orders 'in order' and still prefer one.")


def rows_by_model(rows: dict[str, list[int]]) -> str:
    """'for albert-sop, 2 pairs (rows 3, 7); for bert-nsp, 1 pair (row 3)': the first ten rows of each."""
    def listed(found: list[int]) -> str:
        shown = ", ".join(map(str, found[:10])) + (" ..." if len(found) > 10 else "")
        return f"{plural(len(found), 'pair')} (row{'s' * (len(found) > 1)} {shown})"

    return "; ".join(f"for {name}, {listed(found)}" for name, found in rows.items())


def reads(group: pd.DataFrame) -> int:
    """The tokens a checkpoint reads (analysis.pairs.score_pairs' `reads`: the analysis's length, or its position
    table when shorter)."""
    return int(group.reads.iloc[0]) if "reads" in group else MAX_LEN


def limit_words(limits: dict[str, int]) -> str:
    """'the 128 tokens albert-sop and bert-nsp read or the 64 tokens albert-tiny reads': each model's own limit."""
    by_limit: dict[int, list[str]] = {}
    for name, limit in limits.items():
        by_limit.setdefault(limit, []).append(name)
    return " or ".join(f"the {limit} tokens {_and(names)} read{'s' * (len(names) == 1)}"
                       for limit, names in sorted(by_limit.items(), reverse=True))


def _and(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def order_words(name: str, p_ab: float, p_ba: float) -> str:
    """'**name**: A → B (0.588 against 0.577)', to the table's three decimals; 'neither' when they are equal there."""
    if f"{p_ab:.3f}" == f"{p_ba:.3f}":
        return f"**{plain(name)}**: neither ({p_ab:.3f} both ways)"
    return f"**{plain(name)}**: {'A → B' if p_ab > p_ba else 'B → A'} ({max(p_ab, p_ba):.3f} against {min(p_ab, p_ba):.3f})"


def show_scores(scores: pd.DataFrame, key: str, bundles: Sequence = ()) -> None:
    """The warnings about `scores` ('typed' or 'uploaded'), a typed pair's preferred order and table (an upload's
    pairs are its Pairs table, app.rooms.sentence_pairs.pair_rows: one row a pair), and the CSV."""
    for name, note in checkpoint_notes(scores).items():
        st.warning(f"{plain(name)}: {plain(note)} (see its model card)", icon=":material/warning:")
    by_model = list(scores.groupby("checkpoint", sort=False))  # each warning names the checkpoints it is about
    cut = {name: truncated_rows(group) for name, group in by_model}
    typed = key == "typed"  # one pair: the models named, no row numbers (an upload's rows count from its header, 2 on)
    if named := {name: rows for name, rows in cut.items() if rows}:
        limits = {name: reads(group) for name, group in by_model if name in named}
        said = f"This pair is longer than {limit_words(limits)} and was" if typed else \
            f"Pairs longer than {limit_words(limits)} were"
        which = "" if typed else f": {rows_by_model(named)}"
        st.warning(f"{said} scored on the first tokens each model reads, the longer sentence cut first{which}. "
                   "Sentence order is judged at the boundary, so shorter pairs say more.", icon=":material/content_cut:")
    if bundles:
        pairs = scores.drop_duplicates("row")
        draw.warn_special_tokens([*pairs.sentence_a, *pairs.sentence_b], {b.name: b.tokenizer for b in bundles})
    unknown = {name: unreadable_rows(group, draw.UNREADABLE) for name, group in by_model}
    if named := {name: rows for name, rows in unknown.items() if len(rows)}:
        said = "; ".join(f"for {name}, {rows.max():.0%} of its pieces unknown" if typed else
                         f"{rows_by_model({name: list(rows.index)})}, up to {rows.max():.0%} of the pieces unknown"
                         for name, rows in named.items())
        st.warning(f"{'This pair is' if typed else 'Pairs'} partly made of text a model cannot read (pieces unknown "
                   f"to its vocabulary, learned from English text): {said}. {'Its' if typed else 'Their'} scores from "
                   f"{'that model' if len(named) == 1 else 'those models'} say little about sentence order.",
                   icon=":material/translate:")
    if typed:
        preferred_order(scores)
        _typed_table(scores)
    draw.download(scores, f"pair-scores-{key}.csv", "Download the scores (CSV)")


def _typed_table(scores: pd.DataFrame) -> None:
    """Each checkpoint's scores of the typed pair: words, and blanks where there is nothing to say; given a label,
    whether each head's prediction is right."""
    shown = scores[COLUMNS].assign(
        prediction=scores.prediction.astype(object).map(LABEL_WORDS).fillna(""))
    if scores.label.notna().any():
        shown.insert(COLUMNS.index("prediction") + 1, "right", scores.correct.astype(object).map(RIGHT_WORDS).fillna(""))
    small = {name: st.column_config.Column(LABELS.get(name, name), width="small") for name in ("head", "head_status")}
    sentences = {name: st.column_config.TextColumn(LABELS[name], width="medium", help="Hover or widen to read it all")
                 for name in ("sentence_a", "sentence_b")}
    st.dataframe(shown, hide_index=True, width="stretch",
                 column_config={**LABELS, **small, **sentences,
                                "p_ab": st.column_config.ProgressColumn("P(label 0 | A → B)", min_value=0, max_value=1, format="%.3f"),
                                "p_ba": st.column_config.ProgressColumn("P(label 0 | B → A)", min_value=0, max_value=1, format="%.3f"),
                                "right": st.column_config.TextColumn("right?", width="small",
                                                                     help="the head's prediction against the label given"),
                                "tokens": st.column_config.NumberColumn(
                                    "tokens", format="localized",
                                    help=f"The pair's length in tokens, [CLS] and [SEP] included, of each side's first "
                                         f"{MAX_SEGMENT_CHARS:,} characters; a model reads at most {MAX_LEN}, or fewer "
                                         "where its position table is shorter (a warning names pairs cut)")})
