"""The Parameters page's figures: parameters by component, cost against E, H or L, and
the "On real weights" tab's figures: what E and sharing cost all-MiniLM-L6-v2
(analysis.ablation.read_ablation's rows), the paper's numbers beside; and the relaxation curve,
parameters against quality from the ALBERT back to its BERT, with the residual energy each map
keeps (analysis.relaxation.curve_and_energy's frames)."""

from __future__ import annotations

import math

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from albert_lab.figures.look import COUNT_COLOURS, NEUTRAL, SERIES_COLOURS, style, themed
from albert_lab.spec import SHARING_LABELS

# One colour per strategy, fixed (the themes' colorways differ); points of one E side by side.
SHARING_COLOURS = dict(zip(SHARING_LABELS, SERIES_COLOURS))
OFFSETS = dict(zip(SHARING_LABELS, (-0.18, -0.06, 0.06, 0.18)))
CORRECTION_HOVER = "open marker: measured a conversion bug fixed since (see below the table)"


@themed
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


@themed
def parameter_bars(rows: pd.DataFrame, title: str) -> go.Figure:
    """Parameters per component (`rows`: component, unique, applied), held in memory beside applied per forward pass, log scale."""
    long = rows.melt(id_vars="component", value_vars=["unique", "applied"], var_name="count", value_name="parameters")
    long["count"] = long["count"].map({"unique": "held in memory", "applied": "applied per forward pass"})
    fig = px.bar(long, x="component", y="parameters", color="count", barmode="group", title=title,
                 color_discrete_map=COUNT_COLOURS)  # the model card's colours, in either theme
    fig.update_traces(hovertemplate="%{x}: %{y:,} parameters")
    return style(fig, x="component", y="parameters (count, log scale)", log_y=True, legend_title="")


@themed
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


# ---- relaxed sharing: the curve and its energy ------------------------------------------------
MAP_LABELS = {"attention.query": "query", "attention.key": "key", "attention.value": "value",
              "attention.dense": "attention out", "ffn": "FFN in", "ffn_output": "FFN out"}
CURVE_AXES = {"parameters": "unique parameters", "share_of_source": "parameters, share of the source BERT's"}
ENDS = {"ALBERT": ("pure ALBERT (rank 0)", "diamond", SERIES_COLOURS[1]),
        "source BERT": ("source BERT", "star", SERIES_COLOURS[2])}


def curve_panels(task: str) -> list[tuple[str, str]]:
    """(column, title) of the curve's panels; `task` the pair head's ('sop', 'nsp', or '')."""
    return [("mlm_accuracy", "MLM accuracy"), ("pair_accuracy", f"{task.upper() or 'pair'} accuracy (95% CI)"),
            ("kl", "KL from the source<br>(nats)"), ("roughness", "oscillation<br>roughness"),  # two lines: side by side
            # on a phone, they ran into each other
            ("energy_kept", "residual energy kept")]


def label_side(before: float | None, here: float, after: float | None) -> str:
    """Where a point's label stays clear of the line through it: above a peak, below a valley, above and to
    the left on a rise (the line comes from below left), below and to the left on a fall, above the last point
    (None: no neighbour, or one not measured)."""
    rise_in = None if before is None or math.isnan(before) else here - before
    rise_out = None if after is None or math.isnan(after) else after - here
    if rise_in is None and rise_out is None:
        return "top center"
    if rise_in is None:  # the first point: the line leaves to the right
        return "top left" if rise_out >= 0 else "top center"
    if rise_out is None:  # the last point: above (below, it met the axis's tick labels where the curve ends at 0)
        return "top center"
    if rise_in >= 0 >= rise_out:
        return "top center"
    if rise_in <= 0 <= rise_out:
        return "bottom center"
    return "top left" if rise_in > 0 else "bottom left"


