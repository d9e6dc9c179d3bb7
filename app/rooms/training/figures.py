"""Figures of training runs: a run's losses and accuracies as it trains, runs side by
side, and the shipped checkpoints' learning curves (scripts/make_figures.py)."""

from __future__ import annotations

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go

from app.shell.built import built_once
from app.shell.look import NEUTRAL, SERIES_COLOURS, chance_line, colour_map, style

LOSSES = {"loss": "total", "mlm_loss": "MLM", "pair_loss": "pair (SOP or NSP)"}
HELD_OUT = {"eval_mlm_acc": "MLM", "eval_nsp_acc": "NSP", "eval_sop_acc": "SOP", "eval_sop_interior_acc": "SOP interior"}
STEP = {"step": "optimizer step"}


@built_once
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


@built_once
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


@built_once
def runs_figure(frame: pd.DataFrame, metric: str, title: str) -> go.Figure:
    """One metric of several runs by step (`frame`: their training rows with a 'run' column)."""
    fig = px.line(frame, x="step", y=metric, color="run", title=f"{title} by run",
                  markers=frame.groupby("run").size().max() < 30,  # a short run's one or two points still show
                  labels={**STEP, metric: title})
    return style(fig, legend_title="run")


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
