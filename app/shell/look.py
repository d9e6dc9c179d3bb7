"""How the app lays a library figure (albert_lab.figures) out in its page: its title wrapped to its
column, room for a legend's rows at a phone's width, its modebar's export named; and the order that
gives the shipped checkpoints their colours. The figures' own look is the library's
(albert_lab.figures.look)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from albert_lab.figures.look import MAIN_PX

if TYPE_CHECKING:
    import plotly.graph_objects as go


# A title's room: plotly never wraps a title, and one longer than its chart is cut at both ends. The
# main column is about 800 px wide at 1280 x 800 with the sidebar open; the title font (bold, 16 px)
# takes 6.9-7.3 px a character, measured in Chromium on the app's titles: 8 leaves a margin.
TITLE_PX_PER_CHAR = 8  # MAIN_PX: the main column's width (albert_lab.figures.look)
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




def chart_config(filename: str, image_format: str = "png") -> dict:
    """st.plotly_chart(config=...): the modebar's camera saves PNG or SVG under a useful name."""
    return {"displaylogo": False,
            "toImageButtonOptions": {"format": image_format, "filename": filename, "scale": 2 if image_format == "png" else 1}}




def shipped_first(entries: Iterable[dict]) -> list[dict]:
    """Shipped checkpoints: those uptrained from a real pretrained encoder first (they know
    English), then SOP-trained first (ALBERT's own objective), no pair objective last: the
    picker's default order (its first four), and the order that gives them their colours."""
    return sorted((c for c in entries if c["origin"] == "shipped"),
                  key=lambda c: (c["objective"] == "none", not c.get("uptrained", False), c["objective"] != "sop", c["name"]))
