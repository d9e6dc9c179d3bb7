"""Figures for the "Shared layer, applied again" page, built from the tidy frames of
albert_lab.analysis.reapply, .attention and .cka."""

from __future__ import annotations

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from albert_lab.figures.look import MAIN_PX, NEUTRAL, colour_for, themed

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


@themed
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


@themed
def lens_figure(frame: pd.DataFrame) -> go.Figure:
    """Logit lens: masked-token accuracy and NLL of every state through the MLM head."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=("Masked-token accuracy", "NLL of the right token (nats)"))
    _lines(fig, frame, ["mlm_accuracy", "nll"])
    fig.update_xaxes(title_text="application", **application_ticks(frame))
    fig.update_yaxes(tickformat=".0%", col=1)
    fig.update_layout(height=380, title="Each layer's state read through the model's own MLM head")
    return fig


@themed
def top_k_figure(frame: pd.DataFrame, name: str | None = None) -> go.Figure:
    """Top-k tokens (text) and their probabilities (colour) per application for one checkpoint (the first by default)."""
    name = name or str(frame.checkpoint.iloc[0])
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


@themed
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


@themed
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


@themed
def cka_figure(frame: pd.DataFrame) -> go.Figure:
    """Linear CKA between the applications of one checkpoint (rows) and another's, or its own (columns)."""
    grid = frame.pivot(index="application_x", columns="application_y", values="cka")
    fig = px.imshow(grid, zmin=0, zmax=1, color_continuous_scale="Blues", text_auto=".2f" if len(grid) <= READABLE else False,
                    aspect="auto", labels=dict(y=frame.checkpoint_x.iloc[0], x=frame.checkpoint_y.iloc[0], color="CKA"),
                    title=f"Linear CKA, {frame.checkpoint_x.iloc[0]} vs {frame.checkpoint_y.iloc[0]} "
                          f"(unit: {frame.unit.iloc[0]}, N = {frame.n.iloc[0]})")
    # the page's width and a row height that fits the numbers (a square kept ALBERT vs BERT at a few cm)
    fig.update_layout(height=max(420, 40 * len(grid) + 160))
    fig.update_xaxes(dtick=1)
    return fig.update_yaxes(dtick=1)


# bertviz's model view draws the first tokens only: its 144 thumbnails of T x T cells (12 applications x 12 heads)
# were too small to read past 32. Its head view is albert_lab/figures/head_view.py.
MODEL_VIEW_TOKENS = 32
VALUE_TITLES = {"weight": "weight alpha_ij", "norm_weighted": "norm-weighted ||alpha_ij f(x_j)||"}


def first_tokens(maps: pd.DataFrame, limit: int) -> tuple[pd.DataFrame, int]:
    """The maps among the first `limit` tokens (queries and keys), and how many tokens the text has."""
    tokens = int(maps["query"].max()) + 1
    return maps[(maps["query"] < limit) & (maps["key"] < limit)], tokens


def token_pieces(maps: pd.DataFrame) -> list[str]:
    """The tokenizer's pieces in order, as the maps name the keys."""
    return [str(t) for t in maps.drop_duplicates("key").sort_values("key").key_token]


def _thumbnail_axes(rows: int, cols: int, gap: float = 0.006) -> list[tuple[dict, dict]]:
    """(x, y) axis layouts of a rows x cols grid, row by row from the top: domains set here, as
    make_subplots took 1.5 s for 12 x 12 and a figure built from these a tenth of that."""
    width, height = (1 - gap * (cols - 1)) / cols, (1 - gap * (rows - 1)) / rows
    bare = dict(showticklabels=False, showgrid=False, zeroline=False, ticks="", fixedrange=True)
    axes = []
    for r in range(rows):
        for c in range(cols):
            n = r * cols + c + 1
            suffix = "" if n == 1 else str(n)
            top = 1 - r * (height + gap)
            axes.append((dict(bare, domain=[c * (width + gap), c * (width + gap) + width], anchor=f"y{suffix}"),
                         dict(bare, domain=[top - height, top], anchor=f"x{suffix}", autorange="reversed")))
    return axes


@themed
def model_view_figure(maps: pd.DataFrame, value: str = "weight") -> go.Figure:
    """bertviz's model view: a thumbnail heatmap per application (rows) and head (columns),
    rows attending to columns, on one colour scale; hover names the application, head and tokens."""
    part = maps[maps.inner == 0].sort_values(["application", "head", "query", "key"])
    applications, heads = sorted(part.application.unique()), sorted(part["head"].unique())
    labels = [f"{i} {piece}" for i, piece in enumerate(token_pieces(part))]  # numbered: a piece can come twice
    t = len(labels)
    grids = part[value].to_numpy().reshape(len(applications), len(heads), t, t)  # (A, heads, query, key)
    axes = _thumbnail_axes(len(applications), len(heads))
    data, layout = [], {}
    for n, (x_axis, y_axis) in enumerate(axes):
        r, c = divmod(n, len(heads))
        suffix = "" if n == 0 else str(n + 1)
        layout[f"xaxis{suffix}"], layout[f"yaxis{suffix}"] = x_axis, y_axis
        data.append(dict(type="heatmap", z=grids[r, c], x=labels, y=labels, coloraxis="coloraxis", xaxis=f"x{suffix}",
                         yaxis=f"y{suffix}", name=f"application {applications[r]}, head {heads[c]}",
                         hovertemplate=f"application {applications[r]}, head {heads[c]}<br>from %{{y}}<br>to %{{x}}: "
                                       "%{z:.3f}<extra></extra>"))
    cell = min(90, max(40, MAIN_PX // len(heads)))  # a thumbnail's height: square at 12 heads in the main column
    label = dict(xref="paper", yref="paper", showarrow=False, font_size=11)
    # heads by number, "head" once in the corner: "head 10" over each 17-px column of a phone ran together
    notes = [dict(label, text=str(h), x=axes[c][0]["domain"][0], y=1, xanchor="left", yanchor="bottom") for c, h in enumerate(heads)]
    notes.append(dict(label, text="head", x=0, y=1, xanchor="right", xshift=-4, yanchor="bottom"))
    notes += [dict(label, text=f"app {a}", x=0, xanchor="right", xshift=-4, y=sum(axes[r * len(heads)][1]["domain"]) / 2)
              for r, a in enumerate(applications)]
    shapes = []
    if "depth_L" in part and (depth := int(part.depth_L.iloc[0])) < len(applications):  # applied again past its depth
        below = (axes[(depth - 1) * len(heads)][1]["domain"][0] + axes[depth * len(heads)][1]["domain"][1]) / 2
        shapes.append(dict(type="line", xref="paper", yref="paper", x0=-0.06, x1=1, y0=below, y1=below,
                           line=dict(color=NEUTRAL, width=2, dash="dot")))
        notes.append(dict(label, text=f"trained depth L = {depth}; below, the block applied again", x=1, xanchor="right",
                          y=below, yanchor="bottom", font=dict(size=11, color=NEUTRAL)))
    fig = go.Figure(data=data, layout=layout)
    fig.update_layout(height=cell * len(applications) + 150, annotations=notes, shapes=shapes, margin=dict(l=52, r=10, t=110, b=20),
                      coloraxis=dict(colorscale="Viridis", cmin=0, cmax=float(part[value].max()),
                                     colorbar=dict(title=value.replace("_", "-"), thickness=10)),
                      title=f"{maps.checkpoint.iloc[0]}: every application (rows) and head (columns), {VALUE_TITLES[value]}")
    return fig
