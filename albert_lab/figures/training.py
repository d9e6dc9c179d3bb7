"""Figures of training runs: a run's losses and accuracies as it trains, runs side by
side, and the shipped checkpoints' learning curves (scripts/make_figures.py)."""

from __future__ import annotations

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from albert_lab.figures.look import NEUTRAL, PALETTE, SERIES_COLOURS, chance_line, colour_map, style, themed

LOSSES = {"loss": "total", "mlm_loss": "MLM", "pair_loss": "pair (SOP or NSP)"}
HELD_OUT = {"eval_mlm_acc": "MLM", "eval_nsp_acc": "NSP", "eval_sop_acc": "SOP", "eval_sop_interior_acc": "SOP interior"}
STEP = {"step": "optimizer step"}


@themed
def loss_figure(train: pd.DataFrame, resumes: list[int]) -> go.Figure:
    """A run's training losses by step; a dotted line where it was resumed."""
    long = train.melt(id_vars=["step"], value_vars=[c for c in LOSSES if c in train], var_name="loss", value_name="nats")
    long["loss"] = long["loss"].map(LOSSES)
    fig = px.line(long, x="step", y="nats", color="loss", title="Training loss", markers=len(train) < 30,
                  color_discrete_map=dict(zip(LOSSES.values(), SERIES_COLOURS)),
                  labels={**STEP, "nats": "cross-entropy (nats)"})
    for resume in resumes:
        fig.add_vline(x=resume, line_dash="dot", line_color=NEUTRAL, annotation_text="resumed")
    return style(fig, legend_title="loss")


@themed
def accuracy_figure(train: pd.DataFrame, evals: pd.DataFrame) -> go.Figure:
    """Held-out accuracy by step once the run has evaluated, else training accuracy."""
    acc_cols = [c for c in HELD_OUT if c in evals]
    if len(evals) and acc_cols:
        long = evals.melt(id_vars=["step"], value_vars=acc_cols, var_name="task", value_name="accuracy")
        long["task"] = long["task"].map(HELD_OUT)
        fig = px.line(long, x="step", y="accuracy", color="task", markers=True, range_y=[0, 1], title="Held-out accuracy",
                      color_discrete_map=dict(zip(HELD_OUT.values(), SERIES_COLOURS)),
                      labels={**STEP, "accuracy": "accuracy (fraction)"})
    else:
        measured = [c for c in ("mlm_acc", "pair_acc") if c in train]  # no pair accuracy where no pair task was trained
        long = train.melt(id_vars=["step"], value_vars=measured, var_name="task", value_name="accuracy")
        long["task"] = long["task"].map({"mlm_acc": "MLM", "pair_acc": "pair task"})
        fig = px.line(long, x="step", y="accuracy", color="task", range_y=[0, 1], title="Training accuracy", markers=len(train) < 30,
                      labels={**STEP, "accuracy": "accuracy (fraction)"})
    chance_line(fig, label="chance (pair tasks)", position="top left")
    return style(fig, legend_title="task")


# Compare runs: the raw line behind the smoothed one, as TensorBoard draws it; a wall time shown in a unit that reads
RAW_OPACITY = 0.25
TIME_UNITS = ((2 * 3600, 3600, "hours"), (120, 60, "minutes"), (0, 1, "seconds"))  # from this many seconds up: divisor, unit
X_TITLES = {"step": "optimizer step", "tokens": "tokens seen", "wall time": "wall time from the run's start"}


def time_unit(seconds: float) -> tuple[float, str]:
    """The divisor and unit of a wall-time axis reaching `seconds`."""
    return next((div, unit) for low, div, unit in TIME_UNITS if seconds >= low)


def run_colours(runs: list[str]) -> dict[str, str]:
    """One qualitative colour per run, in the order given, the same in every panel (plotly's theme colours were shades
    of one blue); 18 runs before one repeats."""
    return {run: PALETTE[i % len(PALETTE)] for i, run in enumerate(runs)}


@themed
def runs_figure(curves: pd.DataFrame, panels: list[tuple[str, str]], x: str, weight: float, log_y: bool) -> go.Figure:
    """Runs' metrics, a panel per (metric, label) of `panels` stacked on one x axis (`x`, a key of X_TITLES).
    `curves`: columns run, metric, x, raw, smoothed (albert_lab.training.curves.curve per run and metric).
    Each run a colour in every panel, its smoothed line drawn over its raw one, faint, when `weight` > 0."""
    runs = list(dict.fromkeys(curves.run))
    colours, n = run_colours(runs), len(panels)
    div, unit = time_unit(curves.x.max() if len(curves) else 0) if x == "wall time" else (1, "")
    plot_px = max(300, 240 * n)
    fig = make_subplots(rows=n, cols=1, shared_xaxes=True, vertical_spacing=min(0.3, 40 / plot_px))
    mode = "lines+markers" if curves.groupby(["run", "metric"]).size().max() < 30 else "lines"  # one or two points still show
    legend: set[str] = set()
    for row, (metric, label) in enumerate(panels, 1):
        fig.update_yaxes(title_text=label, row=row, col=1)  # a panel's name on its axis: a title over it met the legend
        for run in runs:
            line = curves[(curves.run == run) & (curves.metric == metric)]
            if not len(line):
                continue
            common = dict(x=line.x / div, mode=mode, legendgroup=run, line=dict(color=colours[run]), marker=dict(size=5))
            if weight > 0:
                fig.add_scatter(y=line.raw, name=f"{run} (raw)", showlegend=False, opacity=RAW_OPACITY, **common, row=row, col=1)
            fig.add_scatter(y=line.smoothed, name=run, showlegend=run not in legend, **common, row=row, col=1)
            legend.add(run)
    title = (panels[0][1] if n == 1 else "Training metrics") + " by run" + (f", smoothed (EMA weight {weight:g})" if weight else "")
    fig.update_layout(title_text=title, height=110 + plot_px)
    fig.update_xaxes(title_text=X_TITLES[x] + (f" ({unit})" if unit else ""), row=n, col=1)
    return style(fig, log_y=log_y, legend_title="run")


@themed
def learning_curve_figure(curves: pd.DataFrame, reference: dict[str, list[tuple[float, float]]] | None = None) -> go.Figure:
    """Held-out accuracy during training against tokens seen, one colour per run, one
    dash per task; chance at 0.5 for the pair tasks. `reference`: named (tokens,
    accuracy) points measured elsewhere, drawn in grey."""
    names = {"eval_sop_interior_acc": "SOP interior", "eval_sop_lead_acc": "SOP lead", "eval_sop_acc": "SOP", "eval_nsp_acc": "NSP",
             "eval_mlm_acc": "MLM"}
    long = curves.melt(id_vars=["checkpoint", "tokens"], value_vars=[c for c in names if c in curves], var_name="task",
                       value_name="accuracy")
    long["task"] = long["task"].map(names)
    long["tokens (millions)"] = long["tokens"] / 1e6
    fig = px.line(long, x="tokens (millions)", y="accuracy", color="checkpoint", line_dash="task", markers=True,
                  color_discrete_map=colour_map(long.checkpoint.unique()), range_y=[0, 1],
                  title="Held-out accuracy during training (600 pairs per task per evaluation)")
    for name, points in (reference or {}).items():
        fig.add_scatter(x=[t / 1e6 for t, _ in points], y=[a for _, a in points], name=name, mode="markers+lines",
                        line=dict(color="#7f7f7f", dash="dot"), marker=dict(symbol="x", size=9))
    chance_line(fig, label="chance (pair tasks)", position="top left")
    return style(fig, x="tokens seen (millions)", y="accuracy (fraction)", legend_title="")
