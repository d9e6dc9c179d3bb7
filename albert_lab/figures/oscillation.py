"""The Oscillation page's figures (also drawn by scripts/make_figures.py for docs/results.md)."""

from __future__ import annotations

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from albert_lab.figures.look import colour_for, colour_map, style, themed

# Axis titles short enough for the plot's height on a phone, where the legend's rows take the top of the chart
# ('L2 distance (hidden-state units)' was clipped at 390 px with several checkpoints picked).
PANELS = (("l2", "l2_spread", "L2 distance ||h_l - h_(l-1)||", "L2 distance (state units)"),
          ("angle_deg", "angle_spread", "Angle between h_l and h_(l-1)", "angle (degrees)"))


@themed
def oscillation_panels(frame: pd.DataFrame) -> tuple[go.Figure, go.Figure]:
    """L2 distance per layer and angle per layer, each a figure of its own (one line per
    checkpoint, BERT dashed): the page sets them side by side in columns, which a phone
    stacks (as two subplots of one figure they overlapped at 390 px)."""
    return tuple(_panel(frame, *panel) for panel in PANELS)


def _panel(frame: pd.DataFrame, y: str, spread: str, title: str, axis: str) -> go.Figure:
    fig = go.Figure(_traces(frame, y, spread, legend=True))
    fig.update_layout(title=f"{title} (error bars: spread across texts)")
    fig = style(fig, x="layer l", y=axis, layers=True, height=480)
    return fig.update_yaxes(rangemode="tozero", automargin=True)


def _traces(frame: pd.DataFrame, y: str, spread: str, legend: bool) -> list[go.Scatter]:
    traces = []
    for name, group in frame.groupby("checkpoint", sort=False):
        color, dash = colour_for(str(name)), "dash" if group.family.iloc[0] == "bert" else "solid"
        traces.append(go.Scatter(x=group.layer, y=group[y], name=name, legendgroup=name, showlegend=legend,
                                 mode="lines+markers", line=dict(color=color, dash=dash),
                                 error_y=dict(type="data", array=group[spread], visible=True, thickness=1)))
    return traces


@themed
def oscillation_figure(frame: pd.DataFrame) -> go.Figure:
    """The paper's Figure 1: both panels in one figure (a notebook's, the docs' image from scripts/make_figures.py);
    `frame`: albert_lab.analysis.oscillation.oscillation's."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=[title for *_, title, _ in PANELS])
    for col, (y, spread, _, axis) in enumerate(PANELS, start=1):
        for trace in _traces(frame, y, spread, legend=col == 1):
            fig.add_trace(trace, row=1, col=col)
        fig.update_yaxes(title_text=axis, row=1, col=col)
    fig.update_xaxes(title_text="layer l")
    fig.update_yaxes(rangemode="tozero")
    fig.update_layout(title="Input vs output of each layer (error bars: spread across texts)")
    fig = style(fig, layers=True, height=480)
    return fig.update_layout(legend_y=1.12, margin_t=140)  # above the subplot titles, not on them


@themed
def roughness_figure(verdicts: pd.DataFrame) -> go.Figure:
    """Roughness of each checkpoint's L2 curve (its zig-zag; lower: smoother), one bar per checkpoint."""
    # Bars across, names on the left: upright bars cut a long name ('converted:bert-sop-minilm-e64-all-ave...') and
    # squeezed the plot to 60 px. Values beyond their bars, so a roughness of 0.00 (no bar at all) still reads; the
    # scale is the measure's own, 0-1.
    # The title on one line: a title wrapped in this half-width column lost its first line at the top.
    fig = px.bar(verdicts, y="checkpoint", x="roughness", color="checkpoint", color_discrete_map=colour_map(verdicts.checkpoint),
                 orientation="h", text_auto=".2f", range_x=[0, 1.1], title="Roughness of the L2 curve")
    fig.update_traces(textposition="outside", cliponaxis=False)
    fig.update_layout(showlegend=False)
    fig.update_yaxes(autorange="reversed", automargin=True)
    fig = style(fig, x="roughness (0: no zig-zag)", y="", height=160 + 44 * len(verdicts))
    return fig.update_layout(margin_t=60)


@themed
def similarity_figure(sim: pd.DataFrame, name: str) -> go.Figure:
    """Mean cosine similarity of the token states after layer i and layer j (a square pivot)."""
    fig = px.imshow(sim, zmin=0, zmax=1, color_continuous_scale="Blues", text_auto=".2f",
                    labels=dict(x="hidden state after layer j", y="hidden state after layer i", color="cosine"),
                    title=f"{name}: mean cosine similarity of token states (0 = input to layer 1)")
    fig.update_xaxes(dtick=1)
    fig.update_yaxes(dtick=1)
    return style(fig)
