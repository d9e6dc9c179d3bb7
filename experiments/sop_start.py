"""Why the ALBERTs made from MiniLM never started to learn sentence order: what the [CLS]
state and the pooled vector do, at conversion and in the first steps of uptraining.

For each start (an albertized checkpoint) and each run folder given, on 200 held-out SOP
pairs of long-mix (seed 0):
- the spread of the final [CLS] state and of the pooled vector across pairs (mean over
  dimensions of the standard deviation): the pair head reads only the pooled vector;
- the attention entropy (nats, mean over heads and real tokens) at each application;
- for runs: the training pair loss and pair accuracy per logged window, and the checkpoint's
  pooled vector against its teacher's (correlation of the centred vectors).

  .venv/bin/python experiments/sop_start.py --starts runs/minilm-e128-all ... --runs RUN_DIR ...

writes experiments/sop-start.json and prints a table. The run folders' commands are in the JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from albert_lab.analysis.evaluation import evaluation_pairs  # noqa: E402
from albert_lab.checkpoint.load import load_checkpoint  # noqa: E402
from albert_lab.models import Parts  # noqa: E402

PAIRS = 200


_SEEN: dict[str, dict] = {}


def states(folder: str | Path, pairs) -> dict[str, torch.Tensor]:
    """Final [CLS] (N, H), pooled (N, H) and attention entropy per application (L,) on `pairs`."""
    if str(folder) in _SEEN:
        return _SEEN[str(folder)]
    bundle = load_checkpoint(folder, device="cpu")
    bundle.model.config._attn_implementation = "eager"  # attention weights, not a fused kernel
    enc = bundle.tokenizer(list(pairs.a), list(pairs.b), truncation=True, max_length=128, padding=True, return_tensors="pt")
    with torch.no_grad():
        out = Parts.of(bundle.model).encoder(**enc, output_attentions=True)
    real = enc["attention_mask"].bool()
    entropy = [float((-(a * a.clamp_min(1e-30).log()).sum(-1)).mean(1)[real].mean()) for a in out.attentions]
    _SEEN[str(folder)] = {"cls": out.last_hidden_state[:, 0], "pooled": out.pooler_output, "entropy": entropy}
    return _SEEN[str(folder)]


def spread(x: torch.Tensor) -> float:
    return round(float(x.std(0).mean()), 5)


def centred_corr(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a - a.mean(0), b - b.mean(0)
    return round(float((a * b).sum() / (a.norm() * b.norm()).clamp_min(1e-12)), 4)


def run_record(folder: Path, pairs) -> dict:
    run = json.loads((folder / "run.json").read_text())
    rows = [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines() if line.strip()]
    card = json.loads((folder / "checkpoint" / "albert_lab.json").read_text())["provenance"]
    teacher = run["config"].get("distil_from")
    mine = states(folder / "checkpoint", pairs)
    record = {"run": folder.name, "command": run["config"]["command"], "code": card.get("code"),
              "checkpoint_step": card["steps"], "cls_spread": spread(mine["cls"]), "pooled_spread": spread(mine["pooled"]),
              "train": [{k: r[k] for k in ("step", "tokens", "pair_loss", "pair_acc", "mlm_acc") if k in r}
                        for r in rows if r["kind"] == "train"]}
    if teacher:
        record["pooled_corr_with_teacher"] = centred_corr(mine["pooled"], states(teacher, pairs)["pooled"])
    return record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", nargs="*", default=[])
    parser.add_argument("--runs", nargs="*", default=[], type=Path)
    parser.add_argument("--out", type=Path, default=ROOT / "experiments" / "sop-start.json")
    args = parser.parse_args()
    torch.manual_seed(0)
    pairs = evaluation_pairs()
    pairs = pairs[(pairs.task == "sop") & (pairs.domain == "in")].sample(PAIRS, random_state=0)
    starts = []
    for folder in args.starts:
        s = states(folder, pairs)
        card_file = Path(folder) / "albert_lab.json"
        card = json.loads(card_file.read_text()) if card_file.is_file() else {}
        starts.append({"start": str(folder), "conversion": card.get("conversion", {}).get("init", "as trained"),
                       "attention_kept": card.get("conversion", {}).get("attention_kept"),
                       "cls_spread": spread(s["cls"]), "pooled_spread": spread(s["pooled"]),
                       "attention_entropy": [round(e, 3) for e in s["entropy"]]})
        print(f"| {folder} | {starts[-1]['conversion']} | {starts[-1]['cls_spread']} | {starts[-1]['pooled_spread']} | "
              f"{', '.join(f'{e:.2f}' for e in s['entropy'])} |")
    runs = [run_record(folder, pairs) for folder in args.runs]
    for r in runs:
        last = r["train"][-1]
        print(f"| {r['run']} | step {r['checkpoint_step']} | pair loss {last['pair_loss']:.3f} | pooled spread "
              f"{r['pooled_spread']} | corr with teacher {r.get('pooled_corr_with_teacher')} |")
    from albert_lab.checkpoint.sources import packaged_folder

    text = json.dumps({"pairs": PAIRS, "starts": starts, "runs": runs}, indent=1) + "\n"
    if packaged_folder("minilm"):  # the machine's paths out of the record
        text = text.replace(str(packaged_folder("minilm")), "$MINILM")
    args.out.write_text(text.replace(f"{ROOT}/", ""))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
