"""Training throughput: our step against a plain transformers loop, in one run.

Both train the same spec from the same initial weights on the same batches (the
built-in corpus, batch 64 x up to 128 tokens) with the same optimizer (LAMB):

- baseline: `model(**inputs, labels=..., sentence_order_label=...)` as transformers
  ships it: fp32, SDPA attention, gelu_new, MLM logits over every position;
- ours: albert_lab's training step: MLM head only at the predicted positions, fast
  GELU and eager attention (see analysis/common.py), bf16 autocast where the CPU has it.

Each variant runs in its own process (for an honest peak memory). Prints tokens/s of
real (non-padding) tokens, the ratio (target >= 2x), peak RSS, and the held-out MLM
loss of both after the same tokens (fp32, full logits; ours must be no worse).

Run: .venv/bin/python benchmarks/bench_train.py [--preset lab-albert] [--steps 80]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

import torch


def setup(preset: str, batch_size: int):
    from albert_lab.data.batching import PretrainingData
    from albert_lab.data.masking import masking_config
    from albert_lab.data.tokenized import tokenize_documents
    from albert_lab.spec import PRESETS
    from albert_lab.training.config import TrainConfig
    from albert_lab.training.prepare import prepare

    spec = PRESETS[preset]
    prepared = prepare(TrainConfig(spec=spec.to_dict(), objective=spec.objective, vocab_size=8000))
    tok = prepared.tokenizer
    special = (tok.cls_token_id, tok.sep_token_id, tok.pad_token_id)
    train = PretrainingData(prepared.train_docs, spec.objective, masking_config(tok), special, 128, batch_size, seed=0)
    heldout_docs = tokenize_documents(prepared.corpus.heldout, tok)
    heldout = PretrainingData(heldout_docs, spec.objective, masking_config(tok), special, 128, batch_size, seed=1)
    return prepared.spec, train, [heldout.batch(i) for i in range(4)]


def forward_baseline(model, batch, family: str):
    pair = {"sentence_order_label" if family == "albert" else "next_sentence_label": batch.pair_labels}
    return model(input_ids=batch.input_ids, attention_mask=batch.attention_mask, token_type_ids=batch.token_type_ids,
                 labels=batch.dense_mlm_labels(), **pair).loss


@torch.no_grad()
def heldout_mlm_loss(model, batches) -> float:
    """Mean MLM cross-entropy over the predicted tokens of the held-out batches (fp32)."""
    from albert_lab.models import Parts

    parts, total, n = Parts.of(model), 0.0, 0
    for batch in batches:
        hidden = parts.encoder(input_ids=batch.input_ids, attention_mask=batch.attention_mask,
                               token_type_ids=batch.token_type_ids).last_hidden_state
        logits = parts.mlm_head(hidden).float()
        labels = batch.dense_mlm_labels()
        total += float(torch.nn.functional.cross_entropy(logits.view(-1, logits.shape[-1]), labels.view(-1), reduction="sum"))
        n += int((labels != -100).sum())
    return total / n


def run_variant(variant: str, preset: str, steps: int, warmup: int, batch_size: int) -> dict:
    from albert_lab.devices import fast_bf16
    from albert_lab.kernels import tune_for_training
    from albert_lab.models import build_model
    from albert_lab.objective import PretrainingLoss
    from albert_lab.training.optim import build_optimizer

    spec, data, heldout = setup(preset, batch_size)
    model = build_model(spec, seed=0).train()
    bf16 = variant == "ours" and fast_bf16(torch.device("cpu"))
    if variant == "ours":
        tune_for_training(model)
        loss_fn = PretrainingLoss(model, spec.objective)
    optimizer = build_optimizer(model, "lamb", 1e-3)
    tokens, elapsed = 0, 0.0
    for step in range(steps):
        batch = data.batch(step)
        start = time.perf_counter()
        if variant == "ours":
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                loss = loss_fn(batch).loss
        else:
            loss = forward_baseline(model, batch, spec.family)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if step >= warmup:
            elapsed += time.perf_counter() - start
            tokens += batch.num_tokens
    model.eval()
    return dict(variant=variant, tokens_per_s=tokens / elapsed, tokens=tokens, bf16=bf16,
                heldout_mlm_loss=heldout_mlm_loss(model, heldout),
                peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="lab-albert")
    parser.add_argument("--steps", type=int, default=80)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--variant", choices=["ours", "baseline"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.variant:
        print(json.dumps(run_variant(args.variant, args.preset, args.steps, args.warmup, args.batch_size)))
        return
    results = {}
    for variant in ("baseline", "ours"):
        out = subprocess.run([sys.executable, __file__, "--variant", variant, "--preset", args.preset,
                              "--steps", str(args.steps), "--warmup", str(args.warmup), "--batch-size",
                              str(args.batch_size), "--threads", str(args.threads)],
                             capture_output=True, text=True, check=True)
        results[variant] = json.loads(out.stdout.strip().splitlines()[-1])
    base, ours = results["baseline"], results["ours"]
    print(f"{args.preset}, batch {args.batch_size} x <=128 tokens, {args.steps} steps ({args.warmup} warm-up), "
          f"{args.threads} threads")
    for r in (base, ours):
        print(f"  {r['variant']:8s}: {r['tokens_per_s']:8,.0f} tokens/s   peak RSS {r['peak_rss_mb']:6,.0f} MB   "
              f"held-out MLM loss {r['heldout_mlm_loss']:.4f}" + ("   (bf16 autocast)" if r["bf16"] else ""))
    print(f"  ratio ours / baseline: {ours['tokens_per_s'] / base['tokens_per_s']:.2f}x (target >= 2x); "
          f"held-out MLM loss difference {ours['heldout_mlm_loss'] - base['heldout_mlm_loss']:+.4f} at equal tokens")


if __name__ == "__main__":
    main()
