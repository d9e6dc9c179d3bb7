#!/usr/bin/env python
"""What a frozen encoder knows of sentence order and of topic: an SOP and an NSP head fitted
on each encoder's frozen [CLS] (`albert-lab fit-head`'s probe, the same pairs for every
encoder), for all-MiniLM-L6-v2 as installed and for each shipped checkpoint. Writes
docs/probes.json and the table between the markers in docs/results.md.

Run: .venv/bin/python scripts/probe_table.py [--train-pairs 2000 --heldout-pairs 1000]
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from albert_lab.checkpoint.load import load_checkpoint  # noqa: E402
from albert_lab.checkpoint.sources import packaged_folder  # noqa: E402
from albert_lab.training.probe import fit_probe  # noqa: E402

ENCODERS = ["all-MiniLM-L6-v2", "albert-sop", "albert-nsp", "albert-none", "bert-nsp", "bert-sop-minilm", "albert-sop-minilm",
            "albert-nsp-minilm"]
RESULTS = ROOT / "docs" / "probes.json"
START, END = "<!-- probes:start -->", "<!-- probes:end -->"


def measure(encoders: list[str], train_pairs: int, heldout_pairs: int, steps: int, seed: int) -> list[dict]:
    rows = []
    for name in encoders:
        source = packaged_folder("minilm") if name == "all-MiniLM-L6-v2" else ROOT / "checkpoints" / name
        for task in ("sop", "nsp"):
            start = time.perf_counter()
            bundle = load_checkpoint(source, device="cpu")
            result = fit_probe(bundle, task, "long-mix", train_pairs, heldout_pairs, steps, seed=seed)
            rows.append(dict(encoder=name, task=task, accuracy=result.accuracy, low=result.low, high=result.high,
                             n=result.heldout_pairs, train_pairs=result.train_pairs, pooler=result.pooler,
                             seconds=round(time.perf_counter() - start, 1)))
            print(f"{name:18s} {task}: {result.accuracy:.3f} [{result.low:.2f}, {result.high:.2f}] n={result.heldout_pairs}",
                  file=sys.stderr)
    return rows


def table(rows: list[dict]) -> str:
    cell = {(r["encoder"], r["task"]): f"{r['accuracy']:.3f} [{r['low']:.2f}, {r['high']:.2f}]" for r in rows}
    n = {r["task"]: r["n"] for r in rows}
    lines = [f"| frozen encoder | SOP probe (n = {n['sop']:,}) | NSP probe (n = {n['nsp']:,}) |", "|---|---|---|"]
    lines += [f"| {name} | {cell[(name, 'sop')]} | {cell[(name, 'nsp')]} |" for name in ENCODERS if (name, "sop") in cell]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--train-pairs", type=int, default=2000)
    parser.add_argument("--heldout-pairs", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--encoders", nargs="+", choices=ENCODERS, default=ENCODERS,
                        help="measure these; the other rows of docs/probes.json are kept (same settings only)")
    args = parser.parse_args()
    rows = measure(args.encoders, args.train_pairs, args.heldout_pairs, args.steps, args.seed)
    settings = dict(train_pairs=args.train_pairs, heldout_pairs=args.heldout_pairs, steps=args.steps, seed=args.seed)
    old = json.loads(RESULTS.read_text()) if RESULTS.is_file() else {}
    if old.get("settings") == settings:
        rows = [r for r in old["rows"] if r["encoder"] not in args.encoders] + rows
    rows.sort(key=lambda r: ENCODERS.index(r["encoder"]))
    command = f"scripts/probe_table.py --train-pairs {args.train_pairs} --heldout-pairs {args.heldout_pairs} --steps {args.steps}"
    RESULTS.write_text(json.dumps({"command": command, "settings": settings, "machine": f"{platform.machine()}, CPU",
                                   "rows": rows}, indent=1) + "\n")
    results = ROOT / "docs" / "results.md"
    text = results.read_text()
    if START in text:
        head, _, rest = text.partition(START)
        text = head + START + "\n" + table(rows) + "\n" + rest.partition(END)[1] + rest.partition(END)[2]
        results.write_text(text)
    print(table(rows))


if __name__ == "__main__":
    main()
