"""Relaxed sharing: what the curve costs, and what a relaxed forward costs against the plain ALBERT's.

1. The curve as a user runs it: `albert-lab relax --checkpoint SRC --ranks 0,4,16,64,full --json` in a
   fresh process (imports, loading, the SVDs, every model's MLM, pair and oscillation passes), wall
   time per round. Target on 2 CPU cores for bert-sop-minilm: under 2 minutes.
2. A forward pass of the relaxed model at rank R (default 16) against the pure ALBERT made from the
   same source (rank 0: the shared block alone), on the same batch, in turn (A B A B) for several
   rounds: the median time of each and their ratio, with the spread. Target: at most 1.3x.
   Both models go through the kernels every loaded checkpoint gets (kernels.tune_for_inference).
   Twice: as analyses run it (no gradients: each correction merged into its matrix once), and as
   training runs it (gradients on: x W^T + (x A^T) B^T, the backward pass not timed).

Run: .venv/bin/python benchmarks/bench_relax.py [--checkpoint bert-sop-minilm] [--rank 16] [--rounds 7]
     [--curve-rounds 1] [--batch 32] [--tokens 128]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def curve_seconds(checkpoint: str) -> float:
    started = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "albert_lab", "relax", "--checkpoint", checkpoint,
                             "--ranks", "0,4,16,64,full", "--json"], cwd=ROOT, capture_output=True, text=True)
    if result.returncode:
        raise SystemExit(result.stderr[-2000:])
    return time.perf_counter() - started


def forward_times(checkpoint: str, rank: int, rounds: int, batch: int, tokens: int, grad: bool) -> tuple[list[float], list[float]]:
    import torch

    from albert_lab.checkpoint.discover import resolve_checkpoint
    from albert_lab.kernels import tune_for_inference
    from albert_lab.relax import Relaxation, load_source, source_eps, source_state

    bundle = load_source(resolve_checkpoint(checkpoint))
    relaxation = Relaxation.of(source_state(bundle), bundle.spec, bundle.spec.hidden_size, layer_norm_eps=source_eps(bundle))
    plain, relaxed = (relaxation.at(relaxation.ranks(r)).model.eval() for r in (0, rank))
    for model in (plain, relaxed):
        tune_for_inference(model)
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(5, bundle.spec.vocab_size, (batch, tokens), generator=generator)
    inputs = dict(input_ids=ids, attention_mask=torch.ones_like(ids), token_type_ids=torch.zeros_like(ids))

    def once(model) -> float:
        started = time.perf_counter()
        with torch.set_grad_enabled(grad):
            model.albert(**inputs)
        return time.perf_counter() - started

    for model in (plain, relaxed):  # warm-up
        once(model)
    a, b = [], []
    for _ in range(rounds):
        a.append(once(plain))
        b.append(once(relaxed))
    return a, b


def spread(values: list[float]) -> str:
    return f"median {statistics.median(values):.3f} s (min {min(values):.3f}, max {max(values):.3f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", default="bert-sop-minilm")
    parser.add_argument("--rank", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--curve-rounds", type=int, default=1, help="curve runs (0 skips the curve)")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--tokens", type=int, default=128)
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}")
    for grad, what in ((False, "as analyses run it, no gradients"), (True, "as training runs it, gradients on")):
        plain, relaxed = forward_times(args.checkpoint, args.rank, args.rounds, args.batch, args.tokens, grad)
        ratios = [r / p for p, r in zip(plain, relaxed)]
        print(f"forward of {args.batch} x {args.tokens} tokens, {args.checkpoint}, {what}:")
        print(f"  ALBERT (rank 0):   {spread(plain)}")
        print(f"  relaxed rank {args.rank}: {spread(relaxed)}")
        print(f"  ratio relaxed / ALBERT: median {statistics.median(ratios):.2f}x (min {min(ratios):.2f}, "
              f"max {max(ratios):.2f}); target <= 1.3x")
    if args.curve_rounds:
        times = [curve_seconds(args.checkpoint) for _ in range(args.curve_rounds)]
        print(f"relax --ranks 0,4,16,64,full on {args.checkpoint}: {spread(times)}; target < 120 s; "
              f"load at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
