"""Scoring throughput and analysis latency on an albert-base-sized model, interleaved in one run.

1. 512 sentence pairs of mixed length (8-120 tokens), P(original order) from the SOP head:
   - transformers batched bf16: the loop a user would write: pairs sorted by length,
     batches of 32, `tokenizer(..., padding=True)`, the stock model under
     `torch.autocast("cpu", torch.bfloat16)`;
   - transformers batched fp32: the same without autocast;
   - transformers one pair at a time, fp32 (the first loop people write; reference);
   - ours: albert_lab.analysis.intrinsic.pair_probabilities (length-bucketed batches sized
     to the cache, fast GELU, SDPA, MLM head skipped) on the tuned model, in fp32 and with
     bf16 weights (the app's Precision setting).
   The variants run interleaved for several rounds; ratios are taken within a round and
   the median and range printed. The fp32 and bf16 matmul peaks are measured in each
   round; MFU is forward FLOPs of the real tokens (albert_lab.params.count) over the time,
   as a share of the peak of the precision the variant computes in.
2. Oscillation + gradient flow for 8 x 128 tokens: seconds (target < 3 s).

Run: .venv/bin/python benchmarks/bench_score.py [--threads N] [--pairs 512] [--rounds 3] [--bf16 auto | on | off]
"""

from __future__ import annotations

import argparse
import copy
import statistics
import tempfile
import time

import numpy as np
import torch

from albert_lab.analysis.intrinsic import pair_probabilities
from albert_lab.data.corpus import load_builtin
from albert_lab.devices import matmul_rate
from albert_lab.kernels import tune_for_inference
from albert_lab.models import build_model
from albert_lab.params import count
from albert_lab.spec import PRESETS
from albert_lab.tokenizer import train_tokenizer


def matmul_peak(dtype: torch.dtype) -> float:
    """Measured FLOP/s of a 1024^3 matmul in `dtype` (the ceiling for MFU), best of 8."""
    return matmul_rate(dtype, size=1024, repeats=8) * 1e9


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