def rank_labels(xs: list[float], ys: list[float], span: float, gap: float = 0.1,
                labelled: list[bool] | None = None) -> list[str]:
    """Each point's label position (plotly's textposition; '' for no label) for a line through (`xs`, `ys`), `xs`
    ascending on an axis `span` wide: on the side `label_side` picks, unless a label on that side (above or below)
    is under `gap` of the span away (a tenth: two digits wide on a phone's panel); then none (the hover still names
    it). No label either where y is NaN (not measured) or `labelled` says so (a point marked otherwise). Ranks 1, 2,
    4, 8 sit almost on pure ALBERT's parameters, and their labels were written over one another and over the line."""
    last = {"top": -math.inf, "bottom": -math.inf}
    shown = []
    for i, (x, y) in enumerate(zip(xs, ys, strict=True)):
        if math.isnan(y) or (labelled is not None and not labelled[i]):
            shown.append("")
            continue
        where = label_side(ys[i - 1] if i else None, y, ys[i + 1] if i + 1 < len(ys) else None)
        side = where.split()[0]
        if x - last[side] >= gap * span:
            last[side] = x
            shown.append(where)
        else:
            shown.append("")
    return shown


@themed
def relaxation_figure(curve: pd.DataFrame, x: str, title: str) -> go.Figure:
    """Each quality measure against parameters (`x`: a CURVE_AXES column), a panel each: the relaxed
    models as one line labelled by rank, the pure ALBERT and the source BERT marked as its ends, and
    the source's value as a dotted line across each panel."""
    task = next((t for t in curve.pair_task if t), "")
    panels = curve_panels(task)
    fig = make_subplots(rows=3, cols=2, subplot_titles=[t for _, t in panels], vertical_spacing=0.11, horizontal_spacing=0.1)
    relaxed = curve[curve.end != "source BERT"].sort_values("parameters")
    source = curve[curve.end == "source BERT"]
    span = float(curve[x].max() - curve[x].min()) or 1.0
    for i, (column, _) in enumerate(panels):
        row, col = i // 2 + 1, i % 2 + 1
        # each panel's line its own way; pure ALBERT's rank 0 is its diamond's (a label sat on the diamond)
        where = rank_labels(list(relaxed[x]), list(relaxed[column].astype(float)), span, labelled=list(relaxed.end != "ALBERT"))
        ranks = [str(r) if w else "" for r, w in zip(relaxed["rank"], where, strict=True)]
        positions = [w or "top center" for w in where]
        low, high = column.replace("accuracy", "low"), column.replace("accuracy", "high")
        error = (dict(type="data", array=relaxed[high] - relaxed[column], arrayminus=relaxed[column] - relaxed[low],
                      thickness=1.2) if column.endswith("accuracy") and high in relaxed else None)
        fig.add_trace(go.Scatter(x=relaxed[x], y=relaxed[column], mode="lines+markers+text", text=ranks, cliponaxis=False,
                                 textposition=positions, textfont=dict(size=11), name="relaxed, by rank",
                                 legendgroup="relaxed", showlegend=i == 0, line=dict(color=SERIES_COLOURS[0]),
                                 marker=dict(size=8), error_y=error, customdata=relaxed[["model", "parameters"]],
                                 hovertemplate="%{customdata[0]}: %{y:.4g} with %{customdata[1]:,} parameters<extra></extra>"),
                      row=row, col=col)
        for end, (name, symbol, colour) in ENDS.items():
            at = curve[curve.end == end]
            fig.add_trace(go.Scatter(x=at[x], y=at[column], mode="markers", name=name, legendgroup=end, showlegend=i == 0,
                                     marker=dict(size=15, symbol=symbol, color=colour, line=dict(width=1, color="white")),
                                     customdata=at[["parameters"]],
                                     hovertemplate=f"{name}: %{{y:.4g}} with %{{customdata[0]:,}} parameters<extra></extra>"),
                          row=row, col=col)
        value = source[column].iloc[0] if len(source) else float("nan")
        if pd.notna(value):
            fig.add_hline(y=float(value), line=dict(dash="dot", color=NEUTRAL, width=1), row=row, col=col)
        if curve[column].isna().all():
            fig.add_annotation(x=0.5, y=0.5, xref=f"x{i + 1 if i else ''} domain", yref=f"y{i + 1 if i else ''} domain",
                               showarrow=False, font=dict(color=NEUTRAL), text="not measured: the source has no such head")
    fig.update_xaxes(title_text=CURVE_AXES[x], tickformat=".0%" if x == "share_of_source" else "~s", row=3, col=1)
    fig.update_xaxes(title_text=CURVE_AXES[x], tickformat=".0%" if x == "share_of_source" else "~s", row=2, col=2)
    fig.update_xaxes(tickformat=".0%" if x == "share_of_source" else "~s")
    fig.update_yaxes(rangemode="tozero")
    fig.update_layout(title=title)
    fig = style(fig, height=880, legend_title="")
    # in the grid's empty sixth cell: above the panels, it sat on their titles (and on the title on a phone)
    return fig.update_layout(legend=dict(orientation="v", x=0.56, y=0.22, xanchor="left", yanchor="top"))


