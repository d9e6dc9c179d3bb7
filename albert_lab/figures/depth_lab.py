"""The Depth lab's figures: a deep MLP's loss, accuracy and gradient per layer (a diverged
net kept up to its divergence and named so in the legend), its gradient over time, and
the VGG comparison; in the look of app/shell/look.py."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd
import plotly.express as px
import plotly.graph_objects as go

from albert_lab.figures.look import GRAD_AXIS, LAYER_TICKS, PALETTE, style, themed

HUGE_LOSS = 1e3  # cross-entropy of a 2-class problem starts near 0.69; beyond this it has blown up


def divergence(history: pd.DataFrame) -> dict[str, int]:
    """model -> first recorded step whose loss is not finite or huge (diverged runs only)."""
    out = {}
    for model, group in history.groupby("model", sort=False):
        bad = group[~np.isfinite(group.loss) | (group.loss.abs() > HUGE_LOSS)]
        if len(bad):
            out[str(model)] = int(bad.step.min())
    return out


def cut_at_divergence(frame: pd.DataFrame, diverged: dict[str, int]) -> pd.DataFrame:
    """Rows up to (not including) each diverged model's divergence step."""
    keep = [not (m in diverged and s >= diverged[m]) for m, s in zip(frame.model, frame.step)]
    return frame[keep]


def legend_names(models: Iterable[str], diverged: dict[str, int]) -> dict[str, str]:
    """model -> its legend's name, a diverged one's saying at which step."""
    return {m: f"{m} (diverged at step {diverged[m]})" if m in diverged else m for m in models}


@themed
def depth_figures(history: pd.DataFrame, flow: pd.DataFrame) -> dict[str, go.Figure]:
    """Loss, accuracy and last-step gradient per layer; a diverged model keeps its
    trace up to the divergence and says so in the legend."""
    diverged = divergence(history)
    names = legend_names(history.model.unique(), diverged)
    colours = {names[m]: PALETTE[i % len(PALETTE)] for i, m in enumerate(history.model.unique())}
    shown = cut_at_divergence(history, diverged).assign(model=lambda f: f.model.map(names))
    # keep every model in the legend even when nothing before the divergence was recorded
    missing = [names[m] for m in history.model.unique() if names[m] not in set(shown.model)]
    pad = pd.DataFrame({"model": missing, "step": [np.nan] * len(missing), "loss": [np.nan] * len(missing),
                        "test_accuracy": [np.nan] * len(missing)})
    shown = pd.concat([shown, pad], ignore_index=True) if missing else shown
    loss = px.line(shown, x="step", y="loss", color="model", color_discrete_map=colours, title="Training loss")
    loss = style(loss, x="SGD step", y="cross-entropy loss (nats)", legend_title="")
    _fit_loss_axis(loss, shown, [names[m] for m in diverged])
    accuracy = px.line(shown, x="step", y="test_accuracy", color="model", color_discrete_map=colours, range_y=[0, 1],
                       title="Test accuracy (chance: 0.5)")
    accuracy = style(accuracy, x="SGD step", y="test accuracy (fraction correct)", legend_title="")
    flow_ok = cut_at_divergence(flow, diverged)
    last = flow_ok[flow_ok.step == flow_ok.groupby("model").step.transform("max")].assign(model=lambda f: f.model.map(names))
    layers = px.line(last, x="layer", y="mean_abs", color="model", markers=True, color_discrete_map=colours,
                     title="Mean |dL/dW| per layer at the last step before any divergence (input -> output)")
    layers = style(layers, x="weight layer (1 = input)", y=GRAD_AXIS, layers=True, log_y=True, legend_title="")
    for half in (loss, accuracy):  # half the page wide: five names in rows above the plot covered its title
        half.update_layout(legend=dict(yanchor="top", y=-0.22), margin_t=60, margin_b=40 + 22 * len(names),
                           height=420 + 22 * len(names))
    return {"loss": loss, "accuracy": accuracy, "layers": layers}


def _fit_loss_axis(fig: go.Figure, shown: pd.DataFrame, diverged: list[str]) -> None:
    """A diverged net's last losses before it blew up (24.5 for a 32-layer residual net)
    flattened every other curve: the axis fits the nets that trained, and says what is
    above it."""
    healthy = shown[~shown.model.isin(diverged)].loss.dropna()
    if not diverged or healthy.empty or shown.loss.max() <= 1.5 * healthy.max():
        return
    top = 1.2 * healthy.max()
    fig.update_yaxes(range=[0, top])
    above = shown[shown.loss > top].groupby("model", sort=False).loss.max()
    fig.add_annotation(text="above the axis: " + "; ".join(f"{m} up to {v:.3g}" for m, v in above.items()),
                       xref="paper", yref="paper", x=1, y=1, xanchor="right", yanchor="top", showarrow=False)


@themed
def flow_heatmap(flow: pd.DataFrame, model: str) -> go.Figure:
    """log10 mean |dL/dW| of one model's layers (rows) at each recorded step (columns)."""
    grid = flow[flow.model == model].pivot(index="layer", columns="step", values="mean_abs")
    fig = px.imshow(grid.apply(lambda c: c.clip(lower=1e-12)).transform("log10"), aspect="auto",
                    color_continuous_scale="Viridis", labels=dict(x="SGD step", y="weight layer", color="log10 mean |dL/dW|"),
                    title=f"{model}: log10 mean |dL/dW| by layer and step")
    # the steps recorded and the layers as integers (a single recorded step was ticked 0.6, 0.8, 1, ...)
    fig.update_xaxes(tickformat="d", **(dict(tickvals=list(grid.columns)) if len(grid.columns) <= 12 else {}))
    fig.update_yaxes(tickformat="d", **(dict(dtick=1) if len(grid.index) <= LAYER_TICKS else {}))
    fig = style(fig, layers=False)
    # the colour scale under the plot, across it: at its right, upright, it took a third of a phone's width
    return fig.update_layout(coloraxis_colorbar=dict(orientation="h", x=0, xanchor="left", y=-0.3, yanchor="top",
                                                     thickness=12, len=1, title_side="top"), margin_b=120)


@themed
def vgg_figures(history: pd.DataFrame, flow: pd.DataFrame) -> dict[str, go.Figure]:
    """The VGG comparison: test accuracy over steps, and mean |dL/dW| per layer at the last step."""
    accuracy = px.line(history, x="step", y="test_accuracy", color="model", range_y=[0, 1],
                       title="Test accuracy on 8x8 digits (chance: 0.1)")
    accuracy = style(accuracy, x="SGD step", y="test accuracy (fraction correct)", legend_title="")
    last = flow[flow.step == flow.groupby("model").step.transform("max")]
    layers = px.line(last, x="layer", y="mean_abs", color="model", markers=True,
                     title="Mean |dL/dW| per layer at the last step")
    layers = style(layers, x="weight layer (1 = input)", y=GRAD_AXIS, layers=True, log_y=True, legend_title="")
    return {"accuracy": accuracy, "layers": layers}
