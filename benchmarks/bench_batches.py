"""How fast one worker makes training batches: masked 128-token sentence pairs, as the
training loop asks for them (`PretrainingData.batch(step)`, a pure function of the seed and
the step), on one CPU thread.

The documents are synthetic (random ids in sentences of 8-40 pieces, 8-60 sentences per
document, a 30,522-piece vocabulary with every fourth piece a word start): the cost of a
batch depends on its shape, not on the words. Steps are timed in rounds after one epoch's
pairs are built (that is done once an epoch, not per step), and the first batch of each
round is the first of a new 20-step stretch, so the cached epoch is the only shared state.

Target: at least 0.5M tokens/s (real, unpadded tokens), so that one worker keeps ahead of
a GPU step at any batch size this project trains.

Run: .venv/bin/python benchmarks/bench_batches.py [--rounds 5] [--steps 20] [--batch-size 64]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch

from albert_lab.data.batching import PretrainingData
from albert_lab.data.masking import MaskingConfig
from albert_lab.data.tokenized import TokenizedDocs

VOCAB = 30522


def synthetic_docs(documents: int = 2000, seed: int = 0, vocab: int = VOCAB) -> TokenizedDocs:
    """Random ids in [1000, vocab) (or [5, vocab) for a small vocabulary) in sentences of 8-40 pieces."""
    rng = np.random.default_rng(seed)
    sentences = [rng.integers(8, 41, size=rng.integers(8, 61)) for _ in range(documents)]
    lengths = np.concatenate(sentences)
    ids = rng.integers(1000 if vocab > 2000 else 5, vocab, size=int(lengths.sum()), dtype=np.int32)
    segment_bounds = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    document_bounds = np.concatenate([[0], np.cumsum([len(s) for s in sentences])]).astype(np.int64)
    return TokenizedDocs(ids=ids, segment_bounds=segment_bounds, document_bounds=document_bounds)


def masking() -> MaskingConfig:
    word_start = np.zeros(VOCAB, dtype=bool)
    word_start[::4] = True
    return MaskingConfig(vocab_size=VOCAB, mask_id=103, special_ids=frozenset({0, 101, 102}), word_start=word_start,
                         first_random_id=999)


def make_data(batch_size: int, seq_len: int = 128) -> PretrainingData:
    return PretrainingData(synthetic_docs(), "sop", masking(), (101, 102, 0), seq_len, batch_size, seed=0)


def rate(data: PretrainingData, first: int, steps: int) -> float:
    """Real tokens per second over `steps` batches from step `first`."""
    tokens, start = 0, time.perf_counter()
    for step in range(first, first + steps):
        tokens += data.batch(step).num_tokens
    return tokens / (time.perf_counter() - start)


def measure(rounds: int, steps: int, batch_size: int) -> dict[str, float]:
    data = make_data(batch_size)
    data.batch(0)  # the epoch's pairs: once an epoch, not per step
    rates = [rate(data, 1 + r * steps, steps) for r in range(rounds)]
    return {"tokens_per_s": statistics.median(rates), "min": min(rates), "max": max(rates)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args()
    torch.set_num_threads(1)
    result = measure(args.rounds, args.steps, args.batch_size)
    print(f"one worker, batch {args.batch_size} x <=128 tokens (SOP pairs, n-gram masking): "
          f"{result['tokens_per_s'] / 1e6:.2f}M [{result['min'] / 1e6:.2f}-{result['max'] / 1e6:.2f}] real tokens/s "
          f"(median [min-max] of {args.rounds} rounds of {args.steps} batches); target >= 0.5M")


if __name__ == "__main__":
    main()
