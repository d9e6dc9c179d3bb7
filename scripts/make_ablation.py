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

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
START, END = "<!-- ablation:start -->", "<!-- ablation:end -->"


def accuracy(row: pd.Series, name: str) -> str:
    return "-" if pd.isna(row[name]) else f"{row[name]:.3f} [{row[name + '_low']:.2f}, {row[name + '_high']:.2f}]"


def paper(row: pd.Series) -> str:
    """The paper's ALBERT-base numbers for the same choice (Tables 3 and 4): parameters / average score."""
    if pd.isna(row["paper_avg"]):
        return "-"
    return f"{row['paper_params_m']:g}M / {row['paper_avg']:.1f}" + (f" (E = H = {row['paper_E']})" if row["paper_E"] != row["E"] else "")


def table(results) -> str:
    head = ("| E | sharing | parameters | SVD energy kept | embedding fit R² | probe MLM | uptrained MLM | uptrained SOP interior "
            "| uptrained SOP out of domain | paper: params / avg |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for _, row in results.rows.iterrows():
        if row["failed"]:
            lines.append(f"| {row['E']} | {row['sharing']} | | | | failed on the GPU: {row['failure'][:70]} | | | | {paper(row)} |")
            continue
        lines.append(f"| {row['E']} | {row['sharing']} | {row['parameters'] / 1e6:.1f}M | {row['energy_kept']:.2f} | "
                     f"{row['fit_r2']:.2f} | {accuracy(row, 'probe_mlm')} | {accuracy(row, 'mlm')} | "
                     f"{accuracy(row, 'sop_interior')} | {accuracy(row, 'sop_ood')} | {paper(row)} |")
    lines += ["", f"Made by `{results.command}` on {results.device} ({results.wall_s / 60:.0f} minutes of GPU time); "
              f"each uptraining run saw {results.tokens / 1e6:.1f}M tokens, each probe trained only the heads. "
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
    sys.path.insert(0, str(ROOT))
    from albert_lab.analysis.ablation import read_ablation

    results = read_ablation(DOCS / "ablation.json")
    page = DOCS / "ablation.md"
    content = page.read_text()
    head, rest = content.split(START, 1)
    _, tail = rest.split(END, 1)
    page.write_text(f"{head}{START}\n{table(results)}\n{END}{tail}")
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
