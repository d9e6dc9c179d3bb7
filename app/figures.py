"""Plotly figures built from the library's tidy frames; used by the pages and by
scripts/make_figures.py (the README's images), so both show the same thing."""

from __future__ import annotations

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go
from plotly.subplots import make_subplots

PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"]
COMPONENT_COLORS = {"attention": "#d62728", "FFN": "#1f77b4", "LayerNorm": "#2ca02c"}


def oscillation_figure(frame: pd.DataFrame) -> go.Figure:
    """L2 distance and angle per layer, one line per checkpoint (BERT dashed)."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=("L2 distance", "Angle (degrees)"))
    for i, (name, group) in enumerate(frame.groupby("checkpoint", sort=False)):
        color, dash = PALETTE[i % len(PALETTE)], "dash" if group.family.iloc[0] == "bert" else "solid"
        for col, (y, spread) in enumerate((("l2", "l2_spread"), ("angle_deg", "angle_spread")), start=1):
            fig.add_trace(go.Scatter(x=group.layer, y=group[y], name=name, legendgroup=name, showlegend=col == 1,
                                     mode="lines+markers", line=dict(color=color, dash=dash),
                                     error_y=dict(type="data", array=group[spread], visible=True, thickness=1)),
                          row=1, col=col)
    fig.update_xaxes(title_text="layer", dtick=1)
    fig.update_yaxes(rangemode="tozero")
    fig.update_layout(height=420, title="Input vs output of each layer (error bars: spread across texts)")
    return fig


def gradflow_figure(frame: pd.DataFrame, name: str) -> go.Figure:
    """Mean (solid) and max (dashed) |dL/dW| per layer application, by component."""
    per_app = frame[frame.view == "per_application"]
    long = per_app.melt(id_vars=["layer", "component"], value_vars=["mean_abs", "max_abs"], var_name="statistic")
    fig = px.line(long, x="layer", y="value", color="component", line_dash="statistic", markers=True, log_y=True,
                  color_discrete_map=COMPONENT_COLORS,
                  title=f"{name}: |dL/dW| per layer application (solid: mean, dashed: max)")
    fig.update_xaxes(dtick=1)
    return fig


def shared_sum_figure(frame: pd.DataFrame) -> go.Figure:
    """The summed gradient of each shared block (what the optimizer sees), by component."""
    shared = frame[frame.view == "shared_sum"].assign(group=lambda f: "from layer " + f.layer.astype(str))
    return px.bar(shared, x="component", y="mean_abs", color="component", pattern_shape="group", barmode="group",
                  log_y=True, color_discrete_map=COMPONENT_COLORS,
                  title="Summed over applications: mean |.grad| of the shared parameters")
