"""The look every figure shares: colours, the style of axes, legends and titles, a `Theme` to draw
them in, and a visitor's text drawn as text (`text_only`). The figures themselves are functions of
an analysis's frame, a module per page of the app (albert_lab/figures/<page>.py), drawn alike by the
app, a notebook and scripts/make_figures.py.

One style for all of them (`style`): axis titles with units, integer layer ticks, readable log
ticks, the legend above the plot (never on it), no hard-coded backgrounds unless the theme names a
template (Streamlit's light and dark themes both apply in the app), and one colour per checkpoint on
every figure (`colour_for`). Importing this module does not import plotly."""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:  # plotly is imported where a figure is made: the model card's SVG takes its colours from here
    import plotly.graph_objects as go

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf",  # then mid-tones
           "#bcbd22", "#e15f99", "#b68100", "#00a08b", "#a777f1", "#eb663b", "#6c7c32", "#778aae", "#da60ca",
           "#b2828d")  # 18: the shipped ones, runs and added folders in one process rarely wrap around (8 did)
COMPONENT_COLORS = {"attention": "#d62728", "FFN": "#1f77b4", "LayerNorm": "#2ca02c"}
GRAD_AXIS = "mean |dL/dW| (log scale)"
LAYER_TICKS = 16  # up to this many layers, one tick each
# Series that are not checkpoints (losses, tasks, orders), in a fixed order: the theme's
# colorway differs between light and dark, so plotly's defaults swapped them with the theme.
SERIES_COLOURS = ("#4c78a8", "#f58518", "#54a24b", "#b279a2")
# A component's parameters held in memory and applied per forward pass, on the model card and the calculator alike
# (Streamlit's first two chart colours, as its light theme orders them; the dark theme swaps them).
COUNT_COLOURS = {"held in memory": "#0068c9", "applied per forward pass": "#83c9ff"}
NEUTRAL = "#8c8c8c"  # reference lines (chance, depth L, resumed): mid grey, legible on light and dark
# The width figures are laid out for: the app's main column at 1280 x 800 with the sidebar open (the model view's
# thumbnails are sized from it; the app wraps titles to it)
MAIN_PX = 800

# Checkpoint -> palette slot, in the order checkpoints were first discovered (not the
# order of the current selection), so a model keeps its colour on every page.
_ORDER: list[str] = []


def register_checkpoints(names: Iterable[str]) -> None:
    """Remember discovered checkpoints in first-seen order; never reorders."""
    for name in names:
        if name not in _ORDER:
            _ORDER.append(name)


def colour_for(name: str) -> str:
    """A stable colour for a checkpoint: its discovery slot; a name not seen before takes
    the next free slot (a hash of the name let two checkpoints share a colour). In the palette
    of the theme a figure is being drawn in (`themed`)."""
    return _DRAWN_IN.get().colour(name)


def colour_map(names: Iterable[str]) -> dict[str, str]:
    """Each name's colour_for."""
    return {name: colour_for(name) for name in names}


# ---- a theme ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Theme:
    """How the figures are drawn: every figure function takes one (`theme=`). The default draws on
    no background of its own, so the host's theme applies (Streamlit's light or dark one in the app,
    plotly's default in a notebook); LIGHT and DARK name plotly templates for pages and files that
    stand alone. Checkpoints keep their colours across themes (one registry, `colour_for`)."""

    template: str | None = None  # a plotly template ('plotly_white', 'plotly_dark'); None: the host's
    font: str | None = None  # a CSS font family for every text; None: the template's
    palette: tuple[str, ...] = PALETTE  # checkpoints' colours, in the order they were first seen

    def colour(self, name: str) -> str:
        """A checkpoint's colour: its slot in the first-seen order, in this theme's palette."""
        register_checkpoints([name])
        return self.palette[_ORDER.index(name) % len(self.palette)]

    def colours(self, names: Iterable[str]) -> dict[str, str]:
        """Each name's colour."""
        return {name: self.colour(name) for name in names}


APP = Theme()  # the app's: Streamlit's theme applies
LIGHT, DARK = Theme(template="plotly_white"), Theme(template="plotly_dark")


_DRAWN_IN: ContextVar[Theme] = ContextVar("drawn_in", default=APP)  # the theme of the figure being built
F = TypeVar("F", bound=Callable[..., Any])


def finish(fig: go.Figure, theme: Theme | None = None) -> go.Figure:
    """`fig` (in place) in `theme`'s template and font, a visitor's text in it drawn as text (text_only)."""
    theme = theme or APP
    if theme.template is not None:
        fig.update_layout(template=theme.template)
    if theme.font is not None:
        fig.update_layout(font_family=theme.font)
    return text_only(fig)


def themed(build: F) -> F:
    """A figure function that takes `theme=` (a Theme; None: APP): its checkpoints' colours are the
    theme's (colour_for), and what it returns (a figure, or a tuple or dict of them) is finished in
    the theme, with a visitor's text drawn as text (`finish`): the same in the app and a notebook."""
    @functools.wraps(build)
    def drawn(*args: Any, theme: Theme | None = None, **kwargs: Any) -> Any:
        token = _DRAWN_IN.set(theme or APP)
        try:
            made = build(*args, **kwargs)
        finally:
            _DRAWN_IN.reset(token)
        if isinstance(made, dict):
            return {k: finish(v, theme) for k, v in made.items()}
        if isinstance(made, tuple):
            return tuple(finish(v, theme) for v in made)
        return finish(made, theme)

    drawn.themed = True  # type: ignore[attr-defined]
    signature = inspect.signature(build)
    theme_parameter = inspect.Parameter("theme", inspect.Parameter.KEYWORD_ONLY, default=None, annotation="Theme | None")
    drawn.__signature__ = signature.replace(parameters=[*signature.parameters.values(), theme_parameter])  # type: ignore[attr-defined]
    return drawn  # type: ignore[return-value]


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


def chance_line(fig: go.Figure, y: float = 0.5, label: str = "chance", position: str = "right") -> go.Figure:
    """A dotted line at chance, its label in the right margin (inside the plot it sat on the
    bars), in a grey that reads on both themes (plotly's default, near black, vanished on dark)."""
    fig.add_hline(y=y, line_dash="dot", line_color=NEUTRAL, line_width=1.5, annotation_text=label,
                  annotation_position=position, annotation_font_color=NEUTRAL)
    if position == "right":
        fig.update_layout(margin_r=64)
    return fig


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
