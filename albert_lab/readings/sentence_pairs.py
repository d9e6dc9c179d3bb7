"""What the Sentence pairs page says of a scored file, in words made from its own numbers: each head's
accuracy with its interval and what it was asked, the score the labels' base rate gives for free,
when an interval is too wide to conclude, and why an NSP head can score on swapped pairs; of its
slices, what each group's interval allows. Pure functions of analysis.pairs' scores and
analysis.slices' tables: the page shows them, `al.score(...).reading` and `al.slices(...)` carry them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from albert_lab.analysis.pairs import base_rate, labelled_accuracy, majority, summarize
from albert_lab.analysis.slices import LABEL
from albert_lab.readings.numbers import two

CHANCE = 0.5  # a coin's accuracy on two labels
HEAD_QUESTION = {"sop": "is A then B the original order?", "nsp": "is B the segment that follows A?"}


def by_label(scores: pd.DataFrame, name: str) -> tuple[int, int, int, int]:
    """A checkpoint's right answers on label-0 pairs, their number, the same on label-1 pairs."""
    rows = scores[(scores.checkpoint == name) & scores.label.notna() & scores.p_ab.notna()]
    zero, one = rows[rows.label == 0], rows[rows.label == 1]
    return int(zero.correct.sum()), len(zero), int(one.correct.sum()), len(one)


def verdict(low: float, high: float, always: int, bar: float, n: int) -> str:
    """What an accuracy's 95% interval [low, high] on n pairs allows one to say, against chance and
    against always answering label `always` (accuracy `bar`, at least chance)."""
    chance_in, bar_in = low <= CHANCE <= high, bar > CHANCE and low <= bar <= high
    narrow = "; more pairs narrow the interval"
    if chance_in and bar > CHANCE and high < bar:
        return (f"the interval holds chance ({two(CHANCE)}) but lies below always answering label {always} ({two(bar)}): "
                f"on {n} pairs this head is worse than one that ignores the pair, beyond the interval")
    if chance_in:
        also = f" and always answering label {always} ({two(bar)})" if bar_in else ""
        return f"the interval holds chance ({two(CHANCE)}){also}, so {n} pairs cannot tell this head from guessing{narrow}"
    if bar_in:
        return (f"above chance, but the interval holds always answering label {always} ({two(bar)}), so {n} pairs "
                f"cannot tell this head from one that ignores the pair{narrow}")
    if low > max(CHANCE, bar):
        return "better than chance and than always answering one label, beyond the interval"
    if high < CHANCE:
        return "worse than chance, beyond the interval: the head tends to answer the other way"
    return f"better than chance but worse than always answering label {always}, beyond the interval"


NO_LABELS = ("The file has no labels, so there is no accuracy: the chart and the table show how the checkpoints rate "
             "the pairs as given and swapped. Add a `label` column (0 or 1) to measure it.")


def reading(scores: pd.DataFrame, cards: Mapping[str, Mapping[str, Any]] | None = None) -> str:
    """What the page says under a scored file's chart (`scores`: analysis.pairs.score_pairs'), as markdown: with
    labels, upload_reading; without, that there is no accuracy to read. `cards` is the records' shape, unused."""
    labelled = labelled_accuracy(summarize(scores))
    return upload_reading(labelled, scores) if len(labelled) else NO_LABELS


def upload_reading(labelled: pd.DataFrame, scores: pd.DataFrame) -> str:
    """Markdown under an upload's accuracy chart: the labels' base rate, each checkpoint's accuracy with its
    interval and what the interval allows, and, where an NSP head was scored, what its label 1 means."""
    zeros, n = base_rate(scores)
    always, bar = majority(scores)
    free = (f", so {two(bar)}, not {two(CHANCE)}, is the score to beat" if bar > CHANCE else ", the same as chance")
    lines = [f"Of the {n} labelled pairs, {zeros} ({zeros / n:.0%}) are label 0 (in order / is next): a head that "
             f"always answers label {always}, whatever the pair, scores {two(bar)}{free}."]
    for row in labelled.itertuples():
        r0, n0, r1, n1 = by_label(scores, row.checkpoint)
        question = HEAD_QUESTION.get(row.head, "")
        lines.append(f"- **{row.checkpoint}** ({row.head.upper()} head, asked: {question}) {two(row.accuracy)} "
                     f"[{two(row.low)}-{two(row.high)}] on {row.labelled} pairs, right on {r0} of {n0} label-0 pairs and "
                     f"{r1} of {n1} label-1 pairs: {verdict(row.low, row.high, always, bar, row.labelled)}.")
    nsp = labelled[labelled["head"] == "nsp"]
    if len(nsp):
        scoring = nsp[nsp.low > CHANCE]
        lines.append(_nsp_words(list(nsp.checkpoint), list(scoring.checkpoint), zeros / n))
    return "\n".join(lines)


