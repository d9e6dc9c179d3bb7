"""albert-lab on a GPU against the loop a user would write, side by side in one process.

One command, sized for at most 4 minutes on an H100 or H200 (process starts included):

1. Training, four shapes, random weights, the same batches (synthetic documents, masked
   as in training: benchmarks/bench_batches.py): ALBERT-base (E 128, H 768, L 12, all
   shared) at 128 x 512 and 256 x 128 tokens, BERT-base at 256 x 128, and MiniLM's
   uptraining shape (the architecture of checkpoints/bert-sop-minilm: BERT H 384, L 6,
   30,522 pieces; what `--init-from` trains) at 256 x 128.
   - albert-lab: the training loop's step (`training.loop`): batches made ahead by a
     background thread (`BatchesAhead`, pinned and copied without blocking), the loss
     with the MLM head at the predicted positions only, the training attention
     (`kernels.tune_for_training`), bf16 autocast where the device has it, clipping, the
     project's optimizer (LAMB; AdamW for uptraining, as its recipe);
   - the transformers loop: the pretraining model's own loss under bf16 autocast, SDPA
     attention, torch's AdamW, clipping; its batches made beforehand, copied each step.
   The two run interleaved (A B, then B A) for several rounds; tokens/s (real tokens),
   the ratio within each round, and MFU: training FLOPs (3x the forward FLOPs of
   albert_lab.params.count, real tokens and predicted positions) over the bf16 matmul
   peak measured in the same run. Also the share of albert-lab's step time spent
   waiting for a batch.
2. `albert-lab score` of 5,000 pairs both ways (A->B and B->A), the command with its
   process start, on random ALBERT-base weights, against a loop: the stock model, pairs
   sorted by length, batches of 64, fp32, both orders; the largest difference of the
   probabilities is printed beside the times.
3. Oscillation, gradient flow and the logit lens on an ALBERT-xxlarge-shaped model
   (random weights, H 4096, L 12 shared): seconds each, 8 texts of up to 128 tokens.

Every figure is printed as median [min-max] over rounds. The results go to a JSON file
and, unless --smoke, to docs/benchmarks.md (the table between the bench_gpu markers),
with the device's name.

`--smoke`: tiny shapes (H 32, batch 4 x 32, 40 pairs), one round trip of every part on the
CPU in seconds: what CI runs so that the script is ready when a GPU is at hand.

Parts 2 and 3 live in benchmarks/gpu_scoring.py.

Run: .venv/bin/python benchmarks/bench_gpu.py [--smoke] [--json PATH] [--rounds 3] [--steps 5]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_batches import synthetic_docs  # noqa: E402
from gpu_scoring import MINILM, SMALL, compare_scoring, fmt, spread, sync, time_analyses  # noqa: E402

from albert_lab.data.batching import BatchesAhead, PretrainingData  # noqa: E402
from albert_lab.data.masking import MaskingConfig  # noqa: E402
from albert_lab.devices import fast_bf16  # noqa: E402
from albert_lab.kernels import autocast, set_attention, tune_for_training  # noqa: E402
from albert_lab.models import build_model  # noqa: E402
from albert_lab.objective import PretrainingLoss  # noqa: E402
from albert_lab.params import count  # noqa: E402
from albert_lab.spec import PRESETS, ModelSpec  # noqa: E402
from albert_lab.training.optim import build_optimizer  # noqa: E402

MARK_START, MARK_END = "<!-- bench_gpu: start -->", "<!-- bench_gpu: end -->"
TINY = dict(SMALL, vocab_size=1000)


@dataclass
class Shape:
    name: str
    spec: ModelSpec
    batch_size: int
    seq_len: int
    optimizer: str = "lamb"


def shapes(smoke: bool) -> list[Shape]:
    from albert_lab.checkpoint.files import read_card, read_spec

    minilm = read_spec(MINILM, read_card(MINILM)).replace(objective="sop", dropout=0.0)
    full = [Shape("ALBERT-base, 128 x 512", PRESETS["albert-base"], 128, 512),
            Shape("ALBERT-base, 256 x 128", PRESETS["albert-base"], 256, 128),
            Shape("BERT-base, 256 x 128", PRESETS["bert-base"].replace(dropout=0.0), 256, 128),
            Shape("MiniLM uptraining, 256 x 128", minilm, 256, 128, "adamw")]
    if not smoke:
        return full
    return [Shape(s.name + " (smoke: tiny)", tiny(s.spec), 4, 32, s.optimizer) for s in full]


def tiny(spec: ModelSpec) -> ModelSpec:
    """--smoke's version of a spec: H 32, 2 layers, 1,000 pieces (BERT's E is its H)."""
    return spec.replace(**{**TINY, "max_positions": 64, **({"embedding_size": 32} if spec.family == "bert" else {})})


# ---- measuring ---------------------------------------------------------------------------------
def matmul_peak(device: torch.device, dtype: torch.dtype, size: int, repeats: int = 10) -> float:
    """FLOP/s of a size^3 matmul in `dtype` on `device`, best of `repeats` (the ceiling for MFU)."""
    a, b = torch.randn(size, size, device=device, dtype=dtype), torch.randn(size, size, device=device, dtype=dtype)
    a @ b
    best = float("inf")
    for _ in range(repeats):
        sync(device)
        start = time.perf_counter()
        a @ b
        sync(device)
        best = min(best, time.perf_counter() - start)
    return 2 * size**3 / best


def masking(vocab: int) -> MaskingConfig:
    word_start = np.zeros(vocab, dtype=bool)
    word_start[::4] = True
    return MaskingConfig(vocab_size=vocab, mask_id=4, special_ids=frozenset({0, 2, 3}), word_start=word_start,
                         first_random_id=5)


def training_data(shape: Shape) -> PretrainingData:
    docs = synthetic_docs(documents=400 if shape.batch_size <= 8 else 3000, vocab=shape.spec.vocab_size)
    return PretrainingData(docs, shape.spec.objective, masking(shape.spec.vocab_size), (2, 3, 0), shape.seq_len,
                           shape.batch_size, seed=0)


def train_flops(spec: ModelSpec, batch) -> float:
    report = count(spec, seq_len=batch.input_ids.shape[1])
    return 3 * (report.flops_per_token * batch.num_tokens + report.mlm_flops_per_prediction * batch.num_predictions)


@dataclass
class Trainee:
    """One side of the comparison: `run(steps)` trains that many steps and records the rate."""
    name: str
    shape: Shape
    device: torch.device
    step_fn: object = None
    batches: object = None
    step: int = 0
    rates: list[float] = field(default_factory=list)
    flops: list[float] = field(default_factory=list)
    waits: list[float] = field(default_factory=list)

    def run(self, steps: int, record: bool = True) -> None:
        sync(self.device)
        start, tokens, work, waited = time.perf_counter(), 0, 0.0, 0.0
        for _ in range(steps):
            batch, wait = self.batches(self.step)
            self.step_fn(self.step, batch)
            self.step += 1
            tokens, work, waited = tokens + batch.num_tokens, work + train_flops(self.shape.spec, batch), waited + wait
        sync(self.device)
        elapsed = time.perf_counter() - start
        if record:
            self.rates.append(tokens / elapsed)
            self.flops.append(work / elapsed)
            self.waits.append(waited / elapsed)


def ours(shape: Shape, device: torch.device, data: PretrainingData) -> tuple[Trainee, BatchesAhead]:
    model = tune_for_training(build_model(shape.spec, seed=0), device).to(device).train()
    loss_fn = PretrainingLoss(model, shape.spec.objective)
    optimizer = build_optimizer(model, shape.optimizer, 1e-4)
    params = [p for p in model.parameters() if p.requires_grad]
    dtype = torch.bfloat16 if fast_bf16(device) else None
    ahead = BatchesAhead(data, 0, device)

    def step(_: int, batch) -> None:
        with autocast(device, dtype):
            out = loss_fn(batch)
        out.loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        float(out.loss.detach())  # the loop reads the loss every step (the NaN check)

    def take(step: int):
        before = ahead.waited
        batch = ahead.take(step)
        return batch, ahead.waited - before

    return Trainee("albert-lab", shape, device, step, take), ahead


def users_loop(shape: Shape, device: torch.device, data: PretrainingData, steps: int) -> Trainee:
    model = build_model(shape.spec, seed=0).to(device).train()
    set_attention(model, "sdpa")
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    pair_label = "sentence_order_label" if shape.spec.family == "albert" else "next_sentence_label"
    made = [data.batch(i) for i in range(steps)]
    labels = [b.dense_mlm_labels() for b in made]

    def step(i: int, batch) -> None:
        batch = batch.to(device)
        with torch.autocast(device.type, dtype=torch.bfloat16):
            loss = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask, token_type_ids=batch.token_type_ids,
                         labels=labels[i].to(device), **{pair_label: batch.pair_labels}).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        float(loss.detach())

    return Trainee("transformers loop", shape, device, step, lambda i: (made[i], 0.0))


def compare_training(shape: Shape, device: torch.device, args) -> dict:
    """Both sides interleaved at one shape; FLOP/s are kept for MFU against the run's peak (`add_mfu`)."""
    data = training_data(shape)
    total = args.warmup + args.rounds * args.steps
    theirs = users_loop(shape, device, data, total)  # its batches first: from here on only the producer reads `data`
    mine, ahead = ours(shape, device, data)
    try:
        for t in (mine, theirs):  # warm-up: kernels chosen and cached per shape; not recorded
            t.run(args.warmup, record=False)
        for r in range(args.rounds):
            for t in ((mine, theirs) if r % 2 == 0 else (theirs, mine)):
                t.run(args.steps)
    finally:
        ahead.close()
    ratios = [a / b for a, b in zip(mine.rates, theirs.rates)]
    row = {"shape": shape.name, "params_m": count(shape.spec).total / 1e6, "optimizer": shape.optimizer,
           "albert_lab_tokens_per_s": spread(mine.rates), "loop_tokens_per_s": spread(theirs.rates),
           "ratio": spread(ratios), "albert_lab_flops": mine.flops, "loop_flops": theirs.flops,
           "wait_share": spread(mine.waits)}
    print(f"  {shape.name}: albert-lab {fmt(row['albert_lab_tokens_per_s'], ',.0f')} tok/s, "
          f"loop {fmt(row['loop_tokens_per_s'], ',.0f')} tok/s, ratio {fmt(row['ratio'], '.2f')}x, "
          f"waiting for a batch {fmt(row['wait_share'], '.1%')} of the step", flush=True)
    return row


