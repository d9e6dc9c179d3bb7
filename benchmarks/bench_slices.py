"""Slices of an uploaded file by a column with a value per pair (issue 67, F7): 5,000 pairs, each its own
`student`, scored by three checkpoints, sliced by student as the upload tab does on every rerun.

- new: `analysis.slices.slice_accuracy`, one pass (groupby);
- old: the code before, re-implemented here as the baseline: the groups' categories listed with a set
  made per category, then for each group a filter of the whole frame (quadratic in the groups).

The two run in turn (new, old, new, old, ...) for --rounds rounds, each on the same frame; printed: the
median [min-max] seconds of each and of old / new. Goal: new under 1 s at 5,000 values.

Run: .venv/bin/python benchmarks/bench_slices.py [--pairs 5000] [--checkpoints 3] [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import pandas as pd

from albert_lab.analysis.intrinsic import wilson_interval
from albert_lab.analysis.slices import BLANK, _natural, slice_accuracy


def scores_frame(pairs: int, checkpoints: int, seed: int = 0) -> pd.DataFrame:
    """score_pairs' frame for `pairs` labelled pairs, each its own student, scored by `checkpoints` heads."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, pairs)
    frames = []
    for c in range(checkpoints):
        p_ab = rng.random(pairs)
        prediction = (p_ab < 0.5).astype(int)
        frames.append(pd.DataFrame({
            "checkpoint": f"model-{c}", "row": np.arange(2, pairs + 2), "sentence_a": "The cat sat.",
            "sentence_b": "It purred.", "label": pd.array(labels, dtype="Int64"),
            "student": pd.array([f"student {i:05d}" for i in range(pairs)], dtype="string"), "head": "sop",
            "head_status": "trained", "tokens": 12, "unknown": 0.0, "p_ab": p_ab, "p_ba": 1 - p_ab,
            "prediction": pd.array(prediction, dtype="Int64"), "correct": pd.array(prediction == labels, dtype="boolean")}))
    return pd.concat(frames, ignore_index=True)


def old_slice_accuracy(scores: pd.DataFrame, by: str) -> pd.DataFrame:
    """slice_accuracy as it was, for an extra column (the baseline): quadratic in the column's distinct values."""
    pairs = scores.drop_duplicates("row").set_index("row")
    values = pairs[by].astype("string").fillna(BLANK).astype(str)
    order = [*sorted(set(values) - {BLANK}, key=_natural), BLANK]
    groups = pd.Series(pd.Categorical(values, categories=[o for o in order if o in set(values)], ordered=True),
                       index=pairs.index, name=by)
    frame = scores.assign(slice=scores.row.map(groups))
    rows = []
    for value in groups.cat.categories:
        part = frame[frame.slice == value]
        labels = part.drop_duplicates("row").label.dropna()
        zeros, ones = int((labels == 0).sum()), int((labels == 1).sum())
        always, base = (pd.NA, np.nan) if not len(labels) else (0, zeros / len(labels)) if zeros >= ones else \
            (1, ones / len(labels))
        for name, group in part.groupby("checkpoint", sort=False):
            scored = group[group.label.notna() & group.p_ab.notna()]
            hits, n = int(scored.correct.sum()), len(scored)
            low, high = wilson_interval(hits, n)
            rows.append(dict(slice=value, checkpoint=name, head=group["head"].iloc[0], pairs=len(group), n=n, hits=hits,
                             accuracy=hits / n if n else np.nan, low=low, high=high, always=always, base=base))
    return pd.DataFrame(rows, columns=["slice", "checkpoint", "head", "pairs", "n", "hits", "accuracy", "low", "high",
                                       "always", "base"])


def timed(function, scores: pd.DataFrame) -> tuple[float, pd.DataFrame]:
    start = time.perf_counter()
    table = function(scores, "student")
    return time.perf_counter() - start, table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=5000)
    parser.add_argument("--checkpoints", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    scores = scores_frame(args.pairs, args.checkpoints)
    times: dict[str, list[float]] = {"new": [], "old": []}
    for _ in range(args.rounds):
        for name, function in (("new", slice_accuracy), ("old", old_slice_accuracy)):
            seconds, table = timed(function, scores)
            times[name].append(seconds)
            if name == "new":
                new_table = table
            else:  # the same numbers, group by group
                pd.testing.assert_frame_equal(new_table, table, check_dtype=False)
    print(f"{args.pairs:,} pairs, each its own student, {args.checkpoints} checkpoints: {len(new_table):,} rows; "
          f"{args.rounds} rounds, new and old in turn")
    for name, values in times.items():
        print(f"  {name}: median {statistics.median(values):.3f} s [{min(values):.3f}-{max(values):.3f}]")
    ratios = [old / new for new, old in zip(times["new"], times["old"])]
    print(f"  old / new: {statistics.median(ratios):.0f}x [{min(ratios):.0f}-{max(ratios):.0f}]; goal: new under 1 s "
          f"({'met' if statistics.median(times['new']) < 1 else 'NOT met'})")


if __name__ == "__main__":
    main()
