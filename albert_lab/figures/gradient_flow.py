"""The Gradient flow page's figures (also drawn by scripts/make_figures.py for docs/results.md)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.express as px
import plotly.graph_objects as go

from albert_lab.figures.look import COMPONENT_COLORS, GRAD_AXIS, SERIES_COLOURS, style, themed


@themed
def gradflow_figure(frame: pd.DataFrame, name: str | None = None) -> go.Figure:
    """Mean (solid) and max (dashed) |dL/dW| per layer application, by component (`frame`: analysis.gradflow's;
    `name`: the checkpoint's, its own by default)."""
    name = name or str(frame.checkpoint.iloc[0])
    per_app = frame[frame.view == "per_application"]
    long = per_app.melt(id_vars=["layer", "component"], value_vars=["mean_abs", "max_abs"], var_name="statistic")
    long["statistic"] = long.statistic.map({"mean_abs": "mean", "max_abs": "max"})
    fig = px.line(long, x="layer", y="value", color="component", line_dash="statistic", markers=True,
                  color_discrete_map=COMPONENT_COLORS, line_dash_map={"mean": "solid", "max": "dash"},  # as the title says
                  title=f"{name}: |dL/dW| per layer application (solid: mean, dashed: max)")
    return style(fig, x="layer application", y="|dL/dW| (log scale)", layers=True, log_y=True)


@themed
def gradflow_side_by_side(frames: list[pd.DataFrame]) -> go.Figure:
    """gradflow_figure of several checkpoints, a panel each on one log axis (the docs' image, scripts/make_figures.py)."""
    from plotly.subplots import make_subplots

    names = [str(f.checkpoint.iloc[0]) for f in frames]
    fig = make_subplots(rows=1, cols=len(frames), subplot_titles=names, shared_yaxes=True)
    for col, (frame, name) in enumerate(zip(frames, names, strict=True), start=1):
        for trace in gradflow_figure.__wrapped__(frame, name).data:
            trace.showlegend = col == 1
            fig.add_trace(trace, row=1, col=col)
    fig.update_yaxes(type="log")
    fig.update_xaxes(title_text="layer application", dtick=1)
    return fig.update_layout(height=420, title="Gradient flow per layer application: mean (solid) and max (dashed) |dL/dW|")


@themed
def shared_sum_figure(frame: pd.DataFrame) -> go.Figure:
    """The summed gradient of each shared block (what the optimizer sees), by component."""
    shared = frame[frame.view == "shared_sum"].assign(group=lambda f: "shared block, applications " + f.applications,
                                                      value=lambda f: f.mean_abs.map(lambda v: f"{v:.2g}"))
    # Points with their values, not bars: on a log axis a bar's length is measured from an arbitrary floor, so
    # 0.0018 beside 0.013 looked like nothing; a point's height on the log scale reads as a ratio.
    fig = px.scatter(shared, x="component", y="mean_abs", color="component", symbol="group", text="value",
                     color_discrete_map=COMPONENT_COLORS,
                     title="Shared blocks: mean |dL/dW| of the gradient summed over applications (what the optimizer sees)")
    fig.update_traces(marker_size=14, textposition="top center", cliponaxis=False)
    fig = style(fig, x="component", y="mean |dL/dW|, summed (log scale)", log_y=True, legend_title="")
    low, high = np.log10(shared.mean_abs[shared.mean_abs > 0].agg(["min", "max"]).to_numpy()) if len(shared) else (0, 0)
    # room for the top point and its value; within about a decade plotly labels every digit between powers of 10
    # (2x10^-3, 3x10^-3, ...), which crowd at half the page: label 2 and 5 only
    return fig.update_yaxes(range=[low - 0.3, high + 0.3], dtick="D2")


@themed
def hidden_grad_figure(frame: pd.DataFrame) -> go.Figure:
    """|dL/dh| of the hidden state leaving each layer: mean (solid) and max (dashed), in colours
    of their own (the theme's colourway swapped them between light and dark)."""
    hidden = frame[frame.view == "hidden"].rename(columns={"mean_abs": "mean", "max_abs": "max"})
    fig = px.line(hidden, x="layer", y=["mean", "max"], markers=True, line_dash="variable",
                  color_discrete_map={"mean": SERIES_COLOURS[0], "max": SERIES_COLOURS[1]},
                  line_dash_map={"mean": "solid", "max": "dash"},
                  title="|dL/dh| of the hidden state leaving each layer (0: entering layer 1)")
    return style(fig, x="hidden state after layer (0 = embeddings)", y="|dL/dh| (log scale)", layers=True, log_y=True,
                 legend_title="statistic")


@themed
def gradflow_steps_figure(frame: pd.DataFrame, component: str, title: str) -> go.Figure:
    """One component's mean |dL/dW| per layer application, a line per training step
    (`frame`: analysis.gradflow.snapshot_frame)."""
    chosen = frame[(frame.view == "per_application") & (frame.component == component)]
    fig = px.line(chosen, x="layer", y="mean_abs", color="step", markers=True, title=title)
    return style(fig, x="layer application", y=GRAD_AXIS, layers=True, log_y=True, legend_title="training step")
