"""The look every page's plotly figures share (each page's figures live in its room,
app/rooms/<page>/figures.py, and are drawn by scripts/make_figures.py too, so the docs show
what the app shows).

One style for all of them (`style`): axis titles with units, integer layer ticks,
readable log ticks, the legend above the plot (never on it), no hard-coded
backgrounds (Streamlit's light and dark themes both apply), and one colour per
checkpoint on every page (`colour_for`)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # plotly is imported where a figure is made: the model card's SVG takes its colours from here
    import plotly.graph_objects as go

PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf",  # then mid-tones
           "#bcbd22", "#e15f99", "#b68100", "#00a08b", "#a777f1", "#eb663b", "#6c7c32", "#778aae", "#da60ca",
           "#b2828d"]  # 18: the shipped ones, runs and added folders in one process rarely wrap around (8 did)
COMPONENT_COLORS = {"attention": "#d62728", "FFN": "#1f77b4", "LayerNorm": "#2ca02c"}
GRAD_AXIS = "mean |dL/dW| (log scale)"
LAYER_TICKS = 16  # up to this many layers, one tick each
# Series that are not checkpoints (losses, tasks, orders), in a fixed order: the theme's
# colorway differs between light and dark, so plotly's defaults swapped them with the theme.
SERIES_COLOURS = ["#4c78a8", "#f58518", "#54a24b", "#b279a2"]
# A component's parameters held in memory and applied per forward pass, on the model card and the calculator alike
# (Streamlit's first two chart colours, as its light theme orders them; the dark theme swaps them).
COUNT_COLOURS = {"held in memory": "#0068c9", "applied per forward pass": "#83c9ff"}
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
    fig.update_layout(_look(legend_title))
    if height:
        fig.update_layout(height=height)
    return fig


def _look(legend_title: str | None) -> dict:
    """The layout `style` gives every figure: the legend above the plot, room for the title."""
    return dict(legend=dict(orientation="h", yanchor="bottom", y=1.02, xanchor="left", x=0, title_text=legend_title),
                margin=dict(t=110, l=10, r=10, b=10), title=dict(y=0.97, yanchor="top", yref="container"),
                hoverlabel=dict(namelength=-1))


def _chance(y: float, label: str) -> dict:
    """The layout `chance_line` adds at `y` with its label on the right (what add_hline makes)."""
    return dict(shapes=[dict(type="line", xref="x domain", x0=0, x1=1, yref="y", y0=y, y1=y,
                             line=dict(color=NEUTRAL, dash="dot", width=1.5))],
                annotations=[dict(text=label, showarrow=False, font=dict(color=NEUTRAL), xref="x domain", x=1,
                                  xanchor="left", yref="y", y=y, yanchor="middle")],
                margin=dict(r=64))


def styled(traces: list[dict], layout: dict, *, legend_title: str | None = None,
           chance: float | None = None) -> go.Figure:
    """`style(go.Figure(traces, layout))`, then `chance_line(fig, chance)` when given, from plain
    dicts checked once: 13 ms where plotly express, style and chance_line take 140 ms. For the
    figures built anew for each visitor (a typed pair's), whose Python holds the GIL the whole
    server shares; the others are built once for all (app/shell/built.py)."""
    merged = dict(layout)
    for over in (_look(legend_title), _chance(chance, "chance") if chance is not None else {}):  # as style(), then chance_line()
        for key, value in over.items():
            if isinstance(value, dict) and isinstance(merged.get(key), dict):
                merged[key] = {**merged[key], **value}
            elif isinstance(value, list) and isinstance(merged.get(key), list):  # shapes, annotations: added
                merged[key] = [*merged[key], *value]
            else:
                merged[key] = value
    import plotly.graph_objects as go

    return go.Figure(dict(data=traces, layout=merged))


# A title's room: plotly never wraps a title, and one longer than its chart is cut at both ends. The
# main column is about 800 px wide at 1280 x 800 with the sidebar open; the title font (bold, 16 px)
# takes 6.9-7.3 px a character, measured in Chromium on the app's titles: 8 leaves a margin.
MAIN_PX, TITLE_PX_PER_CHAR = 800, 8
# A phone (390 px wide, Streamlit's 16 px padding each side) stacks columns: every chart is the main
# column's 358 px wide there, and a title longer than this was cut at both ends (Gradient flow, Sentence pairs).
PHONE_PX = 390 - 2 * 16
PHONE_TITLE_CHARS = PHONE_PX // TITLE_PX_PER_CHAR  # 44


def title_chars(share: float) -> int:
    """How many characters of title fit a chart `share` of the main column wide (at 1280 px)."""
    return max(24, int(share * MAIN_PX / TITLE_PX_PER_CHAR))


def fitting_chars(share: float) -> int:
    """A title's line that fits both a chart `share` of the main column at 1280 px and a phone's one column."""
    return min(title_chars(share), PHONE_TITLE_CHARS)


def wrap_title(fig: go.Figure, chars: int) -> go.Figure:
    """The title's main line wrapped at spaces into lines of at most `chars` characters (a
    subtitle after '<br>' kept as it is), the top margin grown by a line for each line added."""
    text = fig.layout.title.text
    if not text:
        return fig
    head, sep, rest = text.partition("<br>")
    lines: list[str] = []
    for word in head.split(" "):
        if lines and len(lines[-1]) + 1 + len(word) <= chars:
            lines[-1] += " " + word
        else:
            lines.append(word)
    if len(lines) > 1:
        top = fig.layout.margin.t if fig.layout.margin.t is not None else 110
        fig.update_layout(title_text="<br>".join(lines) + sep + rest, margin_t=top + 20 * (len(lines) - 1))
    return fig


# A horizontal legend above the plot wraps into rows; on a phone seven checkpoints took four and covered the title
# (Oscillation). An entry is its symbol and gaps (40 px) and its name (12 px: 7 px a character leaves a margin); it
# wraps at the chart's width less its margins (60 px); a row is 29 px high (measured in Chromium), and the top
# margin (110 px) holds two rows under the title.
LEGEND_ENTRY_PX, LEGEND_PX_PER_CHAR, LEGEND_ROW_PX, LEGEND_ROWS_HELD = 40, 7, 29, 2


def legend_rows(fig: go.Figure, px: int) -> int:
    """The rows the legend above `fig`'s plot takes in a chart `px` wide (0: no legend there)."""
    legend = fig.layout.legend
    names = [str(t.name) for t in fig.data if t.name and t.showlegend is not False]
    if fig.layout.showlegend is False or legend.orientation != "h" or (legend.y or 0) < 1 or not names or (
            len(names) == 1 and fig.layout.showlegend is not True):
        return 0
    rows, used = 1, 0
    for name in names:
        wide = LEGEND_ENTRY_PX + LEGEND_PX_PER_CHAR * len(name)
        if used and used + wide > px - 60:
            rows, used = rows + 1, 0
        used += wide
    return rows


