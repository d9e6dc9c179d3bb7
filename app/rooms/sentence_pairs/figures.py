"""Figures of the Sentence pairs page: a pair's two orders, and an uploaded file's
accuracy (with its interval) or spread of scores."""

from __future__ import annotations

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go

from app.shell.built import built_once
from app.shell.look import SERIES_COLOURS, chance_line, colour_map, style

ORDERS = {"p_ab": "A → B (as typed)", "p_ba": "B → A (swapped)"}
ORDER_COLOURS = dict(zip(ORDERS.values(), SERIES_COLOURS))  # the same in light and dark themes


@built_once
def pair_figure(scores: pd.DataFrame) -> go.Figure:
    """P(label 0) of each checkpoint for the pair as typed and swapped."""
    long = scores.melt(id_vars=["checkpoint", "head"], value_vars=list(ORDERS), var_name="order")
    long["order"] = long["order"].map(ORDERS)
    fig = px.bar(long.dropna(), x="checkpoint", y="value", color="order", barmode="group", range_y=[0, 1],
                 color_discrete_map=ORDER_COLOURS,
                 hover_data=["head"], labels={"value": "P(label 0)", "checkpoint": "checkpoint", "order": "order"},
                 title="P(original order) for SOP heads, P(is next) for NSP heads")
    return chance_line(style(fig, legend_title="order"))


@built_once
def accuracy_figure(labelled: pd.DataFrame) -> go.Figure:
    """Accuracy with its 95% interval per checkpoint (analysis.pairs.labelled_accuracy)."""
    fig = px.scatter(labelled, x="checkpoint", y="accuracy", range_y=[0, 1.04], title="Accuracy on the labelled pairs (95% interval)",
                     error_y=labelled.high - labelled.accuracy, error_y_minus=labelled.accuracy - labelled.low,
                     color="checkpoint", color_discrete_map=colour_map(labelled.checkpoint),
                     labels={"accuracy": "accuracy (fraction)"})
    fig.update_traces(cliponaxis=False, marker_size=11)  # a perfect score sits on the top edge, drawn whole
    return chance_line(style(fig))


@built_once
def spread_figure(scores: pd.DataFrame) -> go.Figure:
    """How P(A → B) is spread over a file without labels."""
    fig = px.histogram(scores.dropna(subset=["p_ab"]), x="p_ab", color="checkpoint", nbins=20, barmode="overlay",
                       range_x=[0, 1], title="P(label 0 | A → B) over the file (no usable labels)",
                       color_discrete_map=colour_map(scores.checkpoint), labels={"p_ab": "P(label 0 | A → B)"})
    fig.update_yaxes(title_text="pairs")
    return style(fig)
