#!/usr/bin/env python
"""docs/relaxation.json and docs/relaxation.md's tables: the relaxation curve (albert-lab relax --ranks)
of each shipped BERT, with the residual energy of each map (which maps sharing changes most).

Each source, each init: analysis.relaxation.curve_and_energy at ranks 0, 4, 16, 64 and full, on
128 held-out pairs per task (the command's default) and the built-in oscillation sample.

Run: .venv/bin/python scripts/make_relaxation.py [--sources bert-nsp,bert-sop-minilm] [--inits average,stepwise]
     [--tables-only]
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
START, END = "<!-- relaxation:start -->", "<!-- relaxation:end -->"


def compute(sources: list[str], inits: list[str]) -> dict:
    from albert_lab.analysis.relaxation import curve_and_energy
    from albert_lab.checkpoint.discover import resolve_checkpoint

    results = {}
    for source in sources:
        for init in inits:
            started = time.perf_counter()
            curve, energy = curve_and_energy(resolve_checkpoint(source), init=init)
            results[f"{source} {init}"] = {"source": source, "init": init, "seconds": round(time.perf_counter() - started, 1),
                                           "curve": json.loads(curve.to_json(orient="records")),
                                           "energy": json.loads(energy.to_json(orient="records"))}
            print(f"{source} ({init}): {time.perf_counter() - started:.0f} s", file=sys.stderr)
    return results


def curve_table(entry: dict) -> str:
    head = ("| model | unique parameters | share of the source's | energy kept | MLM accuracy | pair accuracy [95%] "
            "| KL from the source | roughness |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for row in entry["curve"]:
        pair = "-" if row["pair_accuracy"] is None else f"{row['pair_accuracy']:.3f} [{row['pair_low']:.2f}, {row['pair_high']:.2f}]"
        mlm = "-" if row["mlm_accuracy"] is None else f"{row['mlm_accuracy']:.3f}"
        kl = "-" if row["kl"] is None else f"{row['kl']:.3f}"
        lines.append(f"| {row['model']} | {row['parameters']:,} | {row['share_of_source']:.0%} | {row['energy_kept']:.1%} | {mlm} | "
                     f"{pair} | {kl} | {row['roughness']:.2f} |")
    return "\n".join(lines)


def map_table(entry: dict, rank: str = "16") -> str:
    """Per map: its share of all residual energy, and what rank `rank` keeps of it (mean over applications)."""
    rows = [r for r in entry["energy"] if r["rank"] == rank]
    total = sum(r["energy"] for r in rows) or 1.0
    maps = sorted({r["map"] for r in rows}, key=lambda m: -sum(r["energy"] for r in rows if r["map"] == m))
    lines = [f"| map | share of the residual energy | kept at rank {rank} |", "|---|---|---|"]
    for name in maps:
        mine = [r for r in rows if r["map"] == name]
        energy = sum(r["energy"] for r in mine)
        kept = sum(r["energy"] * r["energy_kept"] for r in mine) / (energy or 1.0)
        lines.append(f"| {name} | {energy / total:.1%} | {kept:.1%} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sources", default="bert-nsp,bert-sop-minilm")
    parser.add_argument("--inits", default="average,stepwise")
    parser.add_argument("--tables-only", action="store_true", help="redraw the tables from docs/relaxation.json")
    args = parser.parse_args()
    path = DOCS / "relaxation.json"
    if not args.tables_only:
        path.write_text(json.dumps(compute(args.sources.split(","), args.inits.split(",")), indent=1) + "\n")
    results = json.loads(path.read_text())
    parts = []
    for entry in results.values():
        parts.append(f"**{entry['source']}, shared blocks from init `{entry['init']}`** ({entry['seconds']:.0f} s)\n\n"
                     f"{curve_table(entry)}\n\n{map_table(entry)}")
    markdown = DOCS / "results.md"
    text = markdown.read_text()
    if START in text:
        before, rest = text.split(START, 1)
        text = before + START + "\n" + "\n\n".join(parts) + "\n" + END + rest.split(END, 1)[1]
        markdown.write_text(text)
    else:
        print("\n\n".join(parts))


if __name__ == "__main__":
    main()
