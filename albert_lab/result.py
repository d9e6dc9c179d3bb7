"""What a verb of the front door (`import albert_lab as al`) returns: an analysis's frame, its figure
and the words the app's page says of it, shown together in Jupyter and saved as files.

A figure drawn in a notebook needs plotly.js in the page. It comes from the installed plotly package,
never from a network: the first figure a process shows carries the bundle in its output (4.8 MB, once),
and every figure waits until `window.Plotly` is there, so outputs drawn in any order, a notebook
reopened, or one exported to HTML draw without fetching anything."""

from __future__ import annotations

import html
import itertools
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from albert_lab.errors import AlbertLabError
from albert_lab.figures.look import Theme, text_only

if TYPE_CHECKING:
    import plotly.graph_objects as go

IMAGE_FORMATS = (".png", ".svg", ".pdf")  # written by plotly through kaleido, which drives a Chromium
_SENT = {"plotlyjs": False}  # whether this process has shown plotly.js in an output yet
WAIT_MS, WAIT_TRIES = 50, 600  # a figure waits up to 30 s for plotly.js, then says why it is blank


@dataclass
class Result:
    """An analysis's outcome: `frame` (its tidy DataFrame), `figure()` (its plotly figure, from
    albert_lab.figures), `reading` (what the app's page says of it, as markdown text), `value` (what the
    analysis returned, where that is more than a frame). In Jupyter it shows its figure and its reading
    (`_repr_html_`); `save(path)` writes the frame as CSV, the figure as HTML, PNG or SVG (a view of its own as HTML)."""

    name: str  # the analysis ('oscillation')
    frame: pd.DataFrame
    draw: Callable[..., go.Figure] | None = None  # (theme=...) -> the figure; None: a table only
    reading: str = ""
    view: str | None = None  # HTML of a view that is no plotly figure (attributions' shaded tokens, the head view)
    value: Any = None
    extra: dict[str, Any] = field(default_factory=dict)  # named frames beside the main one (relax's energy)

    def figure(self, theme: Theme | None = None) -> go.Figure | None:
        """The analysis's figure in `theme` (None: plotly's default look), a visitor's text in it drawn
        as text; None where the analysis has no figure (its frame is the table to read)."""
        return None if self.draw is None else text_only(self.draw(theme=theme))

    def _repr_html_(self) -> str:
        fig = self.figure()
        parts = [figure_html(fig)] if fig is not None else []
        if self.view:
            parts.append(self.view)
        if fig is None and not self.view:
            parts.append(self.frame.head(20).to_html(index=False, escape=True, max_cols=12))
        if self.reading:
            parts.append(markdown_html(self.reading))
        return "\n".join(parts)

    def __repr__(self) -> str:
        return f"Result({self.name!r}: {len(self.frame):,} rows x {len(self.frame.columns)} columns)"

    def save(self, path: str | Path, theme: Theme | None = None, raw_csv: bool = False) -> Path:
        """Write the frame (.csv, as `albert-lab ... --out` writes it: a text cell a spreadsheet would run
        as a formula gets a leading ', unless `raw_csv`) or the figure (.html with plotly.js inside;
        .png, .svg or .pdf through kaleido, which needs Chromium) to `path`."""
        path = Path(path).expanduser()
        suffix = path.suffix.lower()
        if suffix == ".csv":
            from albert_lab.data import csvfile

            csvfile.to_csv(self.frame, path, raw=raw_csv)
            return path
        fig = self.figure(theme)
        if fig is None and self.view and suffix == ".html":  # a view of its own (the head view): one page, offline
            path.write_text(f'<!doctype html>\n<html><head><meta charset="utf-8"><title>{html.escape(self.name)}</title>'
                            f"</head><body>{self.view}</body></html>\n", encoding="utf-8")
            return path
        if fig is None:
            raise AlbertLabError(f"{path}: {self.name} has no figure; save its table as .csv"
                                 + (" or its view as .html" if self.view else ""))
        if suffix == ".html":
            fig.write_html(path, include_plotlyjs=True, full_html=True)
        elif suffix in IMAGE_FORMATS:
            write_image(fig, path)
        else:
            raise AlbertLabError(f"{path}: save as .csv, .html, {', '.join(IMAGE_FORMATS)}")
        return path


def write_image(fig: go.Figure, path: Path) -> None:
    """`fig` as PNG, SVG or PDF through kaleido (pip install kaleido; it drives an installed Chrome or Chromium)."""
    try:
        import kaleido  # noqa: F401
    except ImportError as err:
        raise AlbertLabError(f"{path}: PNG, SVG and PDF are written by kaleido, which is not installed: "
                             "`pip install kaleido`, or save as .html (plotly.js inside, drawn offline)") from err
    try:
        fig.write_image(path, scale=2 if path.suffix.lower() == ".png" else 1)
    except Exception as err:  # kaleido's own errors: no Chrome found, a browser that failed to start
        raise AlbertLabError(f"{path}: kaleido could not draw the figure ({type(err).__name__}: {err}); "
                             "it needs Chrome or Chromium (set BROWSER_PATH), or save as .html") from err


def figure_html(fig: go.Figure) -> str:
    """A div drawing `fig` once plotly.js is in the page; the first in this process brings plotly.js along."""
    import plotly.io as pio

    div = f"albert-lab-{uuid.uuid4().hex}"
    height = int(fig.layout.height or 450)
    spec = pio.to_json(fig, validate=False)
    config = json.dumps({"displaylogo": False, "responsive": True})
    script = (f"(function draw(tries) {{ var el = document.getElementById('{div}'); if (!el) return;"
              f" if (window.Plotly) {{ var f = {spec}; window.Plotly.newPlot(el, f.data, f.layout, {config}); }}"
              f" else if (tries < {WAIT_TRIES}) {{ setTimeout(function () {{ draw(tries + 1); }}, {WAIT_MS}); }}"
              " else { el.textContent = 'plotly.js is not in this page: run the first figure\\'s cell again'; } })(0);")
    return f'{plotlyjs_once()}<div id="{div}" style="height:{height}px;width:100%"></div>\n<script type="text/javascript">{script}</script>'


def plotlyjs_once() -> str:
    """plotly.js from the installed package, as a script, the first time this process asks; '' after."""
    if _SENT["plotlyjs"]:
        return ""
    from plotly.offline import get_plotlyjs

    _SENT["plotlyjs"] = True
    return f'<script type="text/javascript">window.PlotlyConfig = {{MathJaxConfig: "local"}};{get_plotlyjs()}</script>\n'


def markdown_html(text: str) -> str:
    """Markdown's bold, lists and ``` blocks (the command line's tables, in their columns) as HTML, everything
    else escaped: a reading holds checkpoint names and a user's text, drawn as text."""
    blocks = []
    for i, part in enumerate(text.split("```")):
        if i % 2:  # inside a fence
            blocks.append(f'<pre style="font-family: monospace; white-space: pre">{html.escape(part.strip(chr(10)))}</pre>')
            continue
        for block in filter(str.strip, part.split("\n\n")):
            for is_list, run in itertools.groupby(block.splitlines(), key=lambda line: line.startswith("- ")):
                lines = [_inline(line) for line in run]
                blocks.append("<ul>" + "".join(f"<li>{line[2:]}</li>" for line in lines) + "</ul>" if is_list
                              else "<p>" + "<br>".join(lines) + "</p>")
    return '<div class="albert-lab-reading">' + "".join(blocks) + "</div>"


def _inline(line: str) -> str:
    parts = html.escape(line).split("**")
    return "".join(f"<b>{p}</b>" if i % 2 else p for i, p in enumerate(parts))
