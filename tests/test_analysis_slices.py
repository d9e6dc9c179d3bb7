"""Slices of a scored pairs file (analysis.slices), against counts made by hand; the parser keeps a file's own columns."""

import math

import pandas as pd

from albert_lab.analysis.intrinsic import wilson_interval
from albert_lab.analysis.slices import LABEL, LENGTH, UNKNOWN, matching, pair_table, slice_accuracy, slice_names, slice_of
from albert_lab.data.pairs_file import read_pairs

# Six pairs, two students; a row: (student, words of A, label, what sop says, what nsp says, unknown share)
PAIRS = [("ann", 2, 0, 0, 0, 0.0), ("ann", 3, 1, 1, 0, 0.0), ("ann", 4, 0, 1, 0, 0.1),
         ("bob", 5, 0, 0, 0, 0.0), ("bob", 6, 1, 1, 1, 0.3), ("bob", 7, 1, 1, 0, 0.0)]


def scores() -> pd.DataFrame:
    """score_pairs' frame for PAIRS, made by hand: B is always one word, so a pair has `words of A` + 1 words."""
    rows = []
    for name, head, k in (("sop", "sop", 3), ("nsp", "nsp", 4)):
        for i, (student, words, label, *said, unknown) in enumerate(PAIRS):
            guess = said[k - 3]
            rows.append(dict(checkpoint=name, row=i + 2, sentence_a=" ".join(["Word"] * words), sentence_b=f"end{i}",
                             label=label, student=student, head=head, head_status="trained", tokens=words + 4,
                             unknown=unknown if name == "sop" else 0.0, p_ab=0.2 if guess else 0.8, p_ba=0.5,
                             prediction=guess, correct=guess == label))
    return pd.DataFrame(rows).astype({"label": "Int64", "student": "string"})


def test_accuracy_by_student_is_the_hand_count():
    table = slice_accuracy(scores(), "student").set_index(["slice", "checkpoint"])
    # ann: sop right on 0,1 (2 of 3), nsp right on 0,-,0 (2 of 3); bob: sop 3 of 3, nsp right on 0 and 1 (2 of 3)
    for (student, name), hits in {("ann", "sop"): 2, ("ann", "nsp"): 2, ("bob", "sop"): 3, ("bob", "nsp"): 2}.items():
        row = table.loc[(student, name)]
        assert (row.n, row.hits, row.pairs) == (3, hits, 3)
        assert row.accuracy == hits / 3
        low, high = wilson_interval(hits, 3)
        assert (row.low, row.high) == (low, high)
    # Wilson by hand for 2 of 3: centre (2/3 + z²/6) / (1 + z²/3), half z·sqrt(2/27 + z²/36) / (1 + z²/3)
    z = 1.96
    centre, half = (2 / 3 + z * z / 6) / (1 + z * z / 3), z * math.sqrt(2 / 27 + z * z / 36) / (1 + z * z / 3)
    assert math.isclose(table.loc[("ann", "sop"), "low"], centre - half) and math.isclose(table.loc[("ann", "sop"), "high"], centre + half)
    assert round(centre - half, 3) == 0.208 and round(centre + half, 3) == 0.939
    # base rates: ann's labels 0,1,0 -> always 0 scores 2/3; bob's 0,1,1 -> always 1 scores 2/3
    assert (table.loc[("ann", "sop"), "always"], table.loc[("bob", "sop"), "always"]) == (0, 1)
    assert table.loc[("ann", "sop"), "base"] == table.loc[("bob", "nsp"), "base"] == 2 / 3


def test_label_length_and_unknown_slices():
    frame = scores()
    assert slice_names(frame) == [LABEL, LENGTH, UNKNOWN, "student"]
    by_label = slice_accuracy(frame, LABEL).set_index(["slice", "checkpoint"])
    assert by_label.loc[("label 0", "sop"), ["n", "hits"]].tolist() == [3, 2]  # rows 2, 4 right; row 3 wrong
    assert by_label.loc[("label 1", "nsp"), ["n", "hits"]].tolist() == [3, 1]
    lengths = slice_of(frame, LENGTH)  # 3..8 words: terciles {3, 4}, {5, 6}, {7, 8}
    assert list(lengths.cat.categories) == ["3-4 words", "5-6 words", "7-8 words"]
    assert list(lengths.astype(str)) == ["3-4 words"] * 2 + ["5-6 words"] * 2 + ["7-8 words"] * 2
    unknown = slice_of(frame, UNKNOWN)  # the largest share over the checkpoints: 0.1 and 0.3 from sop
    assert list(unknown.astype(str)) == ["none", "none", "5% to 20%", "none", "over 20%", "none"]
    assert list(unknown.cat.categories) == ["none", "5% to 20%", "over 20%"]  # groups without a pair are not listed


