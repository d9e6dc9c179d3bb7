"""Training throughput against the loops a user would actually write, interleaved in one run.

Three variants train the same spec from the same initial weights on the same batches
(the built-in long-mix corpus, batch 64 x up to 128 tokens) with the same optimizer (LAMB):

- transformers bf16: `AlbertForPreTraining(**inputs, labels=..., sentence_order_label=...)`
  under `torch.autocast("cpu", torch.bfloat16)`, the loop a user would write first;
- transformers fp32: the same loop without autocast (reference);
- ours: albert_lab's training step (MLM head only at the predicted positions, fast GELU,
  eager attention) at the precision `--precision auto` picks here (bf16 only where bf16
  matmuls measure faster than fp32; see albert_lab.devices.fast_bf16).

Noise: the variants run interleaved (A B C A B C ...) for several rounds, each round a few
steps of each, so a noisy neighbour hits all of them alike; every ratio is taken within a
round and the median and range over rounds are printed. The fp32 and bf16 matmul peaks
are measured in every round too, and model FLOPs utilisation (MFU) is the variant's
training FLOP/s (3x the forward FLOPs of albert_lab.params.count, on real tokens and
predicted positions) over the peak of the precision it computes in.

At the end: the held-out MLM loss of every variant after the same tokens (fp32, full
logits); ours must be no worse.

Run: .venv/bin/python benchmarks/bench_train.py [--preset lab-albert | --init-from checkpoints/bert-sop-minilm] [--rounds 5] [--steps 6]
     [--loops auto | both | fp32 | none]   (auto: no bf16 loop where bf16 is unusable)
     .venv/bin/python benchmarks/bench_train.py --scaling     (ours only: tokens/s and MFU per size)
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from albert_lab.devices import matmul_rate


def setup(preset: str, batch_size: int, init_from: str | None = None, **spec_changes):
    """The spec and batches: a preset's (an 8,000-piece SentencePiece vocabulary), or with
    `init_from` a checkpoint's architecture and tokenizer (e.g. MiniLM's 30,522 WordPiece
    pieces, the uptraining hot path); weights are random either way, speed does not care."""
    from albert_lab.data.batching import PretrainingData
    from albert_lab.data.masking import masking_config
    from albert_lab.data.tokenized import tokenize_documents
    from albert_lab.spec import PRESETS
    from albert_lab.training.config import TrainConfig
    from albert_lab.training.prepare import prepare

    if init_from:
        from albert_lab.checkpoint.files import read_card, read_spec
        from albert_lab.checkpoint.loadable import make_loadable

        folder = make_loadable(Path(init_from))
        spec = read_spec(folder, read_card(folder)).replace(objective="sop", dropout=0.0)
        config = TrainConfig(spec=spec.to_dict(), objective="sop", init_from=str(folder))
    else:
        spec = PRESETS[preset].replace(**spec_changes)
        config = TrainConfig(spec=spec.to_dict(), objective=spec.objective, vocab_size=8000)
    prepared = prepare(config)
    tok = prepared.tokenizer
    special = (tok.cls_token_id, tok.sep_token_id, tok.pad_token_id)
    train = PretrainingData(prepared.train_docs, spec.objective, masking_config(tok), special, 128, batch_size, seed=0)
    heldout_docs = tokenize_documents(prepared.corpus.heldout, tok)
    heldout = PretrainingData(heldout_docs, spec.objective, masking_config(tok), special, 128, batch_size, seed=1)
    return prepared.spec, train, [heldout.batch(i) for i in range(4)]


def matmul_peak(dtype: torch.dtype) -> float:
    """Measured FLOP/s of a 1024^3 matmul in `dtype` (the ceiling for MFU), best of 8."""
    return matmul_rate(dtype, size=1024, repeats=8) * 1e9


def train_flops(spec, batch) -> float:
    """Training FLOPs of one step (3x forward: the backward costs two forwards)."""
    from albert_lab.params import count

    report = count(spec, seq_len=batch.input_ids.shape[1])
    return 3 * (report.flops_per_token * batch.num_tokens + report.mlm_flops_per_prediction * batch.num_predictions)


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


@dataclass
class Variant:
    name: str
    model: torch.nn.Module
    step_fn: object  # batch -> loss
    bf16: bool
    optimizer: torch.optim.Optimizer = None
    step: int = 0
    rates: list[float] = field(default_factory=list)  # tokens/s per round
    flops: list[float] = field(default_factory=list)  # FLOP/s per round

    def run(self, data, spec, steps: int, record: bool = True) -> None:
        tokens, work, elapsed = 0, 0.0, 0.0
        for _ in range(steps):
            batch = data.batch(self.step)
            self.step += 1
            start = time.perf_counter()
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.bf16):
                loss = self.step_fn(batch)
            loss.backward()
            self.optimizer.step()
            self.optimizer.zero_grad(set_to_none=True)
            elapsed += time.perf_counter() - start
            tokens += batch.num_tokens
            work += train_flops(spec, batch)
        if record:
            self.rates.append(tokens / elapsed)
            self.flops.append(work / elapsed)


def make_variants(spec, names: list[str]) -> list[Variant]:
    from albert_lab.devices import fast_bf16
    from albert_lab.kernels import tune_for_training
    from albert_lab.models import build_model
    from albert_lab.objective import PretrainingLoss
    from albert_lab.training.optim import build_optimizer

    pair_label = "sentence_order_label" if spec.family == "albert" else "next_sentence_label"
    variants = []
    for name in names:
        model = build_model(spec, seed=0).train()
        if name == "ours":
            tune_for_training(model)
            loss_fn = PretrainingLoss(model, spec.objective)
            variant = Variant(name, model, lambda b, f=loss_fn: f(b).loss, fast_bf16(torch.device("cpu")))
        else:
            def step_fn(b, m=model):
                return m(input_ids=b.input_ids, attention_mask=b.attention_mask, token_type_ids=b.token_type_ids,
                         labels=b.dense_mlm_labels(), **{pair_label: b.pair_labels}).loss
            variant = Variant(name, model, step_fn, name == "transformers bf16")
        variant.optimizer = build_optimizer(model, "lamb", 1e-3)
        variants.append(variant)
    return variants


def spread(values: list[float], fmt: str) -> str:
    return f"{format(statistics.median(values), fmt)} [{format(min(values), fmt)}-{format(max(values), fmt)}]"


def loops_timed(choice: str) -> list[str]:
    """The transformers loops to time: both, none (ours alone: its own code before and after a change, in
    alternating processes), or (`auto` where bf16 is unusable here, `fp32`) the fp32 loop only.
    Where bf16 is emulated (an AVX2-only CPU: under 1 GFLOP/s, 1/100 of fp32) a round of the bf16 loop takes
    many minutes, and no user would train that way."""
    from albert_lab.devices import bf16_verdict

    if choice == "none":
        return []
    usable, note = bf16_verdict(torch.device("cpu"))  # what the app and the commands decide for bf16 here
    if choice == "both" or (choice == "auto" and usable):
        return ["transformers bf16", "transformers fp32"]
    if choice == "auto":
        print(f"{note}: the bf16-autocast loop is left out (--loops both times it anyway)")
    return ["transformers fp32"]


def compare(args) -> None:
    spec, data, heldout = setup(args.preset, args.batch_size, args.init_from)
    variants = make_variants(spec, [*loops_timed(args.loops), "ours"])
    peaks: dict[str, list[float]] = {"fp32": [], "bf16": []}
    for v in variants:  # warm-up: oneDNN picks kernels for each shape; not recorded
        v.run(data, spec, args.warmup, record=False)
    for r in range(args.rounds):
        order = variants if r % 2 == 0 else variants[::-1]  # A B C, then C B A: no variant always goes first
        for v in order:
            v.run(data, spec, args.steps)
        for dtype, name in ((torch.float32, "fp32"), (torch.bfloat16, "bf16")):  # the peaks of the precisions timed
            if name == "fp32" or any(v.bf16 for v in variants):
                peaks[name].append(matmul_peak(dtype))
    print(f"{args.init_from or args.preset}: {spec.label}, batch {args.batch_size} x <=128 tokens, "
          f"{args.rounds} interleaved rounds of {args.steps} steps per variant after {args.warmup} warm-up steps, "
          f"{torch.get_num_threads()} threads")
    print("matmul peak measured in the same rounds: " + ", ".join(
        f"{name} {spread([p / 1e9 for p in values], ',.0f')} GFLOP/s" for name, values in peaks.items() if values)
        + "   (median [min-max])")
    ours = variants[-1]
    for v in variants:
        mfu = [f / peaks["bf16" if v.bf16 else "fp32"][i] for i, f in enumerate(v.flops)]
        print(f"  {v.name:18s} {'bf16' if v.bf16 else 'fp32'}: {spread(v.rates, ',.0f')} tokens/s, "
              f"MFU {spread([100 * m for m in mfu], '.0f')}% of the {'bf16' if v.bf16 else 'fp32'} peak")
    ours_peaks = peaks["bf16" if ours.bf16 else "fp32"]
    for base in variants[:-1]:
        ratios = [o / b for o, b in zip(ours.rates, base.rates)]
        # No implementation can beat the peak: at 100% MFU ours would be peak / (base's FLOP/s) times base.
        ceiling = [p / f for p, f in zip(ours_peaks, base.flops)]
        print(f"  ours / {base.name}: {spread(ratios, '.2f')}x (ratio within each round); "
              f"ceiling at 100% MFU: {spread(ceiling, '.2f')}x")
    losses = {v.name: heldout_mlm_loss(v.model.eval(), heldout) for v in variants}
    print(f"held-out MLM loss after {ours.step} steps each (equal tokens): "
          + ", ".join(f"{name} {loss:.4f}" for name, loss in losses.items()))


def scaling(args) -> None:
    """Ours only, per size: tokens/s and MFU, so the corpus issue can pick the largest model that fits an hour."""
    sizes = [("lab-tiny", {}), ("lab-albert", dict(hidden_size=128, num_heads=2, ffn_size=512, embedding_size=64)),
             ("lab-albert", {}), ("lab-albert", dict(hidden_size=384, num_heads=6, ffn_size=1536)),
             ("lab-albert", dict(hidden_size=512, num_heads=8, ffn_size=2048)), ("albert-base", dict(vocab_size=8000))]
    print(f"ours, batch {args.batch_size} x <=128 tokens, {args.rounds} rounds of {args.steps} steps, {torch.get_num_threads()} threads")
    print(f"{'spec':34s} {'params':>8s} {'tokens/s':>22s} {'MFU':>14s} {'tokens/hour':>12s}")
    from albert_lab.params import count

    for preset, changes in sizes:
        spec, data, _ = setup(preset, args.batch_size, **changes)
        (variant,) = make_variants(spec, ["ours"])
        variant.run(data, spec, 2, record=False)
        peaks = []
        for _ in range(args.rounds):
            variant.run(data, spec, args.steps)
            peaks.append(matmul_peak(torch.bfloat16 if variant.bf16 else torch.float32))
        mfu = [100 * f / p for f, p in zip(variant.flops, peaks)]
        label = f"L={spec.num_layers} H={spec.hidden_size} E={spec.embedding_size} V={spec.vocab_size}"
        print(f"{label:34s} {count(spec).total / 1e6:7.1f}M {spread(variant.rates, ',.0f'):>22s} {spread(mfu, '.0f'):>13s}% "
              f"{statistics.median(variant.rates) * 3600 / 1e6:10.0f}M")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="lab-albert")
    parser.add_argument("--init-from", help="a checkpoint's architecture and tokenizer instead (checkpoints/bert-sop-minilm: "
                                            "MiniLM's size, the uptraining hot path)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=6, help="steps per variant per round")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--loops", choices=["auto", "both", "fp32", "none"], default="auto",
                        help="the transformers loops timed beside ours (auto: both, but fp32 only where bf16 is unusable)")
    parser.add_argument("--scaling", action="store_true", help="ours only, tokens/s and MFU for sizes up to albert-base")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    (scaling if args.scaling else compare)(args)


if __name__ == "__main__":
    main()
