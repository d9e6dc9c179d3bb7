"""The Training page's Compare runs: runs' metrics side by side as TensorBoard users read them,
a panel per metric, smoothed (its debiased EMA) over the faint raw line, against step, wall time
or tokens, a log scale, the runs list filtered by a regular expression (RE2: linear time, whatever
the pattern; a visitor's pattern is run on every visitor's run names). All of it is in the link."""

from __future__ import annotations

import pandas as pd
import re2
import streamlit as st

from albert_lab.figures import training
from albert_lab.paths import runs_dir
from albert_lab.training.curves import X_AXES, curve
from albert_lab.training.runs import RunInfo, list_runs, read_run
from app.rooms.training.state import TrainingState
from app.shell import draw, links
from app.shell.built import shared
from app.shell.registry import keys
from app.shell.state import kept, set_widget
from app.shell.text import plain, quoted

training_figures = shared(training)  # the library's figures, built once for every visitor

key = keys(__file__)  # this room's widget keys

COMPARED = {"loss": "loss (nats)", "mlm_loss": "MLM loss (nats)", "pair_loss": "pair loss (nats)",
            "mlm_acc": "MLM accuracy", "pair_acc": "pair accuracy", "tokens_per_s": "tokens / s"}  # Compare runs' metrics
SMOOTHING = 0.6  # TensorBoard's default weight


MAX_PATTERN = 200  # characters of a filter: RE2 compiles in time and memory bounded by the pattern's size
_RE2 = re2.Options()
_RE2.case_sensitive, _RE2.log_errors, _RE2.max_mem = False, False, 8 << 20  # 8 MiB: a pattern over it is refused


def matching(runs: list[RunInfo], pattern: str) -> tuple[list[str], str | None]:
    """The ids of the runs whose id or name `pattern` finds (a regular expression, any case), and a
    word when it is not one (then it is looked for as plain text). The pattern runs on RE2, whose
    matching time is linear in the text whatever the pattern: Python's `re` backtracks, and one
    pattern in a link (`(a+)+$` against a run named aaaa...) held the server's GIL for good."""
    if len(pattern) > MAX_PATTERN:
        return [], f"The filter is {len(pattern):,} characters long; at most {MAX_PATTERN} are used."
    try:
        found = re2.compile(pattern, _RE2).search
        problem = None
    except Exception as err:  # re2.error, and whatever else a hostile pattern makes the binding raise
        needle = pattern.casefold()
        found = lambda text: needle in text.casefold()
        problem = f"{quoted(pattern)} is not a regular expression RE2 reads ({_reason(err)}): runs holding it as typed are listed."
    return [r.id for r in runs if found(r.id) or found(r.name)], problem


def _reason(err: Exception) -> str:
    """RE2's words for a pattern it refuses, as text (it gives bytes)."""
    words = err.args[0] if err.args else type(err).__name__
    return (words.decode(errors="replace") if isinstance(words, bytes) else str(words))[:120]


def controls_for(ids: list[str]) -> links.Controls:
    return links.Controls(  # a shared address shows the same comparison; runs and metric keep their names of older links
        links.Control(key("compare_filter"), ""),
        links.Control(key("compare_runs"), ids[:3], links.parse_list(ids), param="runs"),
        links.Control(key("compare_metric"), ["loss"], links.parse_list(list(COMPARED)), param="metric"),
        links.Control(key("compare_x"), "step", options=list(X_AXES)),
        links.Control(key("compare_smooth"), SMOOTHING, links.parse_float(0.0, 0.99)),
        links.Control(key("compare_log"), False, links.parse_bool))


def pick_runs(controls: links.Controls, runs: list[RunInfo]) -> list[str]:
    """The filter and the runs picked among those it lists. A new filter that lists none of the runs
    picked picks all it lists (the filter is the pick, as in TensorBoard); a run removed since is dropped."""
    pattern = st.text_input("Filter runs", key=key("compare_filter"), placeholder="a regular expression: sop|nsp, lr-.*",
                            help="Lists only the runs whose id or name it finds (any case).")
    listed, problem = matching(runs, pattern)
    if problem:
        st.caption(problem)
    ids, before = [r.id for r in runs], controls[key("compare_runs")]
    still = [r for r in before if r in listed]
    state = kept(TrainingState)
    if pattern != state.compare_filter_seen and pattern and not still:
        still = listed
    elif not still and before and not pattern:  # all picked ones removed: the newest
        still = ids[:3]
    state.compare_filter_seen = pattern
    set_widget(key("compare_runs"), still)
    if pattern and not listed:
        st.caption(f"No run's id or name holds {quoted(pattern)}.")
    return st.multiselect("Runs", listed, key=key("compare_runs"),
                          help=f"{len(listed)} of {len(ids)} runs listed" + (" (filtered)" if pattern else ""))


