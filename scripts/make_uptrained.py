#!/usr/bin/env python
"""docs/relaxation-uptrained.json and docs/results.md's tables of the relaxation curve after uptraining:
each sweep (`albert-lab relax --ranks ... --uptrain STEPS`, run beforehand) read back, its two curves,
and which maps each trained relaxed model leans on (analysis.relaxation.map_ablation: the model without
one map's corrections, on the sweep's held-out MLM pairs).

Run: .venv/bin/python scripts/make_uptrained.py RUN [RUN ...] [--runs-dir runs] [--tables-only] [--no-ablation]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DOCS = ROOT / "docs"
DATA = DOCS / "relaxation-uptrained.json"
START, END = "<!-- uptrained:start -->", "<!-- uptrained:end -->"


def compute(folder: Path, ablate: bool = True) -> dict:
    """One sweep's curves, times and (unless not `ablate`) map ablations, as the docs show them."""
    from albert_lab.analysis.evaluation import evaluation_pairs
    from albert_lab.analysis.relaxation import map_ablation
    from albert_lab.checkpoint.load import load_checkpoint
    from albert_lab.checkpoint.sources import portable_name
    from albert_lab.data.corpus import MAX_LEN
    from albert_lab.relax import load_source
    from albert_lab.training.sweep import read_sweep
    from albert_lab.training.sweep_plan import member_dir, start_folder

    result = read_sweep(folder)
    run, plan = result.run, result.plan
    config = run.config
    reference = load_source(plan.source)
    held = evaluation_pairs(config.get("eval_corpus") or config["corpus"], out_of_domain=False)
    ablations, started = {}, time.perf_counter()
    for member in plan.members() if ablate else []:
        if member.kind != "relaxed" or member.value == "0":
            continue
        for stage, where in (("before", start_folder(folder, plan, member)), ("after", member_dir(folder, member) / "checkpoint")):
            bundle = load_checkpoint(where, device="cpu", name=member.name)
            frame = map_ablation(bundle, reference, held, plan.pairs, min(MAX_LEN, reference.spec.max_positions))
            ablations[f"{member.name} {stage}"] = json.loads(frame.to_json(orient="records"))
    cards = {m.name: json.loads((member_dir(folder, m) / "checkpoint" / "albert_lab.json").read_text())["provenance"]
             for m in plan.members()}
    measured = {name: json.loads((folder / name).read_text()).get("seconds") for name in ("before.json", "after.json")}
    return {"run": run.id, "source": portable_name(plan.source), "command": run.raw.get("sweep_command", ""),
            "plan": plan.to_dict() | {"source": portable_name(plan.source)}, "steps": config["max_steps"],
            "batch_size": config["batch_size"], "seq_len": config["max_seq_len"], "lr": config["lr"],
            "tokens": result.tokens, "machine": next(iter(cards.values()))["machine"],
            "train_seconds": {name: card["wall_time_s"] for name, card in cards.items()}, "measure_seconds": measured,
            "before": json.loads(result.before.to_json(orient="records")),
            "after": json.loads(result.after.to_json(orient="records")),
            "ablation": ablations, "ablation_seconds": round(time.perf_counter() - started, 1)}


def cell(row: dict, column: str, prefix: str) -> str:
    if row[column] is None:
        return "-"
    return f"{row[column]:.3f} [{row[f'{prefix}_low']:.3f}, {row[f'{prefix}_high']:.3f}]"


def curves_table(entry: dict) -> str:
    task = next((r["pair_task"] for r in entry["after"] if r["pair_task"]), "pair").upper()
    head = (f"| model | unique parameters | share of the source's | MLM before [95%] | MLM after [95%] | {task} before [95%] "
            f"| {task} after [95%] | KL before | KL after | roughness before | roughness after |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for b, a in zip(entry["before"], entry["after"], strict=True):
        lines.append(f"| {a['model']} | {a['parameters']:,} | {a['share_of_source']:.0%} | {cell(b, 'mlm_accuracy', 'mlm')} | "
                     f"{cell(a, 'mlm_accuracy', 'mlm')} | {cell(b, 'pair_accuracy', 'pair')} | {cell(a, 'pair_accuracy', 'pair')} | "
                     f"{b['kl']:.3f} | {a['kl']:.3f} | {b['roughness']:.2f} | {a['roughness']:.2f} |")
    return "\n".join(lines)


def ablation_table(entry: dict) -> str:
    """Per trained relaxed model and map: the MLM accuracy lost and the KL added without that map's corrections
    ('' when the sweep was read with --no-ablation)."""
    if not entry["ablation"]:
        return ""
    names = [k.removesuffix(" after") for k in entry["ablation"] if k.endswith(" after")]
    maps = [r["map"] for r in entry["ablation"][f"{names[0]} after"] if r["map"]]
    head = "| without the corrections of | " + " | ".join(f"{n}: MLM lost, KL added (before -> after training)"
                                                           for n in names) + " |"
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for name in maps:
        cells = []
        for model in names:
            b, a = ({r["map"]: r for r in entry["ablation"][f"{model} {stage}"]}[name] for stage in ("before", "after"))
            cells.append(f"{b['mlm_lost']:+.3f} -> {a['mlm_lost']:+.3f}, {b['kl_added']:+.3f} -> {a['kl_added']:+.3f}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def section(entry: dict) -> str:
    train = sum(entry["train_seconds"].values())
    measure = sum(s for s in entry["measure_seconds"].values() if s)
    return "\n\n".join([
        f"**{entry['source']}**: `{entry['command']}` ({len(entry['after'])} models, {entry['steps']:,} steps of "
        f"{entry['batch_size']} pairs of up to {entry['seq_len']} tokens, {entry['tokens']:,} tokens each; training "
        f"{train / 60:.0f} min in all, measuring {measure / 60:.0f} min; {entry['machine']})",
        curves_table(entry), ablation_table(entry)]).rstrip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="*", help="sweep run ids (or folders)")
    parser.add_argument("--runs-dir", type=Path, default=ROOT / "runs")
    parser.add_argument("--tables-only", action="store_true", help="redraw the tables from docs/relaxation-uptrained.json")
    parser.add_argument("--no-ablation", action="store_true", help="the curves alone (the map ablations take 12 MLM "
                        "evaluations per relaxed model)")
    args = parser.parse_args()
    results = json.loads(DATA.read_text()) if DATA.is_file() else {}
    if not args.tables_only:
        for run in args.runs:
            folder = Path(run) if Path(run).is_dir() else args.runs_dir / run
            entry = compute(folder, ablate=not args.no_ablation)
            results[entry["source"]] = entry
            print(f"{entry['source']}: ablations {entry['ablation_seconds']:.0f} s", file=sys.stderr)
        DATA.write_text(json.dumps(results, indent=1) + "\n")
    block = "\n\n".join(section(entry) for entry in results.values())
    page = DOCS / "results.md"
    text = page.read_text()
    head, rest = text.split(START, 1)
    page.write_text(f"{head}{START}\n{block}\n{END}{rest.split(END, 1)[1]}")


if __name__ == "__main__":
    main()