def _nsp_words(names: list[str], scoring: list[str], share_zero: float) -> str:
    """What an NSP head's label 1 means, and, for those above chance, how they can be on swapped pairs."""
    heads = ", ".join(names)
    text = (f"An NSP head ({heads}) was trained to tell the true next segment (label 0) from a segment taken from "
            "another document (label 1), not from a swapped pair.")
    if scoring:
        free = (f"; and the labels' base rate gives some for free: with {share_zero:.0%} of the pairs label 0, answering "
                f"'is next' to every pair scores {two(share_zero)}" if share_zero > CHANCE else "")
        text += (f" If this file's label-1 pairs are swapped ones, {', '.join(scoring)} can still score above chance: "
                 "a swapped pair often reads as an incoherent jump (a pronoun before the name it stands for, an answer "
                 f"before its question) that looks like a segment from elsewhere{free}. The right answers by label, "
                 "above, tell these apart: a head that says 'is next' to everything is right on every label-0 pair and "
                 "on no label-1 pair.")
    return text


def slice_words(low: float, high: float, n: int, always: object, base: float, by_label: bool) -> str:
    """What one group's interval allows, in a table cell: against chance and, unless the slice is by label
    (where always answering the group's own label scores 1), against always answering its commoner label."""
    if n == 0:
        return "no labelled pairs"
    bar = None if by_label or base != base or base <= CHANCE else base  # base != base: NaN, no labels
    if low <= CHANCE <= high:  # and yet it may be reliably below always answering the commoner label
        if bar is not None and high < bar:
            return f"too few to tell from chance, but below always answering {always} ({two(bar)})"
        return "too few to tell from chance" + ("" if bar is None else f" or from always answering {always} ({two(bar)})")
    if bar is not None and low <= bar <= high:
        return f"too few to tell from always answering {always} ({two(bar)})"
    if high < CHANCE:
        return "below chance"
    if bar is not None and high < bar:
        return f"above chance, below always answering {always} ({two(bar)})"
    return "above chance" + ("" if bar is None else " and the base rate")


SLICES_WITHOUT_LABELS = "No pair has a label, so there is no accuracy per group: add a `label` column (0 or 1)."
BY_LABEL = ("By label, a group's accuracy is how often the head gets that label right. A head that always answered "
            "label 0 would score 1 on the label-0 group and 0 on the label-1 group, so read the two groups "
            "together: each is compared with chance only.")


def with_reads(table: pd.DataFrame, by: str) -> pd.DataFrame:
    """analysis.slices.slice_accuracy's table with `reads`: what each group's interval allows (slice_words)."""
    return table.assign(reads=[slice_words(r.low, r.high, r.n, f"label {r.always}", r.base, by == LABEL)
                               for r in table.itertuples()])


def slices_reading(table: pd.DataFrame, by: str) -> str:
    """What the page says under a slices table (`table`: with_reads'), as markdown: read by label, the groups
    together; and how many accuracies rest on too few pairs to conclude."""
    if not table.n.any():
        return SLICES_WITHOUT_LABELS
    said = [BY_LABEL] if by == LABEL else []
    small = table[table.reads.str.startswith("too few")]
    if len(small):
        held = "chance" if by == LABEL else "chance or what always answering the group's commoner label scores"
        said.append(f"{len(small)} of the {len(table[table.n > 0])} accuracies (a group's, by one checkpoint) rest on "
                    f"too few pairs to conclude: their interval holds {held}, so a difference between groups there may "
                    "be luck. More pairs per group narrow the intervals.")
    return "\n\n".join(said)
