#!/usr/bin/env python
"""docs/ablation.md's tables and docs/uptraining.png, from docs/ablation.json (written by
scripts/ablation.py) and docs/uptraining.json (the uptraining runs' held-out curves).

Run: .venv/bin/python scripts/make_ablation.py [--no-figure]
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
START, END = "<!-- ablation:start -->", "<!-- ablation:end -->"
# The paper's Tables 3 and 4 (ALBERT-base, parameters and average downstream score), beside each row.
PAPER = {("all", 64): "10M / 79.0", ("all", 128): "12M / 80.1", ("all", 256): "16M / 79.6", ("all", 384): "31M / 79.8 (E = H = 768)",
         ("none", 128): "89M / 81.6", ("attention", 128): "64M / 81.7", ("ffn", 128): "38M / 80.2", ("none", 384): "108M / 82.3 (E = H = 768)"}


def accuracy(evaluation: list[dict], domain: str, metric: str) -> str:
    for row in evaluation:
        if row["domain"] == domain and row["metric"] == metric and row["source"] == "all" and row["accuracy"] is not None:
            return f"{row['accuracy']:.3f} [{row['low']:.2f}, {row['high']:.2f}]"
    return "-"


def table(data: dict) -> str:
    head = ("| E | sharing | parameters | SVD energy kept | embedding fit R² | probe MLM | uptrained MLM | uptrained SOP interior "
            "| uptrained SOP out of domain | paper: params / avg |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for row in data["rows"]:
        key = (row["sharing"], row["embedding"])
        if "error" in row:
            reason = next((line for line in reversed(row["error"].splitlines()) if "Error" in line), "see the JSON")
            lines.append(f"| {row['embedding']} | {row['sharing']} | | | | failed on the GPU: {reason.strip()[:70]} | | | | {PAPER[key]} |")
            continue
        probe, up = row["probe"]["evaluation"], row["uptrain"]["evaluation"]
        lines.append(f"| {row['embedding']} | {row['sharing']} | {row['parameters'] / 1e6:.1f}M | "
                     f"{row['conversion']['embedding_energy_kept']:.2f} | {row['conversion']['embedding_fit_r2']:.2f} | "
                     f"{accuracy(probe, 'in', 'mlm')} | {accuracy(up, 'in', 'mlm')} | {accuracy(up, 'in', 'sop_interior')} | "
                     f"{accuracy(up, 'out', 'sop')} | {PAPER[key]} |")
    tokens = next((r["uptrain"]["tokens"] for r in data["rows"] if "uptrain" in r), 0)
    lines += ["", f"Made by `{data['command']}` on {data['device']} ({data['wall_s'] / 60:.0f} minutes, all rows at once); "
              f"each uptraining run saw {tokens / 1e6:.1f}M tokens, each probe trained only the heads. "
              "Accuracies are held-out long-mix (MLM, SOP interior) and the out-of-domain book (SOP), "
              "with 95% Wilson intervals; regenerate the table with `scripts/make_ablation.py`."]
    return "\n".join(lines)


def figure(curves: dict):
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=1, cols=2, subplot_titles=("masked-token accuracy (held-out)", "SOP on interior pairs (held-out)"))
    colours = {"bert-sop-minilm": "#1f77b4", "albert-sop-minilm": "#d62728", "albert-nsp-minilm": "#ff7f0e"}
    for name, run in curves["runs"].items():
        xs = [e["tokens"] / 1e6 for e in run["eval"] if e.get("tokens")]
        for col, key in ((1, "mlm_acc"), (2, "sop_interior_acc")):
            ys = [e[key] for e in run["eval"] if e.get("tokens")]
            fig.add_scatter(x=xs, y=ys, mode="lines+markers", name=name, legendgroup=name, showlegend=col == 1,
                            line=dict(color=colours.get(name)), row=1, col=col)
    fig.add_hline(y=0.5, line=dict(dash="dot", color="grey"), row=1, col=2)
    fig.update_xaxes(title_text="tokens seen (millions)")
    fig.update_layout(title="Uptraining all-MiniLM-L6-v2 on long-mix (H100, AdamW 2e-4, batch 256)", template="plotly_white")
    return fig


def main() -> int:
    data = json.loads((DOCS / "ablation.json").read_text())
    page = DOCS / "ablation.md"
    content = page.read_text()
    head, rest = content.split(START, 1)
    _, tail = rest.split(END, 1)
    page.write_text(f"{head}{START}\n{table(data)}\n{END}{tail}")
    print(f"wrote the table in {page}")
    if "--no-figure" in sys.argv:
        return 0
    from playwright.sync_api import sync_playwright

    fig = figure(json.loads((DOCS / "uptraining.json").read_text()))
    with sync_playwright() as p, tempfile.TemporaryDirectory() as tmp:
        browser = p.chromium.launch(executable_path=shutil.which("chromium"))
        html = Path(tmp) / "fig.html"
        fig.write_html(html, include_plotlyjs=True, full_html=True, default_width=1100, default_height=420)
        page_ = browser.new_page(viewport={"width": 1150, "height": 470})
        page_.goto(html.as_uri())
        page_.locator(".plotly-graph-div").screenshot(path=str(DOCS / "uptraining.png"))
        browser.close()
    print("wrote docs/uptraining.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
