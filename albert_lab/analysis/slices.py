"""Slices of a scored pairs file, as LIT shows them: the pairs grouped by label, by length, by the
share of their pieces a vocabulary does not have, or by any other column of the file (a student, a
topic), with each checkpoint's accuracy on each group and its 95% Wilson interval. Pure functions of
analysis.pairs.score_pairs' frame (one row per pair and checkpoint); every checkpoint's slice holds
the same pairs, so its groups are made from tokenizer-free facts (words) or the largest share over
the checkpoints (unknown pieces)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from albert_lab.analysis.intrinsic import wilson_interval
from albert_lab.data.pairs_file import COLUMNS, RESERVED

LABEL, LENGTH, UNKNOWN = "label", "length", "unknown pieces"  # the slices every file has; then its own columns
BLANK = "(blank)"  # an extra column's value where the file leaves it empty
# Unknown pieces' share: (upper bound, words), a pair in the first bin it does not exceed.
UNKNOWN_BINS = ((0.0, "none"), (0.05, "up to 5%"), (0.2, "5% to 20%"), (1.0, "over 20%"))
TERCILES = 3  # length groups: pairs by their words, in three groups as near equal as ties allow


def extra_columns(scores: pd.DataFrame) -> list[str]:
    """The file's own columns beside the sentences and the label (data.pairs_file keeps them), in its order."""
    return [c for c in scores.columns if c not in (*COLUMNS, *RESERVED)]


def slice_names(scores: pd.DataFrame) -> list[str]:
    """What the pairs can be sliced by: label (when the file has labels), length, unknown pieces, its own columns."""
    labelled = scores.label.notna().any()
    return [*([LABEL] if labelled else []), LENGTH, UNKNOWN, *extra_columns(scores)]


def pair_words(pairs: pd.DataFrame) -> pd.Series:
    """Each pair's words, A's and B's together (whitespace-separated: the same for every tokenizer)."""
    return pairs.sentence_a.str.split().str.len() + pairs.sentence_b.str.split().str.len()


def slice_of(scores: pd.DataFrame, by: str) -> pd.Series:
    """Row -> the pair's group when sliced `by` (one of slice_names), as words, ordered as the groups
    should be listed (pd.Categorical)."""
    pairs = scores.drop_duplicates("row").set_index("row")
    if by == LABEL:
        values = pairs.label.map(lambda v: "no label" if pd.isna(v) else f"label {int(v)}")
        order = ["label 0", "label 1", "no label"]
    elif by == LENGTH:
        values, order = _length_groups(pair_words(pairs))
    elif by == UNKNOWN:
        share = scores.groupby("row", sort=False).unknown.max().reindex(pairs.index).fillna(0.0)
        values = share.map(lambda s: next(words for bound, words in UNKNOWN_BINS if s <= bound))
        order = [words for _, words in UNKNOWN_BINS]
    elif by in pairs:
        values = pairs[by].astype("string").fillna(BLANK).astype(str)
        order = [*sorted(set(values) - {BLANK}, key=_natural), BLANK]
    else:
        raise KeyError(f"no slice {by!r}; the file's slices are {', '.join(slice_names(scores))}")
    present = set(values)  # once: made per group, it was quadratic in a column's distinct values
    return pd.Series(pd.Categorical(values, categories=[o for o in order if o in present], ordered=True),
                     index=pairs.index, name=by)


def _length_groups(words: pd.Series) -> tuple[pd.Series, list[str]]:
    """Terciles of the words (fewer groups where ties leave fewer edges), each named by its shortest and
    longest pair: '4-5 words'."""
    bins = pd.qcut(words, TERCILES, duplicates="drop") if words.nunique() > 1 else pd.Series(0, index=words.index)
    names = {b: _span(words[bins == b]) for b in pd.unique(bins)}
    order = [names[b] for b in sorted(names, key=lambda b: words[bins == b].min())]
    return bins.map(names).astype(str), order


def _span(words: pd.Series) -> str:
    low, high = int(words.min()), int(words.max())
    return f"{low} words" if low == high else f"{low}-{high} words"


def _natural(value: str) -> tuple:
    """Numbers in numeric order ('2' before '10'), then text."""
    try:
        return (0, float(value), value)
    except ValueError:
        return (1, 0.0, value.lower())