def stock_scorer(model, tokenizer, a, b, batch_size: int | None, bf16: bool):
    """The stock transformers model scoring pairs as a user would write it: sorted by
    length and dynamically padded in batches (or one pair per call when batch_size is None)."""
    def run() -> np.ndarray:
        out = np.empty(len(a))
        if batch_size is None:
            batches = [[i] for i in range(len(a))]
        else:
            order = np.argsort([len(x) + len(y) for x, y in zip(a, b)], kind="stable")
            batches = [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
        with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            for idx in batches:
                enc = tokenizer([a[i] for i in idx], [b[i] for i in idx], padding=True, truncation=True, max_length=128,
                                return_tensors="pt", return_token_type_ids=True)
                out[idx] = torch.softmax(model(**enc).sop_logits.float(), -1)[:, 0].numpy()
        return out
    return run


def bench_analyses(model, tokenizer, spec, dtype) -> float:
    from albert_lab.analysis.gradflow import gradient_flow_on_batch
    from albert_lab.analysis.oscillation import per_token_transitions
    from albert_lab.data.batching import Batch

    torch.manual_seed(0)
    ids = torch.randint(5, spec.vocab_size, (8, 128))
    mask = torch.ones_like(ids)
    batch = Batch(ids, torch.zeros_like(ids), mask, torch.arange(0, 8 * 128, 7), torch.randint(5, 100, (147,)),
                  torch.zeros(8, dtype=torch.long))
    start = time.perf_counter()
    with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=dtype is not None):
        states = model.albert(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states
        per_token_transitions([h.float() for h in states])
    gradient_flow_on_batch(model, spec, batch, dtype=dtype)
    return time.perf_counter() - start


def bf16_timed(choice: str) -> bool:
    """Whether the bf16 variants run: `on`, `off`, or (`auto`) unless bf16 matmuls are unusable here (emulated on an
    AVX2-only CPU: under 1 GFLOP/s, where one round of a bf16 variant takes many minutes)."""
    from albert_lab.devices import bf16_verdict

    if choice != "auto":
        return choice == "on"
    usable, note = bf16_verdict(torch.device("cpu"))  # what the app and the commands decide for bf16 here
    if usable:
        return True
    print(f"{note}: the bf16 variants are left out (--bf16 on times them anyway)")
    return False


def spread(values: list[float], fmt: str) -> str:
    return f"{format(statistics.median(values), fmt)} [{format(min(values), fmt)}-{format(max(values), fmt)}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--pairs", type=int, default=512)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--bf16", choices=["auto", "on", "off"], default="auto",
                        help="time the bf16 variants (auto: unless bf16 is unusable on this CPU, where it is emulated)")
    parser.add_argument("--single", type=int, default=64, help="pairs timed for the one-pair-per-call loop (extrapolated)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    corpus = load_builtin()
    with tempfile.TemporaryDirectory() as tmp:
        tokenizer = train_tokenizer([s for d in corpus.train for s in d.segments], tmp, vocab_size=30000)
    spec = PRESETS["albert-base"].replace(vocab_size=len(tokenizer))
    stock = build_model(spec, seed=0).eval()
    ours = tune_for_inference(copy.deepcopy(stock)).eval()
    ours_bf16 = copy.deepcopy(ours).to(torch.bfloat16)
    a, b, lengths = make_pairs(tokenizer, args.pairs)
    work = flops(spec, lengths)
    print(f"albert-base-sized model ({count(spec).total / 1e6:.1f}M params), {len(a)} pairs of "
          f"{min(lengths)}-{max(lengths)} tokens (mean {np.mean(lengths):.0f}), {args.threads} threads, {args.rounds} interleaved rounds")
    bf16 = bf16_timed(args.bf16)
    variants = {  # name -> (callable scoring all pairs, precision it computes in, pairs it scores)
        "transformers batched bf16": (stock_scorer(stock, tokenizer, a, b, 32, True), "bf16", len(a)),
        "transformers batched fp32": (stock_scorer(stock, tokenizer, a, b, 32, False), "fp32", len(a)),
        "transformers one pair, fp32": (stock_scorer(stock, tokenizer, a[:args.single], b[:args.single], None, False), "fp32",
                                        args.single),
        "ours fp32": (lambda: pair_probabilities(ours, tokenizer, a, b), "fp32", len(a)),
        "ours bf16 weights": (lambda: pair_probabilities(ours_bf16, tokenizer, a, b), "bf16", len(a)),
    }
    variants = {name: v for name, v in variants.items() if bf16 or v[1] == "fp32"}
    results = {name: fn() for name, (fn, _, _) in variants.items()}  # warm-up; oneDNN builds kernels per shape
    reference = results["transformers batched fp32"]
    rates: dict[str, list[float]] = {name: [] for name in variants}
    peaks: dict[str, list[float]] = {"fp32": [], "bf16": []}
    for r in range(args.rounds):
        for name in (list(variants) if r % 2 == 0 else list(variants)[::-1]):
            fn, _, n = variants[name]
            start = time.perf_counter()
            fn()
            rates[name].append(n / (time.perf_counter() - start))
        for dtype, name in ((torch.float32, "fp32"), (torch.bfloat16, "bf16")) if bf16 else ((torch.float32, "fp32"),):
            peaks[name].append(matmul_peak(dtype))
    print("matmul peak measured in the same rounds: " + ", ".join(
        f"{name} {spread([p / 1e9 for p in values], ',.0f')} GFLOP/s" for name, values in peaks.items() if values)
        + "   (median [min-max])")
    per_pair = work / len(a)
    for name, (_, precision, _) in variants.items():
        mfu = [100 * rate * per_pair / peaks[precision][i] for i, rate in enumerate(rates[name])]
        diff = float(np.abs(results[name] - reference[:len(results[name])]).max())
        print(f"  {name:28s}: {spread(rates[name], ',.1f')} pairs/s, MFU {spread(mfu, '.0f')}% of the {precision} peak; "
              f"max |P - transformers fp32| {diff:.1e}")
    for mine in [m for m in ("ours fp32", "ours bf16 weights") if m in variants]:
        for base in [b for b in ("transformers batched bf16", "transformers batched fp32", "transformers one pair, fp32")
                     if b in variants]:
            ratios = [m / s for m, s in zip(rates[mine], rates[base])]
            # No implementation can beat the peak: at 100% MFU `mine` would be peak / (base's FLOP/s) times base.
            ceiling = [peaks[variants[mine][1]][i] / (rate * per_pair) for i, rate in enumerate(rates[base])]
            print(f"  {mine} / {base}: {spread(ratios, '.2f')}x; ceiling at 100% MFU: {spread(ceiling, '.2f')}x")
    for name, dtype, model in (("fp32", None, ours), ("bf16 autocast", torch.bfloat16, ours))[:2 if bf16 else 1]:
        seconds = bench_analyses(model, tokenizer, spec, dtype)
        print(f"oscillation + gradient flow, 8 x 128 tokens, {name}: {seconds:.2f} s (target < 3 s)")


if __name__ == "__main__":
    main()
