"""Does training a shipped checkpoint again, with the same seed, give the same model?

Re-runs the exact command in checkpoints/<name>'s card (another run id and name, so
nothing shipped is touched), then compares the re-run with the shipped checkpoint:
1. the held-out learning curve, evaluation by evaluation (the shipped one is kept in
   checkpoints/learning_curves.json);
2. the weights, tensor by tensor: the largest absolute difference;
3. the final metrics: `albert-lab evaluate --json --by-source` on the re-run, each row
   against the shipped row of checkpoints/results.json: is it inside the shipped 95%
   interval?
Exits 1 when a metric falls outside its interval.

Run: .venv/bin/python scripts/check_rerun.py [--name albert-sop] [--no-train]
(about an hour for a shipped checkpoint on 2 cores; a run cut off resumes where it was.)
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import pandas as pd  # noqa: E402
from safetensors.torch import load_file  # noqa: E402

KEYS = ["eval_mlm_acc", "eval_nsp_acc", "eval_sop_acc", "eval_sop_interior_acc"]


def rerun_command(card: dict, name: str, run_id: str) -> list[str]:
    """The card's training command, with the re-run's name and run id (a '# ...' note after it,
    where the card has one, left out: it may hold an apostrophe)."""
    args = shlex.split(card["provenance"]["command"], comments=True)
    assert args[:2] == ["albert-lab", "train"], args
    for flag, value in (("--name", f"{name}-rerun"), ("--run-id", run_id)):
        if flag in args:
            args[args.index(flag) + 1] = value
        else:
            args += [flag, value]
    return [sys.executable, "-m", "albert_lab", *args[1:]]


def train(command: list[str], run: Path) -> None:
    if (run / "run.json").is_file() and json.loads((run / "run.json").read_text()).get("status") == "succeeded":
        print(f"{run.name}: already trained")
        return
    if run.is_dir():
        command = [sys.executable, "-m", "albert_lab", "train", "--resume", str(run), "--foreground"]
    print("$", shlex.join(command), flush=True)
    subprocess.run(command, cwd=ROOT, check=True)


def curves(name: str, run: Path) -> pd.DataFrame:
    shipped = pd.read_json(ROOT / "checkpoints" / "learning_curves.json", orient="records")
    shipped = shipped[shipped.checkpoint == name]
    if "stage" in shipped and (shipped.stage == 2).any():  # the card's command is the second stage's: compare that
        card = json.loads((ROOT / "checkpoints" / name / "albert_lab.json").read_text())
        shipped = shipped[shipped.stage == 2].assign(step=lambda f: f.step - card["provenance"]["first_stage"]["steps"])
    shipped = shipped.set_index("step")[KEYS]
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines() if line.strip()]
    again = pd.DataFrame([r for r in rows if r.get("kind") == "eval" and not r.get("final")]).set_index("step")[KEYS]
    both = shipped.merge(again, left_index=True, right_index=True, suffixes=("", "_rerun"))
    return pd.DataFrame({"step": both.index, **{k.removeprefix("eval_"): (both[k + "_rerun"] - both[k]).abs()
                                                for k in KEYS}}).reset_index(drop=True)


def weights(name: str, run: Path) -> tuple[int, int, float]:
    """(tensors, identical tensors, largest absolute difference)."""
    shipped = load_file(str(ROOT / "checkpoints" / name / "model.safetensors"))
    again = load_file(str(run / "checkpoint" / "model.safetensors"))
    common = sorted(set(shipped) & set(again))
    diffs = [float((shipped[k].float() - again[k].float()).abs().max()) if shipped[k].numel() else 0.0 for k in common]
    return len(common), sum(d == 0.0 for d in diffs), max(diffs, default=0.0)


def metrics(name: str, run: Path) -> pd.DataFrame:
    command = [sys.executable, "-m", "albert_lab", "evaluate", "--json", "--by-source", "--device", "cpu",
               "--checkpoint", str(run / "checkpoint")]
    print("$", shlex.join(command), flush=True)
    out = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True)
    again = pd.DataFrame(json.loads(out.stdout))
    shipped = pd.read_json(ROOT / "checkpoints" / "results.json", orient="records")
    shipped = shipped[(shipped.checkpoint == name) & (shipped.note.fillna("") == "")]
    keys = ["domain", "metric", "source"]
    both = shipped.merge(again, on=keys, suffixes=("", "_rerun"))
    both["inside"] = (both.accuracy_rerun >= both.low) & (both.accuracy_rerun <= both.high)
    return both[[*keys, "n", "accuracy", "low", "high", "n_rerun", "accuracy_rerun", "inside"]]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--name", default="albert-sop", help="a shipped checkpoint trained by this project")
    parser.add_argument("--no-train", action="store_true", help="compare an existing re-run only")
    args = parser.parse_args()
    card = json.loads((ROOT / "checkpoints" / args.name / "albert_lab.json").read_text())
    run_id = f"rerun-{args.name}"
    run = ROOT / "runs" / run_id
    if not args.no_train:
        train(rerun_command(card, args.name, run_id), run)
    provenance = json.loads((run / "checkpoint" / "albert_lab.json").read_text())["provenance"]
    print(f"\nshipped: {card['provenance']['code'][:12]}, {card['provenance']['tokens']:,} tokens, "
          f"{card['provenance']['wall_time_s'] / 60:.0f} min; re-run: {provenance['code'][:12]}, "
          f"{provenance['tokens']:,} tokens, {provenance['wall_time_s'] / 60:.0f} min")

    gaps = curves(args.name, run)
    largest = ", ".join(f"{k} {gaps[k].max():.2g}" for k in gaps.columns if k != "step")
    print(f"\n1. learning curve, {len(gaps)} evaluations (steps {gaps.step.min()}-{gaps.step.max()}): largest absolute "
          f"difference {largest} (1e-10: the rounding of the stored JSON)")
    n, same, worst = weights(args.name, run)
    print(f"2. weights: {same} of {n} tensors identical; largest absolute difference {worst:.3g}")
    table = metrics(args.name, run)
    print(f"3. final metrics, {len(table)} rows (all pairs, each source, out of domain): "
          f"{int(table.inside.sum())} inside the shipped 95% interval")
    with pd.option_context("display.width", 160, "display.max_rows", 200):
        print(table.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    return 0 if table.inside.all() else 1


if __name__ == "__main__":
    sys.exit(main())
