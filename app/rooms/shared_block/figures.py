"""Figures for the "Shared layer, applied again" page, built from the tidy frames of
albert_lab.analysis.reapply, .attention and .cka."""

from __future__ import annotations

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from app.shell.built import built_once
from app.shell.look import NEUTRAL, colour_for

READABLE = 13  # columns of a heatmap that still leave room for text in its cells


def application_ticks(frame: pd.DataFrame) -> dict:
    """Integer ticks over the applications drawn (0..n), no -1 or n + 1: every one up to
    12, else every L-th (the depth the block was trained at). Heatmaps write words or
    numbers in their cells at these ticks only."""
    last = int(frame.application.max())
    depth = int(frame.depth_L.min()) if "depth_L" in frame else 1
    return dict(range=[-0.5, last + 0.5], tick0=0, dtick=1 if last < READABLE else max(1, depth))


def _lines(fig: go.Figure, frame: pd.DataFrame, columns: list[str]) -> None:
    """One line per checkpoint in each panel (a column of `frame` per panel): the
    checkpoint's own colour, as on every page (not its place in the selection); BERT dashed."""
    for name, group in frame.groupby("checkpoint", sort=False):
        line = dict(color=colour_for(name), dash="dash" if group.family.iloc[0] == "bert" else "solid")
        for col, y in enumerate(columns, start=1):
            fig.add_trace(go.Scatter(x=group.application, y=group[y], name=name, legendgroup=name, showlegend=col == 1,
                                     mode="lines+markers", line=line), row=1, col=col)


@built_once
def extrapolation_figure(frame: pd.DataFrame) -> go.Figure:
    """Step distance, distance to the state at depth L and masked-token accuracy per
    application, one line per checkpoint (BERT dashed); the dotted line marks depth L."""
    panels = (("l2_step", "Step ||h_a - h_(a-1)||"), ("l2_to_depth_L", "Distance to h_L"),
              ("mlm_accuracy", "Masked-token accuracy (own MLM head)"))
    fig = make_subplots(rows=1, cols=3, subplot_titles=[t for _, t in panels])
    _lines(fig, frame, [y for y, _ in panels])
    for depth in frame.depth_L.unique():
        fig.add_vline(x=int(depth), line_dash="dot", line_color=NEUTRAL)
    fig.update_xaxes(title_text="application (0 = entering layer 1)", **application_ticks(frame))
    fig.update_yaxes(rangemode="tozero")
    fig.update_yaxes(tickformat=".0%", col=3)  # percent, as the verdict's words say it
    fig.update_layout(height=420, title="The block applied beyond its trained depth L (dotted line)")
    return fig


