"""Is sentence order limited by steps or by text? Training pairs against held-out pairs.

Two measurements, both on long-mix:
1. for each checkpoint or run folder given (`--checkpoints`), interior SOP accuracy on 800
   pairs built the held-out way from *training* documents (as many documents as the held-out
   set has, drawn with seed 0) and on 800 from the held-out documents: a model that learned
   order scores both alike; a model that memorised its training pairs scores the first higher;
2. for each run folder given (`--curves`), its training pair accuracy (a 500-step mean) and its
   held-out SOP and interior SOP (600 pairs per evaluation) against the tokens it has seen.

  .venv/bin/python experiments/order_limit.py --checkpoints checkpoints/bert-sop-minilm RUN ... --curves RUN ...

writes experiments/order-limit.json (with each run's command) and draws experiments/order-limit.png from it
(`--out NAME`: experiments/NAME.json and .png); `--figure-only` redraws the figure from the JSON (the
run folders are not committed).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

PAIRS = 800
DOCS = ROOT / "experiments"  # the answers beside the question


def folder_of(path: Path) -> Path:
    """A run folder's checkpoint, or the checkpoint folder itself."""
    return path / "checkpoint" if (path / "checkpoint" / "config.json").is_file() else path


def interior_pairs(seed: int = 0):
    """800 interior SOP pairs from training documents and 800 from held-out ones (domain column)."""
    import pandas as pd

    from albert_lab.data.corpora import load_corpus
    from albert_lab.data.heldout import build_eval_pairs

    corpus = load_corpus("long-mix")
    rng = np.random.default_rng(seed)
    train = [corpus.train[i] for i in rng.choice(len(corpus.train), size=len(corpus.heldout), replace=False)]
    frames = []
    for domain, docs in (("train", train), ("held-out", list(corpus.heldout))):
        pairs = build_eval_pairs(docs)
        pairs = pairs[(pairs.task == "sop") & pairs.interior.astype(bool)]
        frames.append(pairs.sample(n=PAIRS, random_state=seed).assign(domain=domain))
    return pd.concat(frames, ignore_index=True)


def memorisation(paths: list[Path]) -> list[dict]:
    from albert_lab.analysis.evaluation import evaluate
    from albert_lab.checkpoint.load import load_checkpoint

    pairs, rows = interior_pairs(), []
    for path in paths:
        bundle = load_checkpoint(folder_of(path), device="cpu", name=path.name)
        table = evaluate(bundle, pairs)
        table = table[table.metric == "sop_interior"].set_index("domain")
        row = {"checkpoint": path.name, "tokens": bundle.card.get("provenance", {}).get("tokens")}
        for domain in ("train", "held-out"):
            r = table.loc[domain]
            row[domain] = {"accuracy": round(float(r.accuracy), 4), "low": round(float(r.low), 3),
                           "high": round(float(r.high), 3), "n": int(r.n)}
        rows.append(row)
        print(f"{path.name}: interior SOP on training documents {row['train']['accuracy']:.3f} "
              f"[{row['train']['low']:.2f}, {row['train']['high']:.2f}], held out {row['held-out']['accuracy']:.3f} "
              f"[{row['held-out']['low']:.2f}, {row['held-out']['high']:.2f}]", flush=True)
    return rows


def curve(run: Path, window: int = 500) -> dict:
    """Training pair accuracy (the mean of the logged windows in the last `window` steps, from
    the first full window on) and held-out evaluations, by tokens."""
    lines = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines() if line.strip()]
    train = [d for d in lines if d["kind"] == "train"]
    steps, tokens = np.array([d["step"] for d in train]), np.array([d["tokens"] for d in train])
    acc = np.array([d["pair_acc"] for d in train])
    smooth = [float(acc[(steps > s - window) & (steps <= s)].mean()) for s in steps]
    keep = [i for i, s in enumerate(steps) if s >= window][::2]
    at = lambda step: int(np.interp(step, steps, tokens))
    evals = [d for d in lines if d["kind"] == "eval"]
    card = json.loads((run / "checkpoint" / "albert_lab.json").read_text())["provenance"]
    return {"run": run.name, "command": card["command"], "machine": card.get("machine"),
            "wall_time_s": card.get("wall_time_s"), "start_tokens": start_tokens(card),
            "train_window_steps": window,
            "train": [{"step": int(steps[i]), "tokens": int(tokens[i]), "pair_acc": round(smooth[i], 4)} for i in keep],
            "eval": [{"step": d["step"], "tokens": at(d["step"]), "final": bool(d.get("final")),
                      "pairs": d["eval_sop_interior_pairs"], "sop": round(d["eval_sop_acc"], 4),
                      "sop_interior": round(d["eval_sop_interior_acc"], 4), "mlm": round(d["eval_mlm_acc"], 4)}
                     for d in evals]}


