"""bertviz's head view as an HTML view of its own: the tokens left (attending) and right (attended to), a line
per head from each token to those it attends to, a square per head to show or hide its lines.

What a bertviz user expects, and plotly cannot do without script of the page it is drawn in: a word hovered
(or tapped, on a phone) keeps its lines while the others fade, and the words it gives most are named below.
So the view is its data (head_view_data) drawn as SVG by a few lines of script, self-contained (nothing is
fetched): the app draws it with st.html, a notebook shows it (Result.view), and it saves as one .html file.
It opens on one head, the sharpest: every head at once drew some 2,000 lines between 40 tokens, a tangle until a
head was picked alone (and the head of fewest lines drew faint ones only).

A visitor's text is data: escaped in the HTML, written into the script's data with '<', '>' and '&' escaped
(no '</script>' can close it), drawn by the script with textContent, never as markup."""

from __future__ import annotations

import html
import json
import uuid
from collections.abc import Sequence

import numpy as np
import pandas as pd

from albert_lab.figures.look import PALETTE
from albert_lab.figures.shared_block import VALUE_TITLES, token_pieces

HEAD_VIEW_TOKENS = 40  # the first tokens drawn: a head view of 77 tokens was 1,400 px tall
FAINTEST = 0.04  # share of the largest value below which no line is drawn (bertviz's faint ones)
ROW, GAP = 18, 150  # px: a token's row; between the two columns of words, where the lines run
CHAR, WIDEST = 7.5, 20  # px a character takes at 13 px, for the words' column; characters of a word drawn (the rest: ...)
FADED = 0.06  # the opacity of the other tokens' lines while a token is in focus
HINT = ("Hover a word (tap it, on a phone) to see its lines alone and the words each head shown gives it most; "
        "click a head's square to show or hide its lines, double-click to see it alone.")


def head_view_data(maps: pd.DataFrame, application: int, value: str = "weight",
                   heads: Sequence[int] | None = None) -> dict:
    """What the head view of one application of `maps` (attention_maps' frame) draws, as plain data: `tokens` (and
    `words`, each cut to WIDEST characters), `heads` with their `colours`, each head's `lines` [query, key, opacity]
    over FAINTEST of the largest `value` ('weight' or 'norm_weighted'), faint first, and for each token and head the
    two it gives most (`q`) and is given most by (`k`). `shown` at first: `heads`, or (None) the sharpest head
    (each token's largest value, on average, the highest): a few strong lines, the easiest to read."""
    part = maps[(maps.application == application) & (maps.inner == 0)].sort_values(["head", "query", "key"])
    tokens = token_pieces(part)
    numbers = sorted(int(h) for h in part["head"].unique())
    grids = part[value].to_numpy(dtype=float).reshape(len(numbers), len(tokens), len(tokens))  # (heads, query, key)
    share = grids / (float(grids.max()) or 1.0)
    lines = []
    for drawn in share:  # (query, key) of one head
        query, key = np.nonzero(drawn >= FAINTEST)
        order = np.argsort(drawn[query, key], kind="stable")  # the strong lines drawn last, on top
        lines.append([[int(q), int(k), round(max(0.1, float(drawn[q, k])), 2)] for q, k in zip(query[order], key[order])])
    words = [t if len(t) <= WIDEST else t[:WIDEST - 1] + "…" for t in tokens]
    sharpest = numbers[int(np.argmax(grids.max(axis=-1).mean(axis=-1)))]  # its tokens' largest values, on average
    return {"title": f"{maps.checkpoint.iloc[0]}, application {application}: {VALUE_TITLES[value]}",
            "tokens": tokens, "words": words, "heads": numbers, "colours": [_colour(h) for h in numbers],
            "shown": [sharpest] if heads is None else [h for h in heads if h in numbers], "lines": lines,
            "q": _strongest(grids, tokens), "k": _strongest(grids.transpose(0, 2, 1), tokens),
            "layout": {"row": ROW, "gap": GAP, "label": int(max(map(len, words), default=1) * CHAR) + 12}}


