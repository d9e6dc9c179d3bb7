"""Figures drawn on the server as SVG, for the landing page.

A plotly chart makes the browser load and run plotly.js (4.7 MB) before it can draw: about
a second of a first visit on two cores, most of the landing page's time. The model card's
one chart is a grouped bar chart, which a few dozen SVG elements draw as well: text takes
the page's colour and font (`currentColor`, no font-family), so light and dark themes both read; every bar names its
value on hover (`<title>`), and the same string is the downloadable figure. Pure Python:
no plotly, no torch.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

from albert_lab.figures.look import COUNT_COLOURS
from app.shell.text import si

FONT = 13  # px, Streamlit's small text
ROW, GAP, LABEL = 13, 8, 17  # bar height, space between groups, a group name's line (px)


def nice_ticks(top: float, count: int = 5) -> list[float]:
    """0 and round steps up to at least `top`: 4.7e6 -> [0, 1e6, ..., 5e6]."""
    if top <= 0:
        return [0.0, 1.0]
    raw = top / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    return [i * step for i in range(math.ceil(top / step - 1e-9) + 1)]


def grouped_bars(categories: Sequence[str], series: dict[str, Sequence[float]], colours: Sequence[str], *,
                 title: str, x_title: str, unit: str = "", width: int = 480) -> str:
    """Horizontal bars, one group per category (top to bottom), one bar per series, each
    group's name above its bars (long names need no left margin).

    `series` maps a legend name to one value per category. Returns a standalone SVG
    document that scales to its container's width; `width` is the width at which its text
    is FONT px."""
    names = list(series)
    left, right, top = 2, 44, 52
    plot_w = width - left - right
    group_h = LABEL + ROW * len(names) + GAP
    plot_h = group_h * len(categories)
    height = top + plot_h + 40
    ticks = nice_ticks(max(max(v) for v in series.values()))
    scale = plot_w / ticks[-1]
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="100%" '
           f'role="img" aria-label="{escape(title)}" font-size="{FONT}" fill="currentColor">',
           f'<text x="0" y="16" font-size="15" font-weight="600">{escape(title)}</text>']
    x = left
    for name, colour in zip(names, colours):  # legend, left to right under the title
        out.append(f'<rect x="{x:.0f}" y="28" width="12" height="12" fill="{colour}"/>'
                   f'<text x="{x + 17:.0f}" y="39">{escape(name)}</text>')
        x += 17 + 6.5 * len(name) + 20
    for tick in ticks:  # vertical grid and tick labels
        tx = left + tick * scale
        out.append(f'<line x1="{tx:.1f}" x2="{tx:.1f}" y1="{top}" y2="{top + plot_h}" stroke="currentColor" '
                   f'stroke-opacity="{0.5 if tick == 0 else 0.15}"/>'
                   f'<text x="{max(tx, 4):.1f}" y="{top + plot_h + 16}" text-anchor="middle">{si(tick)}</text>')
    out.append(f'<text x="{left + plot_w / 2:.0f}" y="{height - 4}" text-anchor="middle">{escape(x_title)}</text>')
    for i, category in enumerate(categories):
        y0 = top + i * group_h + GAP / 2
        out.append(f'<text x="{left + 4}" y="{y0 + LABEL - 4:.1f}" fill-opacity="0.85">{escape(category)}</text>')
        for j, (name, colour) in enumerate(zip(names, colours)):
            value, y = series[name][i], y0 + LABEL + j * ROW
            tip = f"{category}, {name}: {value:,.0f}{unit}"
            out.append(f'<rect x="{left:.1f}" y="{y:.1f}" width="{max(value * scale, 0.5):.1f}" height="{ROW - 2}" '
                       f'fill="{colour}"><title>{escape(tip)}</title></rect>'
                       f'<text x="{left + value * scale + 4:.1f}" y="{y + ROW - 3:.1f}" font-size="11" '
                       f'fill-opacity="0.8">{si(value)}</text>')
    out.append("</svg>")
    return "".join(out)




def parameters_by_component(rows) -> str:
    """The model card's chart: each component's parameters held in memory against those
    applied per forward pass (a frame with columns component, unique, applied)."""
    return grouped_bars(list(rows.component), {"held in memory": rows.unique, "applied per forward pass": rows.applied},
                        list(COUNT_COLOURS.values()), title="Parameters by component: held in memory vs applied",
                        x_title="parameters (count)", unit=" parameters")
