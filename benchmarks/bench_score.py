"""Scoring throughput and analysis latency on an albert-base-sized model, on this CPU.

1. 512 sentence pairs of mixed length (8-120 tokens): length-bucketed batched scoring
   (albert_lab.analysis.intrinsic.pair_probabilities) against a one-pair-at-a-time loop,
   in fp32 and bf16. Prints pairs/s, the ratio (target >= 5x) and model FLOPs
   utilisation: forward FLOPs of the real tokens over the time, as a share of this
   machine's matmul throughput measured in the same run (target >= 50%).
2. Oscillation + gradient flow for 8 x 128 tokens: seconds (target < 3 s).

Run: .venv/bin/python benchmarks/bench_score.py [--threads N] [--pairs 512]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from albert_lab.analysis.common import tune_for_inference
from albert_lab.analysis.intrinsic import pair_probabilities
from albert_lab.data.corpus import load_builtin
from albert_lab.models import build_model
from albert_lab.params import count
from albert_lab.spec import PRESETS
from albert_lab.tokenizer import train_tokenizer


def matmul_peak(dtype: torch.dtype, n: int = 2048, seconds: float = 2.0) -> float:
    """Measured FLOP/s of a large square matmul (the ceiling for MFU)."""
    a, b = torch.randn(n, n, dtype=dtype), torch.randn(n, n, dtype=dtype)
    for _ in range(3):
        a @ b
    reps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        a @ b
        reps += 1
    return 2 * n ** 3 * reps / (time.perf_counter() - start)


def make_pairs(tokenizer, n: int, seed: int = 0) -> tuple[list[str], list[str], list[int]]:
    """Pairs of held-out sentences cut to a total length drawn uniformly from 8-120 tokens."""
    rng = np.random.default_rng(seed)
    sentences = [s for d in load_builtin().heldout for s in d.segments]
    ids = [x for x in tokenizer(sentences, add_special_tokens=False)["input_ids"] if len(x) >= 60]
    a, b = [], []
    for _ in range(n):
        room = int(rng.integers(8, 121)) - 3  # [CLS] A [SEP] B [SEP]
        i, j = rng.integers(len(ids), size=2)
        a.append(tokenizer.decode(ids[i][: room // 2]))
        b.append(tokenizer.decode(ids[j][: room - room // 2]))
    return a, b, [len(e) for e in tokenizer(a, b)["input_ids"]]


def flops(spec, lengths: list[int]) -> float:
    """Forward FLOPs of the encoder for each pair at its own length, plus the pair head."""
    return sum(count(spec, seq_len=t).flops_per_token * t for t in lengths)


def bench_scoring(model, tokenizer, spec, a, b, lengths, dtype, peak: float) -> dict:
    pair_probabilities(model, tokenizer, a[:32], b[:32], dtype=dtype)  # warm-up
    start = time.perf_counter()
    batched = pair_probabilities(model, tokenizer, a, b, dtype=dtype)
    t_batched = time.perf_counter() - start
    n_single = min(128, len(a))
    start = time.perf_counter()
    single = np.array([pair_probabilities(model, tokenizer, [x], [y], dtype=dtype)[0] for x, y in zip(a[:n_single], b[:n_single])])
    t_single = (time.perf_counter() - start) * len(a) / n_single  # extrapolated to all pairs
    agree = float(np.abs(single - batched[:n_single]).max())
    return dict(batched_pairs_s=len(a) / t_batched, single_pairs_s=len(a) / t_single, ratio=t_single / t_batched,
                mfu=flops(spec, lengths) / t_batched / peak, max_diff=agree)


def bench_analyses(model, tokenizer, spec) -> float:
    from albert_lab.analysis.gradflow import gradient_flow_on_batch
    from albert_lab.analysis.oscillation import per_token_transitions
    from albert_lab.data.batching import Batch

    torch.manual_seed(0)
    ids = torch.randint(5, spec.vocab_size, (8, 128))
    mask = torch.ones_like(ids)
    batch = Batch(ids, torch.zeros_like(ids), mask, torch.arange(0, 8 * 128, 7), torch.randint(5, 100, (147,)),
                  torch.zeros(8, dtype=torch.long))
    start = time.perf_counter()
    with torch.inference_mode():
        states = model.albert(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states
        per_token_transitions([h.float() for h in states])
    gradient_flow_on_batch(model, spec, batch)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--pairs", type=int, default=512)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    corpus = load_builtin()
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        tokenizer = train_tokenizer([s for d in corpus.train for s in d.segments], tmp, vocab_size=30000)
    spec = PRESETS["albert-base"].replace(vocab_size=len(tokenizer))
    model = tune_for_inference(build_model(spec, seed=0)).eval()
    a, b, lengths = make_pairs(tokenizer, args.pairs)
    print(f"albert-base-sized model ({count(spec).total / 1e6:.1f}M params), {len(a)} pairs of "
          f"{min(lengths)}-{max(lengths)} tokens (mean {np.mean(lengths):.0f}), {args.threads} threads")
    peaks = {torch.float32: matmul_peak(torch.float32), torch.bfloat16: matmul_peak(torch.bfloat16)}
    print(f"measured matmul peak: fp32 {peaks[torch.float32] / 1e9:.0f} GFLOP/s, bf16 {peaks[torch.bfloat16] / 1e9:.0f} GFLOP/s")
    for dtype, name in ((torch.float32, "fp32"), (torch.bfloat16, "bf16")):
        r = bench_scoring(model, tokenizer, spec, a, b, lengths, dtype if dtype == torch.bfloat16 else None, peaks[dtype])
        print(f"{name}: batched {r['batched_pairs_s']:.1f} pairs/s, one at a time {r['single_pairs_s']:.1f} pairs/s, "
              f"ratio {r['ratio']:.1f}x (target >= 5x); MFU {r['mfu']:.0%} of the measured {name} matmul peak "
              f"(target >= 50%); max |batched - single| {r['max_diff']:.1e}")
    seconds = bench_analyses(model, tokenizer, spec)
    print(f"oscillation + gradient flow, 8 x 128 tokens: {seconds:.2f} s (target < 3 s)")


if __name__ == "__main__":
    main()
