"""What the Training page keeps between runs (app.shell.state.kept)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class TrainingState:
    warmup_seen: tuple[int, int, float] | None = None  # the settings whose whole-run warm-up was said: Start again trains
    compare_filter_seen: str = ""  # Compare runs' filter as last applied: a new one picks the runs it lists
