"""Where an uptraining step's time goes: the share of each part of the model, under torch.profiler.

One step is what albert_lab.training.loop.Trainer runs for `albert-lab train --init-from
CHECKPOINT` with the shipped recipe (AdamW 2e-4, weight decay 0.01, clip 1.0, no dropout):
the Trainer is built as the CLI builds it (the checkpoint's weights, tokenizer and heads,
the long-mix batches, the training kernels), and each step repeats its loop body: the
batch, the loss under autocast, backward, clipping, the optimizer step. Measured in fp32
and under bf16 autocast, a few warm-up steps, then each measured step profiled alone.

Every op's own (self) CPU time is charged to a part of the model:
- forward: the innermost labelled module the op runs in (forward hooks put a profiler
  label on the embeddings, each attention block, each layer's FFN, every LayerNorm, the
  MLM head, the pooler and pair head, and the loss module around them);
- backward: the part whose forward op created the autograd node (the profiler gives the
  node the forward op's sequence number), so the embeddings row includes the embedding
  gradient (a V x H scatter) and the MLM head row the tied decoder's gradient;
- optimizer: gradient clipping, the AdamW update of every parameter, zeroing the grads.
"other" is the rest of the step's wall time: building the batch, the attention mask,
gradient accumulation into .grad, Python between ops, the profiler's own overhead.

LayerNorm is its own row wherever it sits (embeddings, every layer, the MLM transform);
"loss" is what PretrainingLoss does outside the model: picking the predicted positions,
the fp32 cast of their logits, the two cross-entropies (log-softmax over the vocabulary).

Noise: this machine is shared with other work. A step's time moves with the neighbours'
load; the shares move much less (a busy neighbour slows every op alike), so read the
shares, and compare times only within one run. Shares are medians over the measured
steps with [min-max]; beside them each part's fastest time, its least disturbed step.
One caveat: with two threads on two cores and a neighbour holding one of them, every
parallel op waits for its slower thread, and the shares distort as well; `--threads 1`
then measures one clean core.

Run: .venv/bin/python benchmarks/profile_train.py [--checkpoint checkpoints/bert-sop-minilm]
         [--steps 5] [--warmup 2] [--batch-size 32] [--seq-len 128] [--precisions fp32,bf16]
         [--threads N] [--ops 8]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, record_function

ROOT = Path(__file__).resolve().parent.parent
PARTS = ["embeddings", "attention", "FFN", "LayerNorm", "MLM head", "loss", "pair head", "optimizer step", "other"]
LABEL = "part:"  # prefix of the profiler labels this script adds
BACKWARD = "autograd::engine::evaluate_function: "


def build_trainer(checkpoint: str, precision: str, args: argparse.Namespace, run_dir: Path, prepared=None):
    """The Trainer of an uptraining run from `checkpoint`, as `albert-lab train --init-from` builds it."""
    from albert_lab.training.loop import Trainer
    from albert_lab.training.recipe import uptrain_config

    config = uptrain_config(checkpoint, "sop", corpus="long-mix", steps=1000, optimizer="adamw", lr=2e-4,
                            weight_decay=0.01, batch_size=args.batch_size, max_seq_len=args.seq_len, precision=precision,
                            warmup_steps=0)
    return Trainer(run_dir, config, prepared)


def label_parts(trainer) -> None:
    """Forward hooks that open a profiler label when a module starts and close it when it ends."""
    from albert_lab.models import Parts, layer_applications

    model = trainer.model
    parts = Parts.of(model)
    labels: dict[nn.Module, str] = {parts.encoder: "other", parts.encoder.embeddings: "embeddings",
                                    parts.mlm_head: "MLM head", parts.pair_head: "pair head",
                                    parts.encoder.pooler: "pair head"}
    mapping_in = getattr(getattr(parts.encoder, "encoder", None), "embedding_hidden_mapping_in", None)
    if mapping_in is not None:  # ALBERT's E -> H projection belongs to the factorised embedding
        labels[mapping_in] = "embeddings"
    for layer in layer_applications(model):  # a BertLayer, or an AlbertLayerGroup of AlbertLayers
        for block in [layer, *layer.modules()]:
            if isinstance(getattr(block, "attention", None), nn.Module):
                labels[block] = "FFN"  # what a layer does outside its attention and LayerNorms
                labels[block.attention] = "attention"
    labels.update({m: "LayerNorm" for m in model.modules() if isinstance(m, nn.LayerNorm)})
    labels[getattr(trainer.loss_fn, "module", trainer.loss_fn)] = "loss"
    for module, part in labels.items():
        open_ = []  # a shared ALBERT layer runs L times, one after another: a stack suffices

        def enter(_m, _a, part=part, open_=open_):
            open_.append(record_function(LABEL + part).__enter__())

        def leave(_m, _a, _o, open_=open_):
            open_.pop().__exit__(None, None, None)

        module.register_forward_pre_hook(enter)
        module.register_forward_hook(leave)


def step(trainer, index: int):
    """One step of Trainer._loop (without its logging): batch, loss under autocast, backward, clip, AdamW.
    Returns the batch."""
    from albert_lab.kernels import autocast

    params = [p for p in trainer.model.parameters() if p.requires_grad]
    batch = trainer.data.batch(index).to(trainer.device)
    with autocast(trainer.device, trainer.dtype):
        out = trainer.loss_fn(batch)
    out.loss.backward()
    with record_function(LABEL + "optimizer step"):
        torch.nn.utils.clip_grad_norm_(params, trainer.config.clip_norm or float("inf"))
        trainer.optimizer.step()
        trainer.optimizer.zero_grad(set_to_none=True)
    float(out.loss.detach())  # the loop reads the loss every step
    return batch


def part_of(event, forward_part: dict[int, str]) -> str | None:
    """The part an event's self time is charged to: its nearest labelled ancestor (a forward
    label, or a backward node traced back to the forward op that made it)."""
    while event is not None:
        if event.name.startswith(LABEL):
            return event.name[len(LABEL):]
        if event.name.startswith(BACKWARD):
            return forward_part.get(event.sequence_nr)
        event = event.cpu_parent
    return None


def shares(prof, wall_us: float) -> dict[str, float]:
    """Microseconds per part for one profiled step; 'other' is the wall time left over."""
    events = list(prof.events())
    forward_part: dict[int, str] = {}
    for event in events:  # forward ops carry the sequence number of the autograd node they create
        if event.sequence_nr >= 0 and not _in_backward(event):
            forward_part.setdefault(event.sequence_nr, part_of(event, {}))
    spent: Counter[str] = Counter()
    for event in events:
        part = part_of(event, forward_part)
        if part and part != "other":
            spent[part] += event.self_cpu_time_total
    spent["other"] = max(0.0, wall_us - sum(spent.values()))
    return spent


def _in_backward(event) -> bool:
    while event is not None:
        if event.name.startswith(BACKWARD):
            return True
        event = event.cpu_parent
    return False


def measure(trainer, args: argparse.Namespace) -> tuple[list[dict[str, float]], list, object]:
    """Warm-up steps, then each measured step profiled alone: (us per part, batches, last profile)."""
    for i in range(args.warmup):
        step(trainer, i)
    rows, batches = [], []
    for i in range(args.warmup, args.warmup + args.steps):
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            start = time.perf_counter()
            batches.append(step(trainer, i))
            wall_us = (time.perf_counter() - start) * 1e6
        rows.append(shares(prof, wall_us) | {"step": wall_us})
    return rows, batches, prof


def spread(values: list[float], fmt: str) -> str:
    return f"{format(statistics.median(values), fmt)} [{format(min(values), fmt)}-{format(max(values), fmt)}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", default=str(ROOT / "checkpoints" / "bert-sop-minilm"))
    parser.add_argument("--steps", type=int, default=5, help="measured steps per precision (each profiled alone)")
    parser.add_argument("--warmup", type=int, default=2, help="steps before measuring (oneDNN picks kernels per shape)")
    parser.add_argument("--batch-size", type=int, default=32, help="pairs per step (the shipped runs used 256 on a GPU)")
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--precisions", default="fp32,bf16")
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--ops", type=int, default=8, help="also list the N ops with the most self time (last step)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    from albert_lab.params import count

    results, prepared, ops = {}, None, {}
    with tempfile.TemporaryDirectory() as tmp:
        for precision in args.precisions.split(","):
            trainer = build_trainer(args.checkpoint, precision, args, Path(tmp) / precision, prepared)
            prepared = trainer.prepared
            label_parts(trainer)
            rows, batches, prof = measure(trainer, args)
            results[precision] = rows
            ops[precision] = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=args.ops) if args.ops else ""
    spec, threads = prepared.spec, torch.get_num_threads()
    lengths = [b.input_ids.shape[1] for b in batches]
    print(f"{Path(args.checkpoint).name}: {spec.label}, {count(spec).total / 1e6:.1f}M parameters, vocabulary {spec.vocab_size:,}; "
          f"uptraining step (AdamW, clip 1.0) on long-mix, batch {args.batch_size} x <= {args.seq_len} tokens "
          f"(padded length {spread(lengths, '.0f')}, {statistics.median(b.num_tokens for b in batches):,.0f} tokens, "
          f"{statistics.median(b.num_predictions for b in batches):,.0f} MLM predictions per step); "
          f"{args.warmup} warm-up + {args.steps} profiled steps per precision, {threads} thread{'s' * (threads > 1)}, "
          f"torch {torch.__version__}")
    names = {"fp32": "fp32", "bf16": "bf16 autocast"}
    print(f"{'':16s}" + "".join(f"{names.get(p, p):^38s}" for p in results))
    header = f"{'part':16s}" + f"{'share of step':>26s}{'fastest ms':>12s}" * len(results)
    print(header)
    print("-" * len(header))
    for part in [*PARTS, "step"]:
        cells = []
        for rows in results.values():
            ms = [r.get(part, 0.0) / 1e3 for r in rows]
            share = "100 %" if part == "step" else spread([100 * r.get(part, 0.0) / r["step"] for r in rows], ".1f") + " %"
            cells.append(f"{share:>26s}{min(ms):>12,.0f}")
        print(f"{part:16s}" + "".join(cells))
    print("share: median [min-max] over the profiled steps; fastest ms: the part's least disturbed step. The machine "
          "is shared:\ntimes move with the neighbours' load, shares much less; the fastest times are the quiet machine's "
          "best estimate. Step times (ms): " + "; ".join(f"{names.get(p, p)} {spread([r['step'] / 1e3 for r in rows], ',.0f')}"
                                                        for p, rows in results.items()))
    for precision, table in ops.items():
        if table:
            print(f"\nops with the most self time, last {names.get(precision, precision)} step:\n{table}")


if __name__ == "__main__":
    main()