@built_once
def lens_figure(frame: pd.DataFrame) -> go.Figure:
    """Logit lens: masked-token accuracy and NLL of every state through the MLM head."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=("Masked-token accuracy", "NLL of the right token (nats)"))
    _lines(fig, frame, ["mlm_accuracy", "nll"])
    fig.update_xaxes(title_text="application", **application_ticks(frame))
    fig.update_yaxes(tickformat=".0%", col=1)
    fig.update_layout(height=380, title="Each layer's state read through the model's own MLM head")
    return fig


@built_once
def top_k_figure(frame: pd.DataFrame, name: str) -> go.Figure:
    """Top-k tokens (text) and their probabilities (colour) per application for one checkpoint."""
    part = frame[frame.checkpoint == name]
    probs = part.pivot(index="rank", columns="application", values="probability")
    tokens = part.pivot(index="rank", columns="application", values="token")
    columns = len(probs.columns)
    # every application's words up to 26 columns (k = 4 of a 6-layer block), in a smaller type past 12 (labels at
    # every sixth application were too few to follow a word), then every other
    every = 1 if columns <= 2 * READABLE else -(-columns // (2 * READABLE))
    ticks = dict(application_ticks(part), dtick=every)
    text = tokens.to_numpy().astype(object)  # all of them on hover
    cut = columns > READABLE  # narrow cells: a long word ran into its neighbours ('knownestablish...')
    for j, application in enumerate(probs.columns):
        for i, word in enumerate(text[:, j]):
            word = str(word).removeprefix("\u2581")  # SentencePiece's word-start mark, not part of the word
            text[i, j] = "" if application % every and application != probs.columns[-1] else (
                word[:5] + "\u2026" if cut and len(word) > 6 else word)
    # one colour scale for every checkpoint's figure (each had its own maximum): p from 0 to the largest shown
    fig = go.Figure(go.Heatmap(z=probs.to_numpy(), x=probs.columns, y=probs.index, text=text, customdata=tokens.to_numpy(),
                               texttemplate="%{text}", textfont=dict(size=12 if columns <= READABLE else 9),
                               colorscale="Blues", colorbar=dict(title="p"), zmin=0, zmax=float(frame.probability.max()),
                               hovertemplate="application %{x}, rank %{y}: %{customdata} (p = %{z:.3f})<extra></extra>"))
    watched = part.watched.iloc[0]
    fig.update_layout(height=300, title=f"{name}: top predictions for {watched!r} after every application",
                      xaxis_title="application", yaxis_title="rank", yaxis_autorange="reversed", yaxis_dtick=1)
    fig.update_xaxes(**ticks)
    return fig


@built_once
def attention_figure(maps: pd.DataFrame, application: int, head: int) -> go.Figure:
    """Raw and norm-weighted attention of one head at one application, side by side."""
    part = maps[(maps.application == application) & (maps["head"] == head) & (maps.inner == 0)]
    t = int(part["query"].max()) + 1
    labels = [f"{i}:{tok}" for i, tok in enumerate(part.sort_values(["query", "key"]).key_token.iloc[:t])]
    # one set of row labels (shared y): the right panel's own labels would run into the left panel
    fig = make_subplots(rows=1, cols=2, subplot_titles=("weights alpha_ij", "norm-weighted ||alpha_ij f(x_j)||"),
                        shared_yaxes=True, horizontal_spacing=0.09)
    # each panel its own colour scale, in the gap beside it (the two are in different units; without scales
    # the colours could not be read)
    for col, (value, title, x) in enumerate((("weight", "alpha", 0.46), ("norm_weighted", "norm", 1.0)), start=1):
        z = part.pivot(index="query", columns="key", values=value).to_numpy()
        fig.add_trace(go.Heatmap(z=z, x=labels, y=labels, colorscale="Viridis",
                                 colorbar=dict(title=title, x=x, xanchor="left", thickness=12, len=0.9)), row=1, col=col)
    fig.update_yaxes(autorange="reversed")
    fig.update_yaxes(title_text="query (attends from)", col=1)
    fig.update_xaxes(title_text="key (attends to)")
    fig.update_layout(height=520, title=f"{maps.checkpoint.iloc[0]}: application {application}, head {head}")
    return fig


@built_once
def entropy_figure(frame: pd.DataFrame) -> go.Figure:
    """Attention entropy per application (x) and head (y), one panel per checkpoint;
    applications a model does not have stay blank."""
    names = list(dict.fromkeys(frame.checkpoint))
    fig = make_subplots(rows=1, cols=len(names), subplot_titles=names, shared_yaxes=True)
    low, high = frame.entropy.min(), frame.entropy.max()
    for col, name in enumerate(names, start=1):
        grid = frame[(frame.checkpoint == name) & (frame.inner == 0)].pivot(index="head", columns="application", values="entropy")
        # Numbered heads, not "head 3" categories: shared categorical y axes of unequal length (12 heads beside 4)
        # made plotly.js fail ("reading 'length'") and draw an empty box.
        fig.add_trace(go.Heatmap(z=grid.to_numpy(), x=grid.columns, y=list(grid.index), zmin=low, zmax=high,
                                 colorscale="Magma", showscale=col == 1, colorbar=dict(title="nats"),
                                 hovertemplate="application %{x}, head %{y}: %{z:.3f} nats<extra></extra>"), row=1, col=col)
    fig.update_xaxes(title_text="application", range=[0.5, frame.application.max() + 0.5])
    fig.update_yaxes(title_text="head", col=1)
    fig.update_yaxes(range=[frame["head"].max() + 0.5, -0.5], dtick=1 if frame["head"].max() < 16 else None)
    fig.update_layout(height=340, title="Attention entropy (nats) per application and head (low: focused, high: broad)")
    return fig


@built_once
def cka_figure(frame: pd.DataFrame) -> go.Figure:
    grid = frame.pivot(index="application_x", columns="application_y", values="cka")
    fig = px.imshow(grid, zmin=0, zmax=1, color_continuous_scale="Blues", text_auto=".2f" if len(grid) <= READABLE else False,
                    aspect="auto", labels=dict(y=frame.checkpoint_x.iloc[0], x=frame.checkpoint_y.iloc[0], color="CKA"),
                    title=f"Linear CKA, {frame.checkpoint_x.iloc[0]} vs {frame.checkpoint_y.iloc[0]} "
                          f"(unit: {frame.unit.iloc[0]}, N = {frame.n.iloc[0]})")
    # the page's width and a row height that fits the numbers (a square kept ALBERT vs BERT at a few cm)
    fig.update_layout(height=max(420, 40 * len(grid) + 160))
    fig.update_xaxes(dtick=1)
    return fig.update_yaxes(dtick=1)