def add_mfu(row: dict, peak: float) -> None:
    """MFU: training FLOP/s over the bf16 matmul peak (the median of the run's measurements)."""
    for side in ("albert_lab", "loop"):
        row[f"{side}_mfu"] = spread([f / peak for f in row.pop(f"{side}_flops")])





def table(result: dict) -> str:
    peak = result["bf16_matmul_peak_tflops"]
    lines = [MARK_START,
             f"`bench_gpu.py` on {result['device']} (torch {result['torch']}, bf16 matmul peak measured in the same run: "
             f"{fmt(peak, '.3g')} TFLOP/s), {result['date']}; median [min-max] over {result['rounds']} interleaved rounds.",
             "", "| work | albert-lab | the transformers loop | ratio | MFU albert-lab / loop | waiting for a batch |",
             "|---|---|---|---|---|---|"]
    for row in result["training"]:
        lines.append(f"| train {row['shape']} | {fmt(row['albert_lab_tokens_per_s'], ',.0f')} tok/s | "
                     f"{fmt(row['loop_tokens_per_s'], ',.0f')} tok/s | {fmt(row['ratio'], '.2f')}x | "
                     f"{row['albert_lab_mfu']['median']:.1%} / {row['loop_mfu']['median']:.1%} | "
                     f"{row['wait_share']['median']:.1%} |")
    s = result["score"]
    lines.append(f"| score {s['pairs']:,} pairs both ways | {fmt(s['albert_lab_command_s'], '.1f')} s, the command | "
                 f"{fmt(s['loop_s'], '.2f')} s (fp32) | {fmt(s['ratio'], '.2f')}x the time | | |")
    a = result["analyses"]
    lines += ["", f"{a['model']}: oscillation {fmt(a['oscillation_s'], '.2f')} s, gradient flow "
              f"{fmt(a['gradient_flow_s'], '.2f')} s, logit lens {fmt(a['logit_lens_s'], '.2f')} s.", MARK_END]
    return "\n".join(lines)