def start_tokens(card: dict) -> int:
    """Tokens the shipped checkpoint the run started from had seen since MiniLM (0 if unknown)."""
    name = (card.get("init_from") or {}).get("name")
    start = ROOT / "checkpoints" / str(name) / "albert_lab.json"
    if not name or not start.is_file():
        return 0
    provenance = json.loads(start.read_text())["provenance"]
    return int(provenance.get("tokens_total") or provenance.get("tokens") or 0)


def draw(data: dict, figure: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs, memo = data["curves"], data.get("memorisation", [])
    fig, axes = plt.subplots(1, len(runs) + bool(memo), figsize=(4.6 * (len(runs) + bool(memo)), 3.8), squeeze=False)
    for ax, run in zip(axes[0], runs, strict=False):
        base = run["start_tokens"]
        million = lambda rows, base=base: [(base + r["tokens"]) / 1e6 for r in rows]
        ax.plot(million(run["train"]), [r["pair_acc"] for r in run["train"]], color="#c0392b",
                label=f"training pairs ({run['train_window_steps']}-step mean)")
        ev = [r for r in run["eval"] if not r["final"]] or run["eval"]  # a short run has only its final evaluation
        ax.plot(million(ev), [r["sop"] for r in ev], "o-", color="#2471a3", ms=3, label="held-out SOP")
        ax.plot(million(ev), [r["sop_interior"] for r in ev], "s-", color="#7d3c98", ms=3,
                label=f"held-out SOP, interior ({ev[0]['pairs']} pairs a point)")
        ax.axhline(0.80, color="grey", ls=":", lw=1)
        ax.text(million(ev)[0], 0.805, "#24's interior target", fontsize=7, color="grey", va="bottom")
        ax.set_ylim(0.45, 1.0)
        ax.set_xlabel("tokens seen since MiniLM (millions)")
        ax.set_ylabel("pair accuracy")
        ax.set_title(run["label"], fontsize=9)
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7, loc="lower right")
    if memo:
        ax, x = axes[0][-1], np.arange(len(memo))
        for shift, domain, color in ((-0.2, "train", "#c0392b"), (0.2, "held-out", "#7d3c98")):
            acc = np.array([m[domain]["accuracy"] for m in memo])
            err = np.array([[m[domain]["accuracy"] - m[domain]["low"], m[domain]["high"] - m[domain]["accuracy"]] for m in memo]).T
            ax.bar(x + shift, acc, 0.4, yerr=err, color=color, alpha=0.85, capsize=2,
                   label=f"{'training' if domain == 'train' else 'held-out'} documents")
        ax.set_xticks(x, [m["checkpoint"] for m in memo], rotation=20, ha="right", fontsize=7)
        ax.set_ylim(0.45, 1.0)
        ax.axhline(0.5, color="grey", lw=0.8)
        ax.set_ylabel("interior SOP accuracy")
        ax.set_title(f"the same kind of pairs ({memo[0]['train']['n']} each, 95% intervals)", fontsize=9)
        ax.legend(fontsize=7, loc="upper right")
        ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    fig.savefig(figure, dpi=110)
    print(f"wrote {figure.relative_to(ROOT)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoints", nargs="*", type=Path, default=[])
    parser.add_argument("--curves", nargs="*", type=Path, default=[])
    parser.add_argument("--labels", nargs="*", default=[], help="a title per --curves run")
    parser.add_argument("--figure-only", action="store_true")
    parser.add_argument("--out", default="order-limit", help="experiments/OUT.json and experiments/OUT.png (default order-limit)")
    args = parser.parse_args()
    JSON, FIGURE = DOCS / f"{args.out}.json", DOCS / f"{args.out}.png"
    data = json.loads(JSON.read_text()) if JSON.is_file() else {}
    if not args.figure_only:
        if args.checkpoints:
            data["memorisation"] = memorisation(args.checkpoints)
        if args.curves:
            labels = args.labels or [run.name for run in args.curves]
            data["curves"] = [{**curve(run), "label": label} for run, label in zip(args.curves, labels, strict=True)]
        JSON.write_text(json.dumps(data, indent=1) + "\n")
        print(f"wrote {JSON.relative_to(ROOT)}")
    if data.get("curves"):
        draw(data, FIGURE)


if __name__ == "__main__":
    main()