def head_view_html(maps: pd.DataFrame, application: int, value: str = "weight",
                   heads: Sequence[int] | None = None) -> str:
    """The head view (head_view_data) as HTML: the title, a square per head, the lines drawn by its script (a host
    that cleans SVG out of HTML, as Streamlit's st.html does, keeps a script's), a line of words on the token in focus."""
    data = head_view_data(maps, application, value, heads)
    view = f"alhv-{uuid.uuid4().hex[:12]}"
    squares = "".join(f'<button type="button" data-head="{h}" aria-pressed="{str(h in data["shown"]).lower()}" '
                      f'style="--c:{c}" title="head {h}">{h}</button>' for h, c in zip(data["heads"], data["colours"]))
    return (f'<div class="alhv" id="{view}"><style>{_CSS.replace("ID", view)}</style>'
            f'<div class="alhv-title">{html.escape(data["title"])}</div>'
            f'<div class="alhv-heads" role="group" aria-label="heads">heads {squares}</div>'
            f'<div class="alhv-info" aria-live="polite">{html.escape(HINT)}</div>'
            f'<script>{_SCRIPT.replace("VIEW", view).replace("DATA", _script_json(data))}</script></div>')


def _colour(head: int) -> str:
    return PALETTE[head % len(PALETTE)]


def _strongest(grids: np.ndarray, tokens: list[str]) -> list[list[str]]:
    """For each token (rows of `grids`, (heads, rows, columns)) and head: the two columns it gives most, as words."""
    best = np.argsort(-grids, axis=-1, kind="stable")[..., :2]  # (heads, rows, 2)
    return [[", ".join(f"{k} {tokens[k]} ({grids[n, i, k]:.2f})" for k in best[n, i]) for n in range(len(grids))]
            for i in range(len(tokens))]


def _script_json(data: dict) -> str:
    """`data` as a JavaScript literal no text in it can end the script: '<', '>' and '&' as \\u escapes
    (and, with json's ASCII, the line separators that end a JavaScript string)."""
    return json.dumps(data).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


# ID: the view's element id, so two views in one page (a notebook's) keep their own styles
_CSS = f"""#ID{{font-size:13px;line-height:1.4;margin:0.5rem 0 1rem}}
#ID .alhv-title{{font-weight:600;margin-bottom:0.4rem}}
#ID .alhv-heads{{display:flex;flex-wrap:wrap;align-items:center;gap:4px;margin-bottom:0.5rem}}
#ID .alhv-heads button{{min-width:28px;height:28px;padding:0 4px;border:2px solid var(--c);border-radius:4px;
  background:transparent;color:inherit;font:inherit;font-size:12px;cursor:pointer}}
#ID .alhv-heads button[aria-pressed=true]{{background:var(--c);color:#fff}}
#ID svg{{display:block;max-width:100%;height:auto;overflow:visible;font-family:inherit;font-size:13px}}
#ID .t rect{{fill:transparent;cursor:pointer}}
#ID .t text{{fill:currentColor;pointer-events:none;dominant-baseline:central}}
#ID .t.on text{{font-weight:700}}
#ID path{{fill:none;stroke-width:2}}
#ID.dim path{{opacity:{FADED}}}
#ID.dim path.on{{opacity:1}}
#ID .alhv-info{{min-height:2.8em;margin-top:0.5rem;font-size:12px}}"""