def write_docs(result: dict, docs: Path) -> None:
    text = docs.read_text()
    start, end = text.find(MARK_START), text.find(MARK_END)
    if start < 0 or end < 0:
        raise SystemExit(f"{docs} has no {MARK_START} ... {MARK_END} section to fill")
    docs.write_text(text[:start] + table(result) + text[end + len(MARK_END):])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="tiny shapes on whatever device: a dry run (CI)")
    parser.add_argument("--json", type=Path, help="where the JSON goes (default docs/bench_gpu.json, or printed with --smoke)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=5, help="training steps per side per round")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--pairs", type=int, default=5000)
    args = parser.parse_args()
    if args.smoke:
        args.rounds, args.steps, args.warmup, args.pairs = 2, 2, 1, 40
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else f"CPU ({torch.get_num_threads()} threads)"
    print(f"bench_gpu on {name}{' (smoke)' if args.smoke else ''}", flush=True)
    size = 8192 if device.type == "cuda" else 512
    peaks = [matmul_peak(device, torch.bfloat16, size)]
    with tempfile.TemporaryDirectory() as tmp:
        training = []
        for shape in shapes(args.smoke):
            training.append(compare_training(shape, device, args))
            peaks.append(matmul_peak(device, torch.bfloat16, size))
        score = compare_scoring(Path(tmp), device, args.pairs, 1 if args.smoke else 2)
        analyses = time_analyses(Path(tmp), device, args.smoke, 1 if args.smoke else args.rounds)
    peak = spread(peaks)
    for row in training:
        add_mfu(row, peak["median"])
    result = {"device": name, "smoke": args.smoke, "torch": torch.__version__, "date": time.strftime("%Y-%m-%d"),
              "rounds": args.rounds, "bf16_matmul_peak_tflops": {k: v / 1e12 for k, v in peak.items()},
              "training": training, "score": score, "analyses": analyses}
    text = json.dumps(result, indent=1)
    if args.json or not args.smoke:
        (args.json or ROOT / "docs" / "bench_gpu.json").write_text(text + "\n")
    if not args.smoke:
        write_docs(result, ROOT / "docs" / "benchmarks.md")
    print(table(result))


if __name__ == "__main__":
    main()
