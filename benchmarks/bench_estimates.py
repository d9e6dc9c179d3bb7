"""The app's time estimates against measurement: for every analysis whose record has a cost
(albert_lab.analysis.registry), what a page says before it starts (the page's units of work times
the record's seconds per unit, as app.shell.pace.estimate answers before this process has timed
anything) and what the same work then takes, called as the page calls it, on the shipped
checkpoints: every record with a cost, in a loop over the registry (Table 5 measured now, oscillation,
gradient flow, depth extrapolation, an uploaded pairs file, token attributions: a new record's work is timed
without an edit here), and for a BERT the relaxation curve (Parameters, Relaxed sharing).
The Depth lab's trainings need no checkpoint: the disc MLP in each variant (and one deep and wide),
and the four VGG nets, each timed once (a training from scratch is all the work there is), on one
thread as the page trains them (pace.one_thread).

Each work is timed once cold (the first in this process: imports, captum's hooks) and then warm
(the best of --repeat); `ratio` is warm / estimate, and `s/unit` the warm seconds per unit, what
the record's guess would be to be right here. The load average is printed beside: on a shared
2-core machine the same work takes about twice as long at load 4 as alone.

Table 5's units are the pairs evaluate() scores (each one forward pass: MLM, NSP and SOP, in the held-out
and, when installed, the out-of-domain sets), and building its held-out pairs, the first time, is its
record's Cost.first (the row 'held-out pairs, built').

Run: .venv/bin/python benchmarks/bench_estimates.py [--checkpoint albert-sop --checkpoint ...] [--steps 50]
     [--only table5 --limit 50]: one kind of work; [--only depth --only vgg --train-steps 100]: the Depth lab's
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from functools import partial
from pathlib import Path

import pandas as pd
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the app's modules, as the other app benchmarks

from albert_lab.analysis.registry import ANALYSES, Analysis
from albert_lab.checkpoint.load import load_checkpoint
from albert_lab.data.samples import sample_texts
from albert_lab.paths import checkpoints_dir
from app.rooms.sentence_pairs.common import EXAMPLE_A, EXAMPLE_B
from app.shell import costs, pace


def timed(work) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def inputs_of(record: Analysis, texts: list[str], pairs: pd.DataFrame, held_out) -> tuple[str, object]:
    """What the page hands the analysis of `record`, and its words: the built-in sample, the upload, the held-out
    pairs, the typed pair (its inputs kind, analysis.registry.Inputs)."""
    return {"texts": lambda: (f"{len(texts)} texts", texts), "text": lambda: ("one text", texts[0]),
            "pairs": lambda: (f"{len(pairs)} pairs", pairs), "held-out": lambda: ("held-out pairs", held_out()),
            "pair": lambda: ("the typed pair", (EXAMPLE_A, EXAMPLE_B))}[record.inputs]()


def works(bundle, args, texts: list[str], pairs: pd.DataFrame, held_out) -> list[tuple[str, str, float, object]]:
    """(what, cost kind, the page's units, the call) for each analysis record with a cost, on `bundle`, called as
    the command line calls it (its options the record's defaults, those that follow the checkpoint its own, the
    page's where this script's flags set them), and for a BERT the relaxation curve (no record: `relax --ranks`)."""
    from albert_lab.analysis.relaxation import DEFAULT_PAIRS, DEFAULT_RANKS, curve_and_energy

    page = {"limit": args.limit, "repeat": args.repeat, "n_steps": args.steps}  # the pages' own, where not the record's
    found = []
    for record in (r for r in ANALYSES if r.cost is not None):
        words, data = inputs_of(record, texts, pairs, held_out)
        options = {o.name: page[o.name] if o.name in page else record.default(o.name, bundle)
                   for o in record.used("run") if o.name in page or o.follows}
        said = ", ".join(f"{k} = {v}" for k, v in options.items())
        found.append((f"{record.name}, {words}" + (f", {said}" if said else ""), record.cost.kind,
                      record.units(bundle, data, **options), partial(call, record, bundle, data, options)))
    if bundle.spec.family == "bert":
        found.append((f"relaxation curve, {len(DEFAULT_RANKS)} ranks, {DEFAULT_PAIRS} pairs", "relaxation",
                      costs.relaxation_units(bundle.spec, len(DEFAULT_RANKS), DEFAULT_PAIRS),
                      lambda: curve_and_energy(bundle.source, DEFAULT_RANKS, pairs=DEFAULT_PAIRS)))
    return found


def call(record: Analysis, bundle, data, options: dict) -> object:
    """The record's function on `bundle` (alone where it takes one) and its inputs (a pair: A and B), as al's verb calls it."""
    return record.load()(bundle if record.most == 1 else [bundle], *(data if record.inputs == "pair" else (data,)), **options)


def depth_works(args) -> list[tuple[str, str, float, object]]:
    """(what, cost kind, the page's units, the call) of the Depth lab's trainings at its settings, --train-steps
    steps each: the disc MLP in every variant, one 48 layers deep and 128 wide, and the four VGG nets."""
    from albert_lab.analysis.depth import VGG_NETS, describe, train_disc, train_vgg, vgg_label
    from app.rooms.depth_lab.cache import DEFAULTS, VARIANTS, VGG_DEFAULTS, VGG_RECORD_EVERY, config

    settings = {**{k: v for k, v in DEFAULTS.items() if k != "variants"}, "steps": args.train_steps}
    discs = [config(v, **settings) for v in VARIANTS] + [config("none", **{**settings, "depth": 48, "width": 128})]
    return [(f"disc, {describe(c)}, width {c.width}", "depth", costs.disc_units(c), partial(train_disc, c))
            for c in discs] + [
        (f"{vgg_label(d, bn)}", "vgg", costs.vgg_units(args.train_steps, [(d, bn)]),
         partial(train_vgg, d, bn, args.train_steps, VGG_DEFAULTS["lr"], record_every=VGG_RECORD_EVERY)) for d, bn in VGG_NETS]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", action="append",
                        help="shipped checkpoint names (default: albert-sop, albert-sop-minilm, bert-nsp)")
    parser.add_argument("--steps", type=int, default=50, help="integration steps (the page's default: 50)")
    parser.add_argument("--pairs", type=int, default=200, help="pairs in the upload")
    parser.add_argument("--limit", type=int, default=100, help="Table 5's pairs per task (the page's default: 100)")
    parser.add_argument("--repeat", type=int, default=2, help="extrapolation's K (the page's default: 2)")
    parser.add_argument("--rounds", type=int, default=2, help="warm timings per work, the best kept")
    parser.add_argument("--train-steps", type=int, default=100, help="the Depth lab's trainings' steps (the page's: 300)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--only", action="append", choices=sorted(costs.SECONDS_PER_UNIT),
                        help="time only these kinds of work (default: every one)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    names = args.checkpoint or ["albert-sop", "albert-sop-minilm", "bert-nsp"]
    texts = sample_texts(16)  # the pages' built-in sample
    sentences = [s.strip() + "." for t in sample_texts(64) for s in t.split(". ") if len(s) > 20]
    pairs = pd.DataFrame(dict(sentence_a=sentences[0:2 * args.pairs:2], sentence_b=sentences[1:2 * args.pairs:2]))
    pairs = pairs.assign(row=range(2, len(pairs) + 2), label=pd.array([None] * len(pairs), dtype="Int64"))
    from functools import cache

    from albert_lab.analysis.evaluation import evaluation_pairs
    held_out = cache(evaluation_pairs)
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; {args.threads} threads")
    rows = []
    if not args.only or "table5" in args.only:  # the first evaluation builds the held-out pairs: Cost.first
        rows.append(dict(work="Table 5's held-out pairs, built", checkpoint="-", units=1.0,
                         estimate_s=costs.FIRST_TIME_SECONDS["table5"], cold_s=(built := timed(held_out)),
                         measured_s=built, ratio=built / costs.FIRST_TIME_SECONDS["table5"], s_per_unit=built,
                         guess_per_unit=costs.FIRST_TIME_SECONDS["table5"]))
    for what, kind, units, run in depth_works(args):
        if not args.only or kind in args.only:
            with pace.one_thread():  # as the page trains them
                took = timed(run)
            guess = units * costs.SECONDS_PER_UNIT[kind]
            rows.append(dict(work=what, checkpoint="-", units=units, estimate_s=guess, cold_s=took, measured_s=took,
                             ratio=took / guess, s_per_unit=took / units, guess_per_unit=costs.SECONDS_PER_UNIT[kind]))
    for name in names if not args.only or set(args.only) - {"depth", "vgg"} else []:
        bundle = load_checkpoint(checkpoints_dir() / name, device="cpu")
        for what, kind, units, run in works(bundle, args, texts, pairs, held_out):
            if args.only and kind not in args.only:
                continue
            first = timed(run)
            warm = min(timed(run) for _ in range(args.rounds))
            guess = units * costs.SECONDS_PER_UNIT[kind]
            rows.append(dict(work=what, checkpoint=name, units=round(units, 2), estimate_s=guess, cold_s=first,
                             measured_s=warm, ratio=warm / guess, s_per_unit=warm / units, guess_per_unit=costs.SECONDS_PER_UNIT[kind]))
    frame = pd.DataFrame(rows)
    print(frame.to_string(index=False, float_format=lambda v: f"{v:.3g}"))
    print(f"load average after: {os.getloadavg()[0]:.1f}; ratio = measured / estimated (1: the estimate was right)")
    fitted = frame.groupby("work", sort=False).s_per_unit.agg(["median", "min", "max"])
    print("seconds per unit measured (median [min-max] over the checkpoints):")
    for work, row in fitted.iterrows():
        print(f"  {work}: {row['median']:.3g} [{row['min']:.3g}-{row['max']:.3g}]")
    trainings = frame[frame.work.str.startswith(("disc", "VGG"))]
    if len(trainings):  # what the Depth lab's estimate of several nets at once would take per unit
        print("  the Depth lab's nets together: " + ", ".join(
            f"{kind} {group.measured_s.sum() / group.units.sum():.3g}"
            for kind, group in trainings.groupby(trainings.work.str.startswith("VGG").map({True: "vgg", False: "disc"}))))


if __name__ == "__main__":
    main()