def slice_accuracy(scores: pd.DataFrame, by: str) -> pd.DataFrame:
    """Per group of `slice_of(scores, by)` and per checkpoint: pairs (in the group), n (labelled pairs
    its head scored), hits, accuracy and its 95% Wilson interval (low, high), and the base rate: the
    share of the group's labelled pairs with its commoner label (`always`), what answering that label
    to every pair scores. Groups in their order, checkpoints in the scores' order. One pass over the
    scores (groupby): a filter of the whole frame per group took 15 s at 5,000 groups."""
    groups = slice_of(scores, by)
    checkpoints = list(dict.fromkeys(scores.checkpoint))
    scored = scores.label.notna() & scores.p_ab.notna()
    frame = pd.DataFrame({"group": scores.row.map(pd.Series(groups.cat.codes, index=groups.index)).to_numpy(),
                          "checkpoint": scores.checkpoint.map({name: i for i, name in enumerate(checkpoints)}).to_numpy(),
                          "scored": scored.to_numpy(),
                          "hit": (scored & scores.correct.astype("boolean").fillna(False)).to_numpy(dtype=bool)})
    counted = frame.groupby(["group", "checkpoint"], sort=True).agg(pairs=("scored", "size"), n=("scored", "sum"),
                                                                    hits=("hit", "sum"))
    first = scores.drop_duplicates("checkpoint")
    heads = dict(zip(first.checkpoint, first["head"]))
    categories, base_rates = list(groups.cat.categories), _base_rates(scores, groups)
    rows = []
    for (code, i), pairs, n, hits in zip(counted.index, counted.pairs, counted.n, counted.hits):
        name, (hits, n) = checkpoints[i], (int(hits), int(n))
        low, high = wilson_interval(hits, n)
        always, base = base_rates[code]
        rows.append(dict(slice=categories[code], checkpoint=name, head=heads[name], pairs=int(pairs), n=n, hits=hits,
                         accuracy=hits / n if n else np.nan, low=low, high=high, always=always, base=base))
    return pd.DataFrame(rows, columns=["slice", "checkpoint", "head", "pairs", "n", "hits", "accuracy", "low", "high",
                                       "always", "base"])


def _base_rates(scores: pd.DataFrame, groups: pd.Series) -> dict[int, tuple]:
    """Group code -> (the commoner label of its labelled pairs, its share), (NA, nan) where none is labelled; a tie is 0."""
    labels = scores.drop_duplicates("row").set_index("row").label.dropna()
    codes = groups.cat.codes.reindex(labels.index)
    zeros = labels.eq(0).groupby(codes).sum()
    ones = labels.eq(1).groupby(codes).sum()
    rates: dict[int, tuple] = {code: (pd.NA, np.nan) for code in range(len(groups.cat.categories))}
    for code, zero, one in zip(zeros.index, zeros, ones.reindex(zeros.index, fill_value=0)):
        total = int(zero) + int(one)
        if total:
            rates[int(code)] = (0, int(zero) / total) if zero >= one else (1, int(one) / total)
    return rates


def pair_table(scores: pd.DataFrame) -> pd.DataFrame:
    """One row per pair: row, sentences, label, the file's own columns, then for each checkpoint its
    P(label 0 | A -> B) (`p0 <name>`) and, where labelled, whether it is right (`right <name>`)."""
    pairs = scores.drop_duplicates("row").set_index("row")[[*COLUMNS, "label", *extra_columns(scores)]]
    for name, group in scores.groupby("checkpoint", sort=False):
        by_row = group.set_index("row")
        pairs[f"p0 {name}"] = by_row.p_ab.astype(float)
        pairs[f"right {name}"] = by_row.correct
    return pairs.reset_index()


def matching(table: pd.DataFrame, text: str = "", label: str = "any", groups: pd.Series | None = None,
             group: str = "any") -> pd.DataFrame:
    """The rows of `pair_table` whose A or B contains `text` (any case), whose label is `label` ('0',
    '1', 'none' or 'any') and whose group in `groups` (slice_of) is `group` ('any': every one)."""
    keep = pd.Series(True, index=table.index)
    if text.strip():
        needle = text.strip().lower()
        keep &= table.sentence_a.str.lower().str.contains(needle, regex=False) | \
            table.sentence_b.str.lower().str.contains(needle, regex=False)
    if label == "none":
        keep &= table.label.isna()
    elif label != "any":
        keep &= table.label.eq(int(label)).fillna(False).astype(bool)
    if groups is not None and group != "any":
        keep &= table.row.map(groups.astype(str)).eq(group)
    return table[keep]
