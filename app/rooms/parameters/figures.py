"""The Parameters page's figures: parameters by component, cost against E, H or L, and
the "On real weights" tab's figure, what E and sharing cost all-MiniLM-L6-v2
(analysis.ablation.read_ablation's rows), the paper's numbers beside."""

from __future__ import annotations

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from albert_lab.spec import SHARING_LABELS
from app.shell.built import built_once
from app.shell.look import NEUTRAL, SERIES_COLOURS, style

# One colour per strategy, fixed (the themes' colorways differ); points of one E side by side.
SHARING_COLOURS = dict(zip(SHARING_LABELS, SERIES_COLOURS))
OFFSETS = dict(zip(SHARING_LABELS, (-0.18, -0.06, 0.06, 0.18)))
CORRECTION_HOVER = "open marker: measured a conversion bug fixed since (see below the table)"


@built_once
def ablation_figure(rows: pd.DataFrame, tokens: int) -> go.Figure:
    """Left: uptrained masked-token accuracy with its 95% interval per E, a colour per sharing
    strategy (failed rows have no point; rows a later correction qualifies are open markers). Right: the paper's average downstream score of
    ALBERT-base trained from scratch for the same choices (E = H is 384 here, 768 there)."""
    sizes = sorted(rows.E.unique())
    position = {e: i for i, e in enumerate(sizes)}
    hidden = max(sizes)  # the grid's largest E is the model's H
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.1, subplot_titles=(
        f"MiniLM made ALBERT, uptrained ({tokens / 1e6:.1f}M tokens)", "The paper: ALBERT-base from scratch"))
    for sharing, group in rows.groupby("sharing", sort=False):
        colour, name = SHARING_COLOURS[sharing], SHARING_LABELS[sharing]
        done = group[~group.failed]
        fig.add_trace(go.Scatter(  # the legend: a square of the strategy's colour (the panels draw circles and diamonds)
            x=[None], y=[None], mode="markers", name=name, legendgroup=name, marker=dict(color=colour, size=10, symbol="square")),
            row=1, col=1)
        fig.add_trace(go.Scatter(
            x=[position[e] + OFFSETS[sharing] for e in done.E], y=done.mlm, mode="markers", name=name, legendgroup=name,
            showlegend=False, marker=dict(color=colour, size=10, symbol=["circle-open" if n else "circle" for n in done.uptrain_note],
                                          line=dict(width=2, color=colour)),
            error_y=dict(type="data", array=done.mlm_high - done.mlm, arrayminus=done.mlm - done.mlm_low, thickness=1.5),
            customdata=done[["E", "mlm_low", "mlm_high"]].assign(note=[f"<br>{CORRECTION_HOVER}" if n else "" for n in done.uptrain_note]),
            hovertemplate=f"{name}, E = %{{customdata[0]}}: %{{y:.3f}} [%{{customdata[1]:.3f}}, %{{customdata[2]:.3f}}]"
                          "%{customdata[3]}<extra></extra>"),
            row=1, col=1)
        paper = group.dropna(subset=["paper_avg"])
        fig.add_trace(go.Scatter(
            x=[position[e] + OFFSETS[sharing] for e in paper.E], y=paper.paper_avg, mode="markers", name=name,
            legendgroup=name, showlegend=False, marker=dict(color=colour, size=10, symbol="diamond"),
            customdata=paper[["paper_E", "paper_params_m", "paper_table"]],
            hovertemplate=f"{name}, E = %{{customdata[0]}}: average %{{y:.1f}} with %{{customdata[1]}}M parameters "
                          "(Table %{customdata[2]})<extra></extra>"),
            row=1, col=2)
    for e, failed in rows[rows.failed].groupby("E"):  # said where the points would be, not drawn as zeros
        names = " and ".join(SHARING_LABELS[s] for s in failed.sharing)
        fig.add_annotation(x=position[e], y=0.45, xref="x", yref="y domain", showarrow=False, font=dict(color=NEUTRAL, size=12),
                           text=f"{names}:<br>failed, no result")
    if (rows.uptrain_note != "").any():
        fig.add_annotation(x=0.02, y=0.97, xref="x domain", yref="y domain", xanchor="left", showarrow=False, align="left",
                           font=dict(color=NEUTRAL, size=12), text="open markers: runs that measured a conversion bug<br>"
                                                                   "fixed since (see below the table)")
    ticks = list(position.values())
    fig.update_xaxes(tickvals=ticks, ticktext=[str(e) if e != hidden else f"{e} (= H)" for e in sizes], row=1, col=1)
    fig.update_xaxes(tickvals=ticks, ticktext=[str(e) if e != hidden else "768 (= H)" for e in sizes], row=1, col=2)
    fig.update_xaxes(title_text="embedding size E", range=[-0.5, len(sizes) - 0.5])
    fig.update_yaxes(title_text="masked-token accuracy, held-out (95% interval)", rangemode="tozero", row=1, col=1)
    fig.update_yaxes(title_text="average downstream score (Tables 3 and 4)", row=1, col=2)
    fig.update_layout(title="What E and sharing cost: a real pretrained BERT against the paper")
    fig = style(fig, height=470, legend_title="sharing")
    return fig.update_layout(legend_y=1.1, margin_t=140)  # above the subplot titles, not on them


@built_once
def parameter_bars(rows: pd.DataFrame, title: str) -> go.Figure:
    long = rows.melt(id_vars="component", value_vars=["unique", "applied"], var_name="count", value_name="parameters")
    long["count"] = long["count"].map({"unique": "held in memory", "applied": "applied per forward pass"})
    fig = px.bar(long, x="component", y="parameters", color="count", barmode="group", title=title)
    fig.update_traces(hovertemplate="%{x}: %{y:,} parameters")
    return style(fig, x="component", y="parameters (count, log scale)", log_y=True, legend_title="")


@built_once
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