@themed
def energy_figure(energy: pd.DataFrame, rank: str) -> go.Figure:
    """The share of each residual's energy rank `rank` keeps, per application (rows) and map (columns)."""
    at = energy[energy["rank"] == rank]
    maps = [m for m in MAP_LABELS if m in set(at["map"])]
    grid = at.pivot(index="application", columns="map", values="energy_kept")[maps]
    fig = go.Figure(go.Heatmap(z=grid.values, x=[MAP_LABELS[m] for m in maps], y=[str(a) for a in grid.index], zmin=0, zmax=1,
                               colorscale="Blues", showscale=False, text=[[f"{v:.0%}" for v in r] for r in grid.values],
                               texttemplate="%{text}",
                               hovertemplate="application %{y}, %{x}: %{z:.1%} of its residual kept<extra></extra>"))
    fig.update_yaxes(title_text="layer application", type="category", autorange="reversed")  # 1, 2, 3: no 1.5
    fig.update_layout(title=f"Energy kept at rank {rank}<br><sup>of each residual, per application and map</sup>")
    return style(fig, height=420)


@themed
def taken_figure(energy: pd.DataFrame) -> go.Figure:
    """Each map's share of all the residual energy: what sharing took, summed over the applications."""
    at = energy[energy["rank"] == energy["rank"].iloc[0]]  # the residuals are the same at every rank
    maps = [m for m in MAP_LABELS if m in set(at["map"])]
    taken = at.groupby("map").energy.sum()[maps]
    fig = go.Figure(go.Bar(x=[MAP_LABELS[m] for m in maps], y=taken / taken.sum(), marker_color=SERIES_COLOURS[0],
                           hovertemplate="%{x}: %{y:.1%} of the residual energy<extra></extra>"))
    fig.update_yaxes(title_text="share of the residual energy", tickformat=".0%", rangemode="tozero")
    fig.update_layout(title="What sharing took, map by map")
    return style(fig, height=420)


# ---- relaxed sharing after uptraining: the sweep's two curves ---------------------------------------
STAGES = {"before": ("at initialisation", "dash", "open"), "after": ("after uptraining", "solid", "")}
OTHERS = {"ALBERT": ("pure ALBERT", "diamond", SERIES_COLOURS[1]), "fewer layers": ("BERT, fewer layers", "square",
                                                                                   SERIES_COLOURS[3]),
          "source BERT": ("source BERT", "star", SERIES_COLOURS[2])}


def uptrain_panels(task: str) -> list[tuple[str, str, str | None]]:
    """(column, title, the interval's column prefix) of the sweep's panels."""
    return [("mlm_accuracy", "MLM accuracy (95% CI)", "mlm"), ("pair_accuracy", f"{task.upper() or 'pair'} accuracy (95% CI)",
                                                                 "pair"),
            ("kl", "KL from the source<br>as it was (nats)", None), ("roughness", "oscillation<br>roughness", None)]


