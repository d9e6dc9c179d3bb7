"""The app's time estimates against measurement: for every analysis whose record has a cost
(albert_lab.analysis.registry), what a page says before it starts (the page's units of work times
the record's seconds per unit, as app.shell.pace.estimate answers before this process has timed
anything) and what the same work then takes, called as the page calls it, on the shipped
checkpoints: Table 5 measured now, oscillation, gradient flow, depth extrapolation, an uploaded
pairs file, token attributions, and for a BERT the relaxation curve (Parameters, Relaxed sharing).
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

from albert_lab.checkpoint.load import load_checkpoint
from albert_lab.data.samples import sample_texts
from albert_lab.paths import checkpoints_dir
from app.rooms.sentence_pairs.common import EXAMPLE_A, EXAMPLE_B
from app.shell import costs, pace


def timed(work) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def works(bundle, args, texts: list[str], pairs: pd.DataFrame, held_out) -> list[tuple[str, str, float, object]]:
    """(what, cost kind, the page's units, the call) for each costed analysis on `bundle`."""
    from albert_lab.analysis.attribution import attribute_pair
    from albert_lab.analysis.evaluation import evaluate, pair_sets, pairs_scored
    from albert_lab.analysis.extrapolation import extrapolate
    from albert_lab.analysis.gradflow import default_objective, gradient_flow
    from albert_lab.analysis.oscillation import oscillation
    from albert_lab.analysis.pairs import score_pairs
    from albert_lab.analysis.relaxation import DEFAULT_PAIRS, DEFAULT_RANKS, curve_and_energy
    from albert_lab.card import model_card

    size = costs.size(bundle.spec)
    tokens = len(bundle.tokenizer(EXAMPLE_A, EXAMPLE_B)["input_ids"])
    applied = model_card(bundle)["params"]["applied"]
    own = default_objective(bundle)
    return [
        (f"Table 5, {args.limit} pairs per task", "table5", pairs_scored(bundle, pair_sets(held_out()), args.limit) * size,
         lambda: evaluate([bundle], held_out(), limit=args.limit)),
        (f"oscillation, {len(texts)} texts", "oscillation", costs.text_units(bundle.spec, len(texts)),
         lambda: oscillation([bundle], texts, "mean")),
        (f"gradient flow, {len(texts)} texts", "gradflow", applied / 1e6,
         lambda: gradient_flow(bundle, texts, objective=own, seed=0)),
        (f"extrapolation, K = {args.repeat}", "extrapolation", costs.text_units(bundle.spec, len(texts)) * args.repeat,
         lambda: extrapolate([bundle], texts, args.repeat, seed=0)),
        (f"upload, {len(pairs)} pairs", "score_upload", len(pairs) * size, lambda: score_pairs(bundle, pairs)),
        (f"attribution, {args.steps} steps", "attribution", costs.attribution_units(bundle.spec, args.steps, tokens),
         lambda: attribute_pair(bundle, EXAMPLE_A, EXAMPLE_B, 0, args.steps)),
    ] + ([(f"relaxation curve, {len(DEFAULT_RANKS)} ranks, {DEFAULT_PAIRS} pairs", "relaxation",
           costs.relaxation_units(bundle.spec, len(DEFAULT_RANKS), DEFAULT_PAIRS),
           lambda: curve_and_energy(bundle.source, DEFAULT_RANKS, pairs=DEFAULT_PAIRS))] if bundle.spec.family == "bert" else [])


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
