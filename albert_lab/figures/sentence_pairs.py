"""Figures of the Sentence pairs page: a pair's two orders, and an uploaded file's
accuracy (with its interval) or spread of scores."""

from __future__ import annotations

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go

from albert_lab.figures.look import SERIES_COLOURS, chance_line, colour_for, colour_map, style, styled, themed

HEAD_SHORT = {"sop": "SOP: in order?", "nsp": "NSP: is next?"}  # the accuracy chart's axis, under each checkpoint
ORDERS = {"p_ab": "A → B (as typed)", "p_ba": "B → A (swapped)"}
ORDER_COLOURS = dict(zip(ORDERS.values(), SERIES_COLOURS))  # the same in light and dark themes


@themed
def pair_figure(scores: pd.DataFrame) -> go.Figure:
    """P(label 0) of each checkpoint for the pair as typed and swapped. Built for each visitor's
    own pair, so from plain dicts (look.styled: a tenth of plotly express's time)."""
    bars = []
    for column, name in ORDERS.items():
        rows = scores.dropna(subset=[column])  # a checkpoint without a usable pair head: no bar (its warning says why)
        bars.append(dict(type="bar", name=name, x=list(rows.checkpoint), y=list(rows[column]), customdata=list(rows["head"]),
                         marker=dict(color=ORDER_COLOURS[name]),
                         hovertemplate="%{x}, %{customdata} head<br>P(label 0) = %{y:.3f}"))
    return styled(bars, dict(barmode="group", title=dict(text="P(original order) for SOP heads, P(is next) for NSP heads"),
                             xaxis=dict(title=dict(text="checkpoint")),
                             yaxis=dict(title=dict(text="P(label 0)"), range=[0, 1])),
                  legend_title="order", chance=0.5)


@themed
def accuracy_figure(labelled: pd.DataFrame, always: float | None = None) -> go.Figure:
    """Accuracy with its 95% interval per checkpoint (analysis.pairs.labelled_accuracy), each named with
    the question its head answers (an SOP head's accuracy and an NSP head's are not the same measure), and
    `always`, when given, the accuracy of always answering the file's commoner label."""
    fig = px.scatter(labelled, x="checkpoint", y="accuracy", range_y=[0, 1.04], title="Share of labelled pairs right (95% interval)",
                     error_y=labelled.high - labelled.accuracy, error_y_minus=labelled.accuracy - labelled.low,
                     color="checkpoint", color_discrete_map=colour_map(labelled.checkpoint),
                     labels={"accuracy": "share right"}, hover_data={"labelled": True, "head": True})
    fig.update_traces(cliponaxis=False, marker_size=11)  # a perfect score sits on the top edge, drawn whole
    fig.update_xaxes(tickvals=list(labelled.checkpoint), title_text="",
                     ticktext=[f"{name}<br>{HEAD_SHORT.get(head, head)}" for name, head in zip(labelled.checkpoint, labelled["head"])])
    fig = chance_line(style(fig))
    if always is not None and always - 0.5 >= 0.05:  # a second line, far enough from chance for both labels to read
        fig = chance_line(fig, always, "always<br>one label")
    return fig


@themed
def scores_figure(scores: pd.DataFrame) -> go.Figure:
    """A scored file's figure (analysis.pairs.score_pairs' frame), as the Sentence pairs page draws an upload: with
    labels, each checkpoint's accuracy with its interval beside always answering the commoner label; else how
    P(A → B) spreads over the file."""
    from albert_lab.analysis.pairs import labelled_accuracy, majority, summarize

    labelled = labelled_accuracy(summarize(scores))
    if len(labelled):
        return accuracy_figure.__wrapped__(labelled, majority(scores)[1])  # in the theme this call was given
    return spread_figure.__wrapped__(scores)


@themed
def spread_figure(scores: pd.DataFrame) -> go.Figure:
    """How P(A → B) is spread over a file without labels."""
    fig = px.histogram(scores.dropna(subset=["p_ab"]), x="p_ab", color="checkpoint", nbins=20, barmode="overlay",
                       range_x=[0, 1], title="P(label 0 | A → B) over the file (no usable labels)",
                       color_discrete_map=colour_map(scores.checkpoint), labels={"p_ab": "P(label 0 | A → B)"})
    fig.update_yaxes(title_text="pairs")
    return style(fig)


@themed
def slice_figure(table: pd.DataFrame, by: str) -> go.Figure:
    """Accuracy with its 95% interval per group of a slice (analysis.slices.slice_accuracy), a point per
    checkpoint side by side in each group, in the checkpoint's colour; groups without labelled pairs left out."""
    table = table[table.n > 0]
    traces = []
    for name, rows in table.groupby("checkpoint", sort=False):
        traces.append(go.Scatter(
            x=list(rows.slice.astype(str)), y=list(rows.accuracy), name=name, mode="markers", offsetgroup=name,
            marker=dict(color=colour_for(name), size=10), cliponaxis=False,
            error_y=dict(type="data", symmetric=False, array=list(rows.high - rows.accuracy),
                         arrayminus=list(rows.accuracy - rows.low)),
            customdata=list(zip(rows.hits, rows.n, rows.low, rows.high)),
            hovertemplate=f"{name}, %{{x}}<br>%{{customdata[0]}} of %{{customdata[1]}} right: %{{y:.2f}} "
                          "[%{customdata[2]:.2f}-%{customdata[3]:.2f}]<extra></extra>"))
    fig = go.Figure(traces, layout=dict(scattermode="group", scattergap=0.5,
                                        title=dict(text=f"Share right by {by} (95% interval)")))
    fig.update_xaxes(type="category", categoryorder="array", categoryarray=list(dict.fromkeys(table.slice.astype(str))))
    fig.update_yaxes(range=[0, 1.04])
    fig = style(fig, y="share right")
    # the legend under the groups: above the plot, four checkpoints on a phone's four lines ran into the title
    fig.update_layout(legend=dict(yanchor="top", y=-0.12), margin_t=70)
    return chance_line(fig)
