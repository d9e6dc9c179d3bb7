"""A run's held-out evaluation: every `eval_every` steps on a fixed sample (`eval_limit` pairs per
task), and at the end of a run on a sample sized to the run, or on every pair with `full_eval`.

The model is put in eval mode for the scoring and back in training mode after.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pandas as pd
import torch

from albert_lab.analysis.intrinsic import TASKS, accuracy_table, flat_metrics, score_eval_pairs
from albert_lab.training.runs import FINAL_EVALUATION

FINAL_EVAL_SHARE = 0.25  # a run's final evaluation costs at most about this share of its training time (unless full_eval)
CALIBRATION_ROWS = 32  # per task: timed first, to size the sample


def _seconds(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.1f} min"


class HeldOut:
    """The run's held-out pairs, scored with its model."""

    def __init__(self, model: torch.nn.Module, tokenizer: Any, pairs: pd.DataFrame, max_seq_len: int,
                 dtype: torch.dtype | None):
        self.model, self.tokenizer, self.pairs, self.max_seq_len, self.dtype = model, tokenizer, pairs, max_seq_len, dtype

    def metrics(self, limit: int | None) -> dict[str, float]:
        table = self.table(limit)
        return {} if table is None else flat_metrics(table)

    def table(self, limit: int | None):
        """`accuracy_table` of the held-out pairs, or None without any."""
        if self.pairs.empty:
            return None
        self.model.eval()
        try:
            return accuracy_table(score_eval_pairs(self.model, self.tokenizer, self.pairs, self.max_seq_len, self.dtype, limit))
        finally:
            self.model.train()

    def final(self, elapsed: float, full: bool, say: Callable[[str], None],
              tell: Callable[[str], None]) -> tuple[Any, dict[str, Any] | None]:
        """(accuracy_table, what was scored) at the end of a run that trained `elapsed` seconds: every
        held-out pair when `full`, else a fixed sample sized so that scoring takes about
        FINAL_EVAL_SHARE of the training time (timed on a first small sample), its 95%
        intervals in the log (`say`) and the card. Progress and the time left go to the log and
        run.json's message (`tell`), task by task."""
        pairs = self.pairs
        if pairs.empty:
            return None, None
        tasks = [t for t in TASKS if (pairs.task == t).any()]
        sizes = pairs.task.value_counts()
        self.model.eval()
        try:
            started = time.perf_counter()
            probe = self._score(CALIBRATION_ROWS, tasks)  # for the time estimate, and the sample's size
            per_row, limit = (time.perf_counter() - started) / max(1, len(probe)), None
            if not full:
                budget = FINAL_EVAL_SHARE * max(elapsed, 1.0)
                limit = max(CALIBRATION_ROWS, int(budget / per_row / len(tasks)))
                if limit >= sizes.max():
                    limit = None
            rows = sum(int(min(sizes[t], limit or sizes[t])) for t in tasks)
            what = (f"all {rows:,} held-out pairs and texts" if limit is None else
                    f"{rows:,} of {len(pairs):,} held-out pairs and texts, a sample sized to the run "
                    f"(train --full-eval, or albert-lab evaluate, scores all)")
            eta = f", about {_seconds(rows * per_row)}"
            tell(f"{FINAL_EVALUATION}: {what}{eta}")
            say(f"{FINAL_EVALUATION} on {what}{eta} ...")
            frames = []
            for i, task in enumerate(tasks):
                frames.append(self._score(limit, [task]))
                done = sum(len(f) for f in frames)
                spent = time.perf_counter() - started
                left = spent / done * (rows - done) if done < rows else 0.0
                say(f"{FINAL_EVALUATION}: {task} scored ({i + 1} of {len(tasks)} tasks, {done:,} of {rows:,} rows), "
                    f"about {_seconds(left)} left")
                tell(f"{FINAL_EVALUATION}: {done:,} of {rows:,} scored, about {_seconds(left)} left")
            table = accuracy_table(pd.concat(frames, ignore_index=True))
        finally:
            self.model.train()
        lines = [f"{r.metric} {r.accuracy:.3f} [{r.low:.3f}, {r.high:.3f}] n={r.n:,}" for r in table.itertuples()]
        say(f"{FINAL_EVALUATION} done in {_seconds(time.perf_counter() - started)}: " + "; ".join(lines)
            + " (95% intervals)")
        return table, {"evaluated_rows": rows, "held_out_rows": len(pairs), "full": limit is None,
                       "seconds": round(time.perf_counter() - started, 1)}

    def _score(self, limit: int | None, tasks: list[str]) -> pd.DataFrame:
        return score_eval_pairs(self.model, self.tokenizer, self.pairs, self.max_seq_len, self.dtype, limit, tasks)
