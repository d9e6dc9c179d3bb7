"""The app's time estimates against measurement: what a page says before it starts (app/shell/costs.py:
units of work times the guessed seconds per unit, as app.shell.ui.estimate answers before this process
has timed anything) and what the same work then takes, for token attributions (Sentence pairs,
Explain) and an uploaded pairs file (Sentence pairs, upload), on the shipped checkpoints.

The first attribution in a process also imports captum: it is timed apart ('cold') from the
ones after it ('warm'). The load average is printed beside: on a shared 2-core machine the
same work takes twice as long at load 4 as alone.

Run: .venv/bin/python benchmarks/bench_estimates.py [--checkpoint albert-sop --checkpoint ...] [--steps 50]
"""

from __future__ import annotations

import argparse
import os
import time

import pandas as pd
import torch

from albert_lab.checkpoint.load import load_checkpoint
from albert_lab.data.samples import sample_texts
from albert_lab.paths import checkpoints_dir
from app.rooms.sentence_pairs.common import EXAMPLE_A, EXAMPLE_B
from app.shell import costs


def timed(work) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", action="append", help="shipped checkpoint names (default: albert-sop, albert-sop-minilm)")
    parser.add_argument("--steps", type=int, default=50, help="integration steps (the page's default: 50)")
    parser.add_argument("--pairs", type=int, default=200, help="pairs in the upload")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    names = args.checkpoint or ["albert-sop", "albert-sop-minilm"]
    sentences = [s.strip() + "." for t in sample_texts(64) for s in t.split(". ") if len(s) > 20]
    pairs = pd.DataFrame(dict(sentence_a=sentences[0:2 * args.pairs:2], sentence_b=sentences[1:2 * args.pairs:2]))
    pairs = pairs.assign(row=range(2, len(pairs) + 2), label=pd.array([None] * len(pairs), dtype="Int64"))
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; {args.threads} threads")
    rows = []
    for k, name in enumerate(names):
        bundle = load_checkpoint(checkpoints_dir() / name, device="cpu")
        from albert_lab.analysis.attribution import attribute_pair
        from albert_lab.analysis.pairs import score_pairs

        tokens = len(bundle.tokenizer(EXAMPLE_A, EXAMPLE_B)["input_ids"])
        units = costs.attribution_units(bundle.spec, args.steps, tokens)
        guess = units * costs.SECONDS_PER_UNIT["attribution"]
        run = lambda: attribute_pair(bundle, EXAMPLE_A, EXAMPLE_B, 0, args.steps)  # noqa: B023 (called at once)
        first = timed(run)
        warm = min(timed(run) for _ in range(2))
        rows.append(dict(work=f"attribution, {args.steps} steps", checkpoint=name, units=round(units, 1), estimate_s=guess,
                         measured_s=warm, first_s=first if k == 0 else None, ratio=warm / guess))
        units = len(pairs) * costs.size(bundle.spec)
        guess = units * costs.SECONDS_PER_UNIT["score_upload"]
        measured = timed(lambda: score_pairs(bundle, pairs))  # noqa: B023
        rows.append(dict(work=f"upload, {len(pairs)} pairs", checkpoint=name, units=round(units, 1), estimate_s=guess,
                         measured_s=measured, first_s=None, ratio=measured / guess))
    print(pd.DataFrame(rows).to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    print(f"load average after: {os.getloadavg()[0]:.1f}; ratio = measured / estimated (1: the estimate was right)")


if __name__ == "__main__":
    main()