def test_the_pair_table_and_its_filters():
    frame = scores()
    table = pair_table(frame)
    assert list(table.columns) == ["row", "sentence_a", "sentence_b", "label", "student", "p0 sop", "right sop", "p0 nsp",
                                   "right nsp"]
    assert list(table["right sop"]) == [True, True, False, True, True, True]
    assert list(table["p0 nsp"]) == [0.8, 0.8, 0.8, 0.8, 0.2, 0.8]
    assert list(matching(table, "END3").row) == [5]
    assert list(matching(table, label="1").row) == [3, 6, 7]
    groups = slice_of(frame, "student")
    assert list(matching(table, label="1", groups=groups, group="bob").row) == [6, 7]
    assert list(matching(table, label="none").row) == []


def test_the_parser_keeps_a_files_own_columns():
    parsed = read_pairs(b"sentence_a,sentence_b,label,student,tokens,\nA one.,B one.,0,ann,3,\nA two.,B two.,1,,4,x\n", "s.csv")
    assert list(parsed.pairs.columns) == ["row", "sentence_a", "sentence_b", "label", "student"]
    assert list(parsed.pairs.student.astype(object)) == ["ann", pd.NA]
    assert parsed.problems == ["column tokens is not kept: the scores have a column of that name; rename it to slice by it",
                               "a column without a name in the header is not kept"]
    lines = b'{"sentence_a": "a", "sentence_b": "b", "topic": 3}\n{"sentence_a": "c", "sentence_b": "d", "topic": {"x": 1}}\n'
    assert list(read_pairs(lines, "t.jsonl").pairs.topic.astype(object)) == ["3", pd.NA]


def many_students(pairs: int, seed: int = 0) -> pd.DataFrame:
    """score_pairs' frame for `pairs` pairs by two heads, nearly each its own student (every seventh shares one,
    every eleventh has none), some unlabelled and some not scored (a NaN from the head)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    labels = [None if i % 13 == 0 else int(rng.integers(0, 2)) for i in range(pairs)]
    students = [None if i % 11 == 0 else "7" if i % 7 == 0 else str(i) for i in range(pairs)]
    rows = []
    for name in ("sop", "nsp"):
        for i in range(pairs):
            p = float("nan") if (i % 17 == 0 and name == "nsp") else float(rng.random())
            guess = None if p != p else int(p < 0.5)
            rows.append(dict(checkpoint=name, row=i + 2, sentence_a="A b.", sentence_b="C d.", label=labels[i],
                             student=students[i], head=name, unknown=0.0, p_ab=p, prediction=guess,
                             correct=None if guess is None or labels[i] is None else guess == labels[i]))
    return pd.DataFrame(rows).astype({"label": "Int64", "student": "string", "prediction": "Int64", "correct": "boolean"})


def test_many_distinct_values_are_the_hand_count():
    """Issue 67, F7: slicing was quadratic in a column's distinct values; made one pass, its numbers are still
    those counted here by hand, pair by pair, for 400 pairs in some 330 groups."""
    frame = many_students(400)
    table = slice_accuracy(frame, "student")
    counts: dict[tuple, list[int]] = {}
    labels: dict[str, list[int]] = {}
    for r in frame.itertuples():
        group = "(blank)" if pd.isna(r.student) else r.student
        pairs, n, hits = counts.setdefault((group, r.checkpoint), [0, 0, 0])
        scored = not pd.isna(r.label) and r.p_ab == r.p_ab
        counts[(group, r.checkpoint)] = [pairs + 1, n + scored, hits + (scored and bool(r.correct))]
        if r.checkpoint == "sop" and not pd.isna(r.label):
            labels.setdefault(group, []).append(int(r.label))
    assert len(table) == len(counts) == 2 * len({g for g, _ in counts}) > 600
    assert list(table.slice[:4]) == ["1", "1", "2", "2"] and table.slice.iloc[-1] == "(blank)"  # '2' before '10'
    assert list(table.checkpoint[:2]) == ["sop", "nsp"]
    for row in table.itertuples():
        assert [row.pairs, row.n, row.hits] == counts[(row.slice, row.checkpoint)], row
        assert (row.low, row.high) == wilson_interval(row.hits, row.n) if row.n else math.isnan(row.low)
        given = labels.get(row.slice, [])
        if given:
            always = int(given.count(1) > given.count(0))
            assert (row.always, row.base) == (always, given.count(always) / len(given))
        else:
            assert pd.isna(row.always) and math.isnan(row.base)


def test_slicing_does_no_work_per_group(monkeypatch):
    """One pass: as many frame lookups and iterations for 300 groups as for 30 (a filter of the whole frame and a
    set of every value per group made 5,000 students take 15 s). Counted, not timed."""
    calls = {"getitem": 0, "iter": 0}

    def counting(name, original):
        def wrapper(self, *args, **kwargs):
            calls[name] += 1
            return original(self, *args, **kwargs)
        return wrapper

    monkeypatch.setattr(pd.DataFrame, "__getitem__", counting("getitem", pd.DataFrame.__getitem__))
    monkeypatch.setattr(pd.Series, "__iter__", counting("iter", pd.Series.__iter__))
    made = []
    for pairs in (30, 300):
        frame = many_students(pairs)
        calls.update(getitem=0, iter=0)
        slice_accuracy(frame, "student")
        made.append(dict(calls))
    assert made[0] == made[1], made
