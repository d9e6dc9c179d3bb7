"""Runs' metric curves as TensorBoard users read them: its smoothing slider's debiased
exponential moving average, and each run's wall time counted from its own start."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

X_AXES = {"step": "step", "wall time": "wall_s", "tokens": "tokens"}  # the x axis offered -> its column in `curve`


def smooth(values: Sequence[float], weight: float) -> np.ndarray:
    """TensorBoard's smoothing: s_t = w s_{t-1} + (1 - w) x_t from s_0 = 0, divided by 1 - w^t
    (t counts the finite points so far), so the first points are not pulled towards 0. A point
    that is not finite (a NaN, a diverged inf) is kept as it is and leaves the average alone."""
    if not 0 <= weight < 1:
        raise ValueError(f"smoothing weight {weight} is outside [0, 1)")
    out = np.asarray(values, dtype=float).copy()
    last, count = 0.0, 0
    for i, x in enumerate(out):
        if not np.isfinite(x):
            continue
        last, count = weight * last + (1 - weight) * x, count + 1
        out[i] = last / (1 - weight**count)
    return out


def relative_seconds(times: Sequence[float], elapsed: Sequence[float] | None = None) -> np.ndarray:
    """Wall-clock seconds since the run started, for rows logged at `times` (seconds since the
    epoch, metrics.jsonl's 'time'). The start is the first row's time less the training
    seconds it reports ('elapsed_s'), so the first row is not at 0; rows without them count
    from the first row (TensorBoard's 'relative'). A resumed run's pause is in its wall time."""
    times = np.asarray(times, dtype=float)
    if not len(times):
        return times
    elapsed = np.asarray(elapsed if elapsed is not None else [np.nan], dtype=float)  # a Series' labels ignored
    lead = elapsed[0] if np.isfinite(elapsed[0]) else 0.0
    return times - (times[0] - lead)


def curve(rows: pd.DataFrame, metric: str, x: str, weight: float) -> pd.DataFrame:
    """One run's `metric` against the x axis `x` (a key of X_AXES): columns x, raw and smoothed,
    in step order, its rows without the metric or the x left out (an empty frame when it has none)."""
    rows = rows.sort_values("step", kind="stable")
    if x == "wall time" and "time" in rows:
        xs = relative_seconds(rows["time"], rows.get("elapsed_s"))
    else:
        xs = rows[X_AXES[x]].to_numpy(dtype=float) if X_AXES[x] in rows else np.full(len(rows), np.nan)
    raw = rows[metric].to_numpy(dtype=float) if metric in rows else np.full(len(rows), np.nan)
    kept = np.isfinite(xs) & np.isfinite(raw)
    return pd.DataFrame({"x": xs[kept], "raw": raw[kept], "smoothed": smooth(raw[kept], weight)})