# The view's behaviour: heads shown or hidden by their squares; a token in focus (hovered with a mouse, tapped
# on a touch screen: a tap is a hover that ends at once) marks its lines and words `on`, the others fade.
_SCRIPT = """(function () {
  var D = DATA, root = document.getElementById("VIEW");
  if (!root || root.dataset.ready) return;
  root.dataset.ready = "1";
  var NS = "http://www.w3.org/2000/svg", L = D.layout, info = root.querySelector(".alhv-info"), idle = info.textContent;
  var shown = new Set(D.shown), focused = null, pinned = false;
  function el(name, attrs, parent) {
    var e = document.createElementNS(NS, name);
    for (var a in attrs) e.setAttribute(a, attrs[a]);
    return parent.appendChild(e);
  }
  function y(i) { return i * L.row + L.row / 2; }
  var width = 2 * L.label + L.gap, height = D.tokens.length * L.row, x0 = L.label + 4, x1 = L.label + L.gap - 4;
  var svg = el("svg", {viewBox: "0 0 " + width + " " + height, width: width, height: height, role: "img",
                       "aria-label": "attention lines between the tokens"}, root);
  root.insertBefore(svg, info);
  D.heads.forEach(function (h, n) {
    var g = el("g", {"class": "alhv-head", "data-head": h, stroke: D.colours[n]}, svg);
    D.lines[n].forEach(function (line) {
      el("path", {"class": "q" + line[0] + " k" + line[1], "stroke-opacity": line[2],
                  d: "M" + x0 + " " + y(line[0]) + "L" + x1 + " " + y(line[1])}, g);
    });
  });
  D.words.forEach(function (word, i) {  // the words over the lines: a word is the target of its hover
    [["q", 0, L.label - 4, "end"], ["k", L.label + L.gap, L.label + L.gap + 4, "start"]].forEach(function (side) {
      var g = el("g", {"class": "t " + side[0] + i, "data-side": side[0], "data-i": i}, svg);
      el("rect", {x: side[1], y: i * L.row, width: L.label, height: L.row}, g);
      el("text", {x: side[2], y: y(i), "text-anchor": side[3]}, g).textContent = word;
    });
  });
  function heads() {
    root.querySelectorAll("g.alhv-head").forEach(function (g) {
      g.setAttribute("display", shown.has(+g.dataset.head) ? "inline" : "none"); });
    root.querySelectorAll(".alhv-heads button").forEach(function (b) {
      b.setAttribute("aria-pressed", String(shown.has(+b.dataset.head))); });
    focus(focused);
  }
  function focus(token) {
    focused = token;
    root.querySelectorAll(".on").forEach(function (e) { e.classList.remove("on"); });
    root.classList.toggle("dim", token !== null);
    if (token === null) { info.textContent = idle; return; }
    root.querySelectorAll("." + token.side + token.i).forEach(function (e) { e.classList.add("on"); });
    var said = D.heads.map(function (h, n) { return shown.has(h) ? "head " + h + ": " + D[token.side][token.i][n] : ""; });
    said = said.filter(Boolean).join("; ") || "no head shown";
    info.textContent = token.i + " " + D.tokens[token.i] + (token.side === "q" ? " attends most to: " : " is attended to most by: ") + said;
  }
  root.querySelectorAll("g.t").forEach(function (g) {
    var token = {side: g.dataset.side, i: +g.dataset.i};
    g.addEventListener("pointerenter", function (e) { if (e.pointerType !== "touch" && !pinned) focus(token); });
    g.addEventListener("pointerleave", function (e) { if (e.pointerType !== "touch" && !pinned) focus(null); });
    g.addEventListener("click", function (e) {
      e.stopPropagation();
      var same = pinned && focused && focused.side === token.side && focused.i === token.i;
      pinned = !same;
      focus(same ? null : token);
    });
  });
  svg.addEventListener("click", function () { pinned = false; focus(null); });
  root.querySelectorAll(".alhv-heads button").forEach(function (b) {
    var h = +b.dataset.head;
    b.addEventListener("click", function () { if (shown.has(h)) shown.delete(h); else shown.add(h); heads(); });
    b.addEventListener("dblclick", function () { shown = new Set([h]); heads(); });
  });
  heads();
})();"""