def run_frames(picked: list[str]) -> tuple[list[pd.DataFrame], list[str]]:
    """The picked runs' training rows, a 'run' column naming each (two runs of one name and objective are told apart
    by their ids, in the legend and in runs.csv) and its id; and what is said of each picked run with no row yet."""
    infos = [read_run(runs_dir() / run_id) for run_id in picked]
    labels = [f"{info.name} ({info.config.get('objective')})" for info in infos]
    frames, empty = [], []
    for info, label in zip(infos, labels, strict=True):
        run = label if labels.count(label) == 1 else f"{label[:-1]}, {info.id})"
        if rows := info.metrics("train"):
            frames.append(pd.DataFrame(rows).assign(run=run, run_id=info.id))
        else:
            empty.append(f"{run} has logged no step yet ({info.status})" if info.active
                         else f"{run} logged no step ({info.status})")
    return frames, empty


def curves_of(frames: list[pd.DataFrame], metrics: list[str], x: str, weight: float, missing: list[str]) -> pd.DataFrame:
    """Each run's curve of each metric (albert_lab.training.curves.curve), a caption for what a run lacks (after
    `missing`, what is already known to be missing)."""
    parts, missing = [], list(missing)
    for frame in frames:
        run = frame.run.iloc[0]
        if x == "tokens" and "tokens" not in frame:
            missing.append(f"{run} logged no tokens seen")
            continue
        for metric in metrics:
            line = curve(frame, metric, x, weight)
            if len(line):
                parts.append(line.assign(run=run, metric=metric))
            else:
                missing.append(f"no {COMPARED[metric]} for {run}" + (": not measured (no pair task was trained)"
                                                                     if metric.startswith("pair") else ""))
    if missing:
        st.caption("Not drawn: " + plain("; ".join(missing)) + ".")  # run names, as text
    return pd.concat(parts) if parts else pd.DataFrame(columns=["x", "raw", "smoothed", "run", "metric"])


def compare_runs() -> None:
    """The runs picked, a panel per metric, smoothed, against the x axis chosen."""
    runs = list_runs(runs_dir())
    if not runs:  # nothing picked yet either: the first runs started in this session are picked when they come
        st.info("No runs to compare yet: start one under 'New run'.")
        return
    controls = controls_for([r.id for r in runs])
    controls.restore()
    picked = pick_runs(controls, runs)
    top = st.columns([3, 2])
    metrics = top[0].multiselect("Metrics", list(COMPARED), format_func=COMPARED.get, key=key("compare_metric"))
    x = top[1].radio("Against", list(X_AXES), horizontal=True, key=key("compare_x"),
                     help="Wall time counts from each run's own start, a resumed run's pause included.")
    low = st.columns([3, 2])
    weight = low[0].slider("Smoothing", 0.0, 0.99, step=0.01, key=key("compare_smooth"),
                           help="TensorBoard's: an exponential moving average of this weight, debiased so the first "
                                "points are not pulled towards 0; the raw line is drawn faint behind it. 0: none.")
    log_y = low[1].toggle("Log scale (y)", key=key("compare_log"))
    controls.share(compare_filter=controls[key("compare_filter")] or None)  # no empty filter in links
    frames, empty = run_frames(picked)
    if not metrics:
        st.caption("Pick a metric to draw.")
    elif len(lines := curves_of(frames, metrics, x, weight, empty)):
        panels = [(m, COMPARED[m]) for m in metrics if m in set(lines.metric)]
        draw.chart(training_figures.runs_figure(lines, panels, x, weight, log_y), "runs-" + "-".join(metrics))
    if frames:
        draw.download(pd.concat(frames), "runs.csv")  # every training row, raw; an unmeasured metric is an empty cell