def _interval(rows: pd.DataFrame, column: str, prefix: str | None) -> dict | None:
    if prefix is None:
        return None
    return dict(type="data", array=rows[f"{prefix}_high"] - rows[column], arrayminus=rows[column] - rows[f"{prefix}_low"],
                thickness=1.2)


@themed
def uptrain_figure(before: pd.DataFrame, after: pd.DataFrame, x: str, title: str) -> go.Figure:
    """Each quality measure against parameters (`x`: a CURVE_AXES column), before and after the sweep's
    training: the relaxed models as a line per stage (dashed before, solid after, labelled by rank after),
    the pure ALBERT, the BERTs of fewer layers and the source as markers (open before, filled after)."""
    task = next((t for t in after.pair_task if t), "")
    panels = uptrain_panels(task)
    fig = make_subplots(rows=2, cols=2, subplot_titles=[t for _, t, _ in panels], vertical_spacing=0.16, horizontal_spacing=0.1)
    span = float(after[x].max() - after[x].min()) or 1.0
    for i, (column, _, prefix) in enumerate(panels):
        row, col = i // 2 + 1, i % 2 + 1
        for stage, frame in (("before", before), ("after", after)):
            words, dash, open_ = STAGES[stage]
            line = frame[frame.end.isin(["ALBERT", "", "= source"])].sort_values("parameters")
            labelled = rank_labels(list(line[x]), list(line[column].astype(float)), span, labelled=list(line.end != "ALBERT"))
            text = [str(r) if w and stage == "after" else "" for r, w in zip(line["rank"], labelled, strict=True)]
            fig.add_trace(go.Scatter(
                x=line[x], y=line[column], mode="lines+markers+text", text=text, textposition=[w or "top center" for w in labelled],
                cliponaxis=False, textfont=dict(size=11), name="relaxed, by rank", legendgroup="relaxed",
                showlegend=i == 0 and stage == "after", line=dict(color=SERIES_COLOURS[0], dash=dash),
                opacity=0.55 if stage == "before" else 1.0,
                marker=dict(size=8, symbol=f"circle{'-' + open_ if open_ else ''}"), error_y=_interval(line, column, prefix),
                customdata=line[["model", "parameters"]],
                hovertemplate=f"%{{customdata[0]}}, {words}: %{{y:.4g}} with %{{customdata[1]:,}} parameters<extra></extra>"),
                row=row, col=col)
            for end, (name, symbol, colour) in OTHERS.items():
                at = frame[frame.end == end]
                if not len(at):
                    continue
                fig.add_trace(go.Scatter(
                    x=at[x], y=at[column], mode="markers", name=name, legendgroup=end, showlegend=i == 0 and stage == "after",
                    error_y=_interval(at, column, prefix),
                    marker=dict(size=13, symbol=f"{symbol}{'-' + open_ if open_ else ''}", color=colour, line=dict(width=1.5, color=colour)),
                    customdata=at[["model", "parameters"]],
                    hovertemplate=f"%{{customdata[0]}}, {words}: %{{y:.4g}} with %{{customdata[1]:,}} parameters<extra></extra>"),
                    row=row, col=col)
    for stage, (words, dash, open_) in STAGES.items():  # the stages' keys, once: open and dashed, or filled and solid
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines+markers", name=words, legendgroup=f"stage-{stage}",
                                 line=dict(color=NEUTRAL, dash=dash), marker=dict(size=8, color=NEUTRAL,
                                                                                  symbol=f"circle{'-' + open_ if open_ else ''}")),
                      row=1, col=1)
    axis = dict(title_text=CURVE_AXES[x], tickformat=".0%" if x == "share_of_source" else "~s")
    fig.update_xaxes(**axis, row=2, col=1)
    fig.update_xaxes(**axis, row=2, col=2)
    fig.update_yaxes(rangemode="tozero")
    fig.update_layout(title=title)
    fig = style(fig, height=820, legend_title="")
    # below the panels: above them its rows (three at a phone's width) pushed the panels down a third
    return fig.update_layout(legend=dict(orientation="h", x=0, y=-0.1, xanchor="left", yanchor="top"), margin_b=150)
