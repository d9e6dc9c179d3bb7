"""The images of docs/results.md, from the shipped checkpoints:

- docs/oscillation.png   ALBERT (albert-sop) vs BERT (bert-nsp), the paper's Figure 1;
- docs/gradflow.png      per-application gradient flow of both;
- docs/learning-curve.png, docs/learning-curve-minilm.png  held-out curves of the shipped runs;
- docs/app-*-{light,dark}.png  screenshots of every page of the running app (scripts/screenshots.py;
                               `--no-screenshots` skips them).

Figures are the app's own plotly figures (albert_lab/figures/<page>.py), rendered to PNG in Debian's
Chromium through Playwright (plotly.js is inlined: nothing is fetched).

Run: .venv/bin/python scripts/make_figures.py [--no-screenshots | --learning-curve-only]
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DOCS = ROOT / "docs"
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-dev-shm-usage",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def figures() -> dict[str, object]:
    from albert_lab.analysis.gradflow import gradient_flow
    from albert_lab.analysis.oscillation import oscillation, verdict
    from albert_lab.checkpoint.load import load_checkpoint
    from albert_lab.data.samples import sample_texts
    from albert_lab.figures.gradient_flow import gradflow_side_by_side
    from albert_lab.figures.oscillation import oscillation_figure

    albert = load_checkpoint(ROOT / "checkpoints" / "albert-sop", device="cpu")
    bert = load_checkpoint(ROOT / "checkpoints" / "bert-nsp", device="cpu")
    texts = sample_texts(16)
    frame = oscillation([albert, bert], texts)
    print(verdict(frame).to_string(index=False))
    osc = oscillation_figure(frame)
    osc.update_layout(title="Oscillation: ALBERT (shared, solid) vs BERT (not shared, dashed), 16 held-out texts")
    grad = gradflow_side_by_side([gradient_flow(b, texts, objective=b.spec.objective) for b in (albert, bert)])
    return {"oscillation": osc, "gradflow": grad, **shared_block_figures(albert, bert, texts), **learning_curve()}


def learning_curve() -> dict[str, object]:
    curves = ROOT / "checkpoints" / "learning_curves.json"
    if not curves.is_file():
        return {}
    import pandas as pd

    from albert_lab.figures.training import learning_curve_figure

    # An earlier probe (lab-albert on a 25 MB long-document mix, on a machine with AMX):
    # interior SOP after about 13.5M and 27M tokens, 1,584 held-out interior pairs.
    probe = {"SOP interior, an earlier probe (lab-albert, 25 MB of long documents)": [(13.5e6, 0.514), (27e6, 0.573)]}
    frame = pd.read_json(curves)  # the two the README discusses (all four: checkpoints/learning_curves.json)
    figs = {"learning-curve": learning_curve_figure(frame[frame.checkpoint.isin(["albert-sop", "albert-nsp"])], probe)}
    minilm = frame[frame.checkpoint.isin(["albert-sop-minilm", "albert-nsp-minilm"])]
    if "stage" in minilm and (minilm.stage == 2).any():  # continued: where each second stage began
        fig = learning_curve_figure(minilm[["checkpoint", "tokens", "eval_mlm_acc", "eval_nsp_acc", "eval_sop_interior_acc"]])
        for name in minilm[minilm.stage == 2].checkpoint.unique():
            start = minilm[(minilm.checkpoint == name) & (minilm.stage == 1)].tokens.max() / 1e6
            fig.add_vline(x=start, line=dict(dash="dot", color="#7f7f7f"), annotation_text=f"{name.split('-')[1].upper()}: second stage",
                          annotation_position="top right" if name.startswith("albert-sop") else "bottom left")
        fig.update_layout(title="ALBERTs from MiniLM: held-out accuracy against tokens seen (600 pairs per task)")
        figs["learning-curve-minilm"] = fig
    return figs


def shared_block_figures(albert, bert, texts) -> dict[str, object]:
    """One figure of each shared-block analysis, from the shipped checkpoints."""
    from albert_lab.analysis.attention import attention_entropy
    from albert_lab.analysis.cka import layer_cka
    from albert_lab.analysis.extrapolation import extrapolate, extrapolation_verdict
    from albert_lab.analysis.lens import logit_lens
    from albert_lab.figures.shared_block import cka_figure, entropy_figure, extrapolation_figure, lens_figure

    extrapolation = extrapolate([albert, bert], texts, repeat=4, seed=0)
    print(extrapolation_verdict(extrapolation).to_string(index=False))
    return {"extrapolation": extrapolation_figure(extrapolation),
            "logit-lens": lens_figure(logit_lens([albert, bert], texts, 1, seed=0)),
            "attention-entropy": entropy_figure(attention_entropy([albert, bert], texts, 2)),
            "cka": cka_figure(layer_cka(albert, texts, bert, 1))}


def render(figs: dict[str, object], browser) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for name, fig in figs.items():
            html = Path(tmp) / f"{name}.html"
            fig.write_html(html, include_plotlyjs=True, full_html=True, default_width=1100, default_height=420)
            page = browser.new_page(viewport={"width": 1140, "height": 460})
            page.goto(html.as_uri())
            page.wait_for_selector(".main-svg")
            page.locator(".plotly-graph-div").screenshot(path=str(DOCS / f"{name}.png"))
            page.close()
            print(f"wrote docs/{name}.png")


def main() -> None:
    from playwright.sync_api import sync_playwright

    from albert_lab.checkpoint.discover import discover_checkpoints
    from albert_lab.figures.look import register_checkpoints
    from app.shell.look import shipped_first

    DOCS.mkdir(exist_ok=True)
    entries = [c.to_dict() for c in discover_checkpoints()]
    register_checkpoints(c["name"] for c in shipped_first(entries))  # the app's colours
    figs = learning_curve() if "--learning-curve-only" in sys.argv[1:] else figures()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=FLAGS)
        render(figs, browser)
        browser.close()
    if not {"--no-screenshots", "--learning-curve-only"} & set(sys.argv[1:]):
        from screenshots import main as screenshots  # scripts/screenshots.py, beside this file

        screenshots([])


if __name__ == "__main__":
    main()