def fit_legend(fig: go.Figure, share: float) -> go.Figure:
    """Room above the plot for the legend's rows beyond two, at a phone's width or the chart's `share` of the main
    column, whichever is narrower (both draw the same figure), under the title's lines: the legend stays off the
    title. Again harmless: the margin is what they need, or more."""
    extra = legend_rows(fig, min(PHONE_PX, int(share * MAIN_PX))) - LEGEND_ROWS_HELD
    if extra > 0:
        lines = (fig.layout.title.text or "").count("<br>")
        top = fig.layout.margin.t if fig.layout.margin.t is not None else 110
        fig.update_layout(margin_t=max(top, 110 + 20 * lines + LEGEND_ROW_PX * extra))
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


# ---- a visitor's text in a figure: text, never markup -----------------------------------------
# plotly draws every label (names, ticks, hover, titles, annotations) as its own small HTML: `<a
# href>` is a live link there. A figure holds a visitor's text wherever a name, a token, a column or
# a group is drawn; a tag other than the few the figures write themselves is drawn as typed.
_NOT_OURS = re.compile(r"<(?!/?(?:br|b|i|em|sup|sub|extra)>)")  # extra: a hovertemplate's box


def _as_text(value: Any) -> Any:
    """`value` with every '<' that does not open one of the figures' own tags written `&lt;`
    (which plotly draws as '<'), in a string or any list, tuple, dict or object array of them;
    anything else as it is (the same object, so nothing is copied when nothing changes)."""
    if isinstance(value, str):
        return _NOT_OURS.sub("&lt;", value) if "<" in value else value
    if isinstance(value, dict):
        items = {k: _as_text(v) for k, v in value.items()}
        return items if any(items[k] is not value[k] for k in value) else value
    if isinstance(value, (list, tuple)):
        items = [_as_text(v) for v in value]
        return type(value)(items) if any(a is not b for a, b in zip(items, value, strict=True)) else value
    if getattr(value, "dtype", None) is not None and value.dtype.kind in "OUS":  # numpy arrays of text
        items = [_as_text(v) for v in value.tolist()]
        return items if items != value.tolist() else value
    return value


def text_only(fig: go.Figure) -> go.Figure:
    """`fig` (in place) with a visitor's text in it drawn as text: a '<' of anything but the
    figures' own tags (<br>, <b>, <i>, <em>, <sup>, <sub>, <extra>) is escaped in every trace
    and layout property. Idempotent: an escaped figure has no other '<' left."""
    for trace in fig.data:
        for prop, value in trace.to_plotly_json().items():
            if (safe := _as_text(value)) is not value:
                trace[prop] = safe
    for prop, value in fig.layout.to_plotly_json().items():
        if prop != "template" and (safe := _as_text(value)) is not value:
            fig.layout[prop] = safe
    return fig
