"""Plotly figures built from the library's tidy frames; used by the pages and by
scripts/make_figures.py (the README's images), so both show the same thing.

One style for all of them (`style`): axis titles with units, integer layer ticks,
readable log ticks, the legend above the plot (never on it), no hard-coded
backgrounds (Streamlit's light and dark themes both apply), and one colour per
checkpoint on every page (`colour_for`)."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd
import plotly.express as px
import plotly.graph_objects as go
from plotly.subplots import make_subplots

PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf",  # then mid-tones
           "#bcbd22", "#e15f99", "#b68100", "#00a08b", "#a777f1", "#eb663b", "#6c7c32", "#778aae", "#da60ca",
           "#b2828d"]  # 18: the shipped ones, runs and added folders in one process rarely wrap around (8 did)
COMPONENT_COLORS = {"attention": "#d62728", "FFN": "#1f77b4", "LayerNorm": "#2ca02c"}
GRAD_AXIS = "mean |dL/dW| (log scale)"
LAYER_TICKS = 16  # up to this many layers, one tick each
# Series that are not checkpoints (losses, tasks, orders), in a fixed order: the theme's
# colorway differs between light and dark, so plotly's defaults swapped them with the theme.
SERIES_COLOURS = ["#4c78a8", "#f58518", "#54a24b", "#b279a2"]
NEUTRAL = "#8c8c8c"  # reference lines (chance, depth L, resumed): mid grey, legible on light and dark

# Checkpoint -> palette slot, in the order checkpoints were first discovered (not the
# order of the current selection), so a model keeps its colour on every page.
_ORDER: list[str] = []


def register_checkpoints(names: Iterable[str]) -> None:
    """Remember discovered checkpoints in first-seen order; never reorders."""
    for name in names:
        if name not in _ORDER:
            _ORDER.append(name)


def shipped_first(entries: Iterable[dict]) -> list[dict]:
    """Shipped checkpoints: those uptrained from a real pretrained encoder first (they know
    English), then SOP-trained first (ALBERT's own objective), no pair objective last: the
    picker's default order (its first four), and the order that gives them their colours."""
    return sorted((c for c in entries if c["origin"] == "shipped"),
                  key=lambda c: (c["objective"] == "none", not c.get("uptrained", False), c["objective"] != "sop", c["name"]))


def colour_for(name: str) -> str:
    """A stable colour for a checkpoint: its discovery slot; a name not seen before takes
    the next free slot (a hash of the name let two checkpoints share a colour)."""
    register_checkpoints([name])
    return PALETTE[_ORDER.index(name) % len(PALETTE)]


def colour_map(names: Iterable[str]) -> dict[str, str]:
    return {name: colour_for(name) for name in names}


# ---- shared style -----------------------------------------------------------------------
def style(fig: go.Figure, *, x: str | None = None, y: str | None = None, layers: bool = False, log_y: bool = False,
          height: int | None = None, legend_title: str | None = None) -> go.Figure:
    """The look every figure shares. `layers`: integer ticks on x (no 1.5)."""
    if x is not None:
        fig.update_xaxes(title_text=x)
    if y is not None:
        fig.update_yaxes(title_text=y)
    if layers:  # a tick per layer while that reads; integer ticks chosen by plotly beyond (VGG-38, a 48-layer MLP)
        count = max((len(set(t.x)) for t in fig.data if getattr(t, "x", None) is not None), default=0)
        fig.update_xaxes(tickformat="d", **(dict(dtick=1, tick0=0) if count <= LAYER_TICKS else {}))
    if log_y:
        fig.update_yaxes(type="log", exponentformat="power", showexponent="all")
    fig.update_layout(
        legend=dict(orientation="h", yanchor="bottom", y=1.02, xanchor="left", x=0, title_text=legend_title),
        margin=dict(t=110, l=10, r=10, b=10),
        title=dict(y=0.97, yanchor="top", yref="container"),
        hoverlabel=dict(namelength=-1),
    )
    if height:
        fig.update_layout(height=height)
    return fig


def chance_line(fig: go.Figure, y: float = 0.5, label: str = "chance", position: str = "right") -> go.Figure:
    """A dotted line at chance, its label in the right margin (inside the plot it sat on the
    bars), in a grey that reads on both themes (plotly's default, near black, vanished on dark)."""
    fig.add_hline(y=y, line_dash="dot", line_color=NEUTRAL, line_width=1.5, annotation_text=label,
                  annotation_position=position, annotation_font_color=NEUTRAL)
    if position == "right":
        fig.update_layout(margin_r=64)
    return fig


def chart_config(filename: str, image_format: str = "png") -> dict:
    """st.plotly_chart(config=...): the modebar's camera saves PNG or SVG under a useful name."""
    return {"displaylogo": False,
            "toImageButtonOptions": {"format": image_format, "filename": filename, "scale": 2 if image_format == "png" else 1}}


# ---- figures ----------------------------------------------------------------------------
def oscillation_figure(frame: pd.DataFrame) -> go.Figure:
    """L2 distance and angle per layer, one line per checkpoint (BERT dashed)."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=("L2 distance ||h_l - h_(l-1)||", "Angle between h_l and h_(l-1)"))
    for name, group in frame.groupby("checkpoint", sort=False):
        color, dash = colour_for(str(name)), "dash" if group.family.iloc[0] == "bert" else "solid"
        for col, (y, spread) in enumerate((("l2", "l2_spread"), ("angle_deg", "angle_spread")), start=1):
            fig.add_trace(go.Scatter(x=group.layer, y=group[y], name=name, legendgroup=name, showlegend=col == 1,
                                     mode="lines+markers", line=dict(color=color, dash=dash),
                                     error_y=dict(type="data", array=group[spread], visible=True, thickness=1)),
                          row=1, col=col)
    fig.update_xaxes(title_text="layer l")
    fig.update_yaxes(rangemode="tozero")
    fig.update_yaxes(title_text="L2 distance (hidden-state units)", row=1, col=1)
    fig.update_yaxes(title_text="angle (degrees)", row=1, col=2)
    fig.update_layout(title="Input vs output of each layer (error bars: spread across texts)")
    fig = style(fig, layers=True, height=480)
    return fig.update_layout(legend_y=1.12, margin_t=140)  # above the subplot titles, not on them


def roughness_figure(verdicts: pd.DataFrame) -> go.Figure:
    """Roughness of each checkpoint's L2 curve (lower: smoother), one bar per checkpoint."""
    # Bars across, names on the left: upright bars cut a long name ('converted:bert-sop-minilm-e64-all-ave...') and
    # squeezed the plot to 60 px. Values beyond their bars, so a roughness of 0.00 (no bar at all) still reads; the
    # scale is the measure's own, 0-1.
    fig = px.bar(verdicts, y="checkpoint", x="roughness", color="checkpoint", color_discrete_map=colour_map(verdicts.checkpoint),
                 orientation="h", text_auto=".2f", range_x=[0, 1.1], title="Roughness of the L2 curve: lower is smoother")
    fig.update_traces(textposition="outside", cliponaxis=False)
    fig.update_layout(showlegend=False)
    fig.update_yaxes(autorange="reversed", automargin=True)
    fig = style(fig, x="roughness (share of the change undone)", y="", height=160 + 44 * len(verdicts))
    return fig.update_layout(margin_t=60)


def gradflow_figure(frame: pd.DataFrame, name: str) -> go.Figure:
    """Mean (solid) and max (dashed) |dL/dW| per layer application, by component."""
    per_app = frame[frame.view == "per_application"]
    long = per_app.melt(id_vars=["layer", "component"], value_vars=["mean_abs", "max_abs"], var_name="statistic")
    long["statistic"] = long.statistic.map({"mean_abs": "mean", "max_abs": "max"})
    fig = px.line(long, x="layer", y="value", color="component", line_dash="statistic", markers=True,
                  color_discrete_map=COMPONENT_COLORS,
                  title=f"{name}: |dL/dW| per layer application (solid: mean, dashed: max)")
    return style(fig, x="layer application", y="|dL/dW| (log scale)", layers=True, log_y=True)


def shared_sum_figure(frame: pd.DataFrame) -> go.Figure:
    """The summed gradient of each shared block (what the optimizer sees), by component."""
    shared = frame[frame.view == "shared_sum"].assign(group=lambda f: "shared block, applications " + f.applications,
                                                      value=lambda f: f.mean_abs.map(lambda v: f"{v:.2g}"))
    # Points with their values, not bars: on a log axis a bar's length is measured from an arbitrary floor, so
    # 0.0018 beside 0.013 looked like nothing; a point's height on the log scale reads as a ratio.
    fig = px.scatter(shared, x="component", y="mean_abs", color="component", symbol="group", text="value",
                     color_discrete_map=COMPONENT_COLORS, title="Shared parameters: mean |.grad|, summed over applications")
    fig.update_traces(marker_size=14, textposition="top center", cliponaxis=False)
    fig = style(fig, x="component", y="mean |.grad| (log scale)", log_y=True, legend_title="")
    low, high = np.log10(shared.mean_abs[shared.mean_abs > 0].agg(["min", "max"]).to_numpy()) if len(shared) else (0, 0)
    return fig.update_yaxes(range=[low - 0.3, high + 0.3])  # room for the top point and its value


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


def similarity_figure(sim: pd.DataFrame, name: str) -> go.Figure:
    """Mean cosine similarity of the token states after layer i and layer j (a square pivot)."""
    fig = px.imshow(sim, zmin=0, zmax=1, color_continuous_scale="Blues", text_auto=".2f",
                    labels=dict(x="hidden state after layer j", y="hidden state after layer i", color="cosine"),
                    title=f"{name}: mean cosine similarity of token states (0 = input to layer 1)")
    fig.update_xaxes(dtick=1)
    fig.update_yaxes(dtick=1)
    return style(fig)


def gradflow_steps_figure(frame: pd.DataFrame, component: str, title: str) -> go.Figure:
    """One component's mean |dL/dW| per layer application, a line per training step
    (`frame`: analysis.gradflow.snapshot_frame)."""
    chosen = frame[(frame.view == "per_application") & (frame.component == component)]
    fig = px.line(chosen, x="layer", y="mean_abs", color="step", markers=True, title=title)
    return style(fig, x="layer application", y=GRAD_AXIS, layers=True, log_y=True, legend_title="training step")


# ---- parameters -------------------------------------------------------------------------
def parameter_bars(rows: pd.DataFrame, title: str) -> go.Figure:
    long = rows.melt(id_vars="component", value_vars=["unique", "applied"], var_name="count", value_name="parameters")
    long["count"] = long["count"].map({"unique": "held in memory", "applied": "applied per forward pass"})
    fig = px.bar(long, x="component", y="parameters", color="count", barmode="group", title=title)
    fig.update_traces(hovertemplate="%{x}: %{y:,} parameters")
    return style(fig, x="component", y="parameters (count, log scale)", log_y=True, legend_title="")


def sweep_figure(frame: pd.DataFrame, field: str, axis: str, y: str) -> go.Figure:
    """Cost against one of E, H, L, a line per sharing strategy. Log y only where the values
    span a factor of 10 or more; else linear from 0, so a nearly flat cost looks flat.
    Lines that coincide (every strategy applies the same L blocks: same FLOPs) are said to."""
    values = frame[y].astype(float)
    log = values.max() / max(values.min(), 1e-12) >= 10
    name = "parameters" if y == "params" else "forward FLOPs per token"
    label = name + (" (log scale)" if log else "")
    same = frame.groupby(field)[y].nunique().max() == 1
    subtitle = "ALBERT-base otherwise" + ("; all sharing strategies coincide" if same else "")
    fig = px.line(frame, x=field, y=y, color="sharing", markers=True,
                  title=f"{'Parameters' if y == 'params' else 'Forward FLOPs per token'} vs {axis.split(' ')[0]}"
                        f"<br><sup>{subtitle}</sup>")
    fig.update_traces(hovertemplate="%{x:,}: %{y:,}")
    fig = style(fig, x=axis, y=label, log_y=log, legend_title="")
    if not log:
        fig.update_yaxes(rangemode="tozero", tickformat="~s")
    return fig
