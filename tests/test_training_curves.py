"""Compare runs' curves (albert_lab.training.curves): TensorBoard's debiased EMA against a hand
computation, wall time from a run's start, a run's curve in step order."""

import math

import numpy as np
import pandas as pd
import pytest

from albert_lab.training.curves import curve, relative_seconds, smooth


def test_smooth_is_tensorboards_debiased_ema_by_hand():
    # w = 0.5 on 1, 2, 3: s = 0.5, 1.25, 2.125 before debiasing; divided by 1 - 0.5^t = 0.5, 0.75, 0.875
    assert smooth([1, 2, 3], 0.5) == pytest.approx([1.0, 5 / 3, 17 / 7], rel=1e-15)
    # w = 0.9 on 10, 0: 1.0 / 0.1 = 10, then (0.9 + 0) / 0.19
    assert smooth([10, 0], 0.9) == pytest.approx([10.0, 0.9 / 0.19], rel=1e-15)


def test_smooth_zero_weight_is_the_raw_line_and_a_constant_stays_constant():
    values = [3.0, -1.0, 7.5]
    assert list(smooth(values, 0.0)) == values
    assert smooth([4.0] * 50, 0.99) == pytest.approx([4.0] * 50, rel=1e-12)  # debiasing: no ramp up from 0


def test_smooth_leaves_a_nan_alone_and_refuses_a_weight_of_one():
    out = smooth([1.0, math.nan, 3.0], 0.5)
    assert out[0] == 1.0 and math.isnan(out[1]) and out[2] == pytest.approx((0.25 + 1.5) / 0.75)
    with pytest.raises(ValueError, match="outside"):
        smooth([1.0], 1.0)


def test_wall_time_counts_from_the_runs_start():
    # first row logged 30 s into training at t = 1000: the run started at 970
    assert list(relative_seconds([1000.0, 1060.0], [30.0, 90.0])) == [30.0, 90.0]
    assert list(relative_seconds([1000.0, 1060.0])) == [0.0, 60.0]  # rows without elapsed_s: from the first row
    assert len(relative_seconds([])) == 0


def test_curve_sorts_by_step_and_drops_rows_without_the_metric():
    rows = pd.DataFrame({"step": [2, 1, 3], "loss": [2.0, 1.0, np.nan], "tokens": [200, 100, 300],
                         "time": [20.0, 10.0, 30.0], "elapsed_s": [12.0, 2.0, 22.0]})
    by_tokens = curve(rows, "loss", "tokens", 0.5)
    assert list(by_tokens.x) == [100, 200] and list(by_tokens.raw) == [1.0, 2.0]
    assert list(by_tokens.smoothed) == pytest.approx([1.0, 5 / 3])
    assert list(curve(rows, "loss", "wall time", 0.0).x) == [2.0, 12.0]
    assert curve(rows.drop(columns="tokens"), "loss", "tokens", 0.5).empty  # rows that carry no tokens
    assert curve(rows, "pair_acc", "step", 0.5).empty
