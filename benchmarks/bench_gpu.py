"""albert-lab on a GPU against the loop a user would write, side by side in one process.

One command, sized for about 4 minutes on an H100 or H200 (process starts included; more where the
trainer compiles its step):

1. Training, four shapes, random weights, the same batches (synthetic documents in MiniLM's
   30,522-piece vocabulary, masked as in training: benchmarks/bench_batches.py): ALBERT-base
   (E 128, H 768, L 12, all shared) at 128 x 512 and 256 x 128 tokens, BERT-base at 256 x 128,
   and MiniLM's uptraining shape (the architecture of checkpoints/bert-sop-minilm: BERT H 384,
   L 6; what `--init-from` trains) at 256 x 128.
   - albert-lab: its Trainer (`training.loop`), built as `albert-lab train` builds it for a long
     run, running its own loop: batches made ahead, the loss with the MLM head at the predicted
     positions only, the training attention, bf16 autocast where the device has it, clipping,
     the project's optimizer (LAMB; AdamW for uptraining, as its recipe), a step's numbers read
     one step late; its logs, evaluations and saves left out of the rounds;
   - the transformers loop: the pretraining model's own loss under bf16 autocast, SDPA
     attention, torch's fused AdamW, clipping; its batches made beforehand, copied each step.
   Each side first takes every batch the rounds will take (so no width is new inside a round:
   kernels chosen, graphs compiled); then the two run interleaved (A B, then B A) for several
   rounds; tokens/s (real tokens), the ratio within each round, and MFU: training FLOPs (3x the
   forward FLOPs of albert_lab.params.count, real tokens and predicted positions) over the bf16
   matmul peak measured in the same run. Also the share of albert-lab's step time spent
   waiting for a batch.
2. `albert-lab score` of 40 and of 5,000 pairs both ways (A->B and B->A), the command with its
   process start, on random ALBERT-base weights, against a loop: the stock model, pairs sorted
   by length, batches of 64, fp32, both orders. 40 pairs show the fixed costs. The precision
   the command chose, and the largest difference of the probabilities beside its bound
   (albert_lab/analysis/pairs.py), are printed beside the times.
3. Oscillation, gradient flow and the logit lens on an ALBERT-xxlarge-shaped model
   (random weights, H 4096, L 12 shared): seconds each, 8 texts of up to 128 tokens.

Every figure is printed as median [min-max] over rounds. The results go to a JSON file
and, unless --smoke, to docs/benchmarks.md (the table between the bench_gpu markers),
with the device's name.

`--smoke`: tiny shapes (H 32, batch 4 x 32, 40 pairs), one round of one step of every part on the
CPU in seconds: what CI runs so that the script is ready when a GPU is at hand. It trains two of
the four shapes, ALBERT with LAMB and BERT with AdamW (the other two, made tiny, are the same
code at other sizes), and measures the peak on small products (bf16 is emulated on some CPUs).

Parts 2 and 3 live in benchmarks/gpu_scoring.py.

Run: .venv/bin/python benchmarks/bench_gpu.py [--smoke] [--json PATH] [--rounds 3] [--steps 5] [--pairs 5000]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_batches import synthetic_docs  # noqa: E402
from gpu_scoring import MINILM, SMALL, compare_scoring, fmt, spread, sync, time_analyses  # noqa: E402

from albert_lab.kernels import set_attention  # noqa: E402
from albert_lab.models import build_model  # noqa: E402
from albert_lab.params import count  # noqa: E402
from albert_lab.spec import PRESETS, ModelSpec  # noqa: E402
from albert_lab.training.config import TrainConfig  # noqa: E402
from albert_lab.training.loop import Cancelled, Trainer  # noqa: E402
from albert_lab.training.prepare import Prepared  # noqa: E402

MARK_START, MARK_END = "<!-- bench_gpu: start -->", "<!-- bench_gpu: end -->"
LONG_RUN = 100_000  # steps: the trainer is built for a run this long
FEW_PAIRS = 40  # `score` of this many pairs beside --pairs: the command's fixed costs


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
    return [Shape(s.name + " (smoke: tiny)", tiny(s.spec), 4, 32, s.optimizer) for s in (full[0], full[3])]


def tiny(spec: ModelSpec) -> ModelSpec:
    """--smoke's version of a spec: H 32, 2 layers (BERT's E is its H)."""
    return spec.replace(**{**SMALL, "max_positions": 64, **({"embedding_size": 32} if spec.family == "bert" else {})})


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


def train_flops(spec: ModelSpec, batch) -> float:
    report = count(spec, seq_len=batch.input_ids.shape[1])
    return 3 * (report.flops_per_token * batch.num_tokens + report.mlm_flops_per_prediction * batch.num_predictions)


def trainer(shape: Shape, work: Path) -> Trainer:
    """albert-lab's Trainer, built as `albert-lab train` builds it, on synthetic documents in MiniLM's vocabulary
    (30,522 pieces for every shape), random weights, budgeted as a long run (where the trainer compiles for
    long runs, it compiles here)."""
    from albert_lab.tokenizer import load_tokenizer

    tokenizer = load_tokenizer(MINILM)
    spec = shape.spec.replace(vocab_size=len(tokenizer))
    never = LONG_RUN + 1  # nothing periodic within the rounds
    config = TrainConfig(spec=spec.to_dict(), objective=spec.objective, max_seq_len=shape.seq_len,
                         batch_size=shape.batch_size, optimizer=shape.optimizer, lr=1e-4, max_steps=LONG_RUN,
                         log_every=never, eval_every=never, checkpoint_every=never, gradflow_every=never)
    docs = synthetic_docs(documents=400 if shape.batch_size <= 8 else 3000, vocab=len(tokenizer))
    prepared = Prepared(config, spec, None, tokenizer, MINILM, docs, pd.DataFrame({"task": []}))
    return Trainer(work / "run", config, prepared)


@dataclass
class Side:
    """One side's record: tokens/s and FLOP/s per round, and the share of each round spent waiting for a batch."""
    rates: list[float] = field(default_factory=list)
    flops: list[float] = field(default_factory=list)
    waits: list[float] = field(default_factory=list)

    def add(self, batches: list, elapsed: float, spec: ModelSpec, waited: float = 0.0) -> None:
        self.rates.append(sum(b.num_tokens for b in batches) / elapsed)
        self.flops.append(sum(train_flops(spec, b) for b in batches) / elapsed)
        self.waits.append(waited / elapsed)


def users_loop(spec: ModelSpec, device: torch.device):
    """The transformers loop a user would write: the pretraining model's own loss under bf16 autocast, SDPA
    attention, fused AdamW, clipping; `step(batch, labels)` trains on one batch (made beforehand, with its dense MLM
    labels; copied each step)."""
    model = build_model(spec, seed=0).to(device).train()
    set_attention(model, "sdpa")
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    pair_label = "sentence_order_label" if spec.family == "albert" else "next_sentence_label"

    def step(batch, labels: torch.Tensor) -> None:
        batch = batch.to(device)
        with torch.autocast(device.type, dtype=torch.bfloat16):
            loss = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask, token_type_ids=batch.token_type_ids,
                         labels=labels.to(device), **{pair_label: batch.pair_labels}).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        float(loss.detach())

    return step


def compare_training(shape: Shape, device: torch.device, args, work: Path) -> dict:
    """Both sides on the same batches, interleaved (A B, then B A), after a pass over every batch the rounds
    will take (each width compiled, tuned and cached first). albert-lab's side is its Trainer's own loop:
    batches made ahead as in a run, the one step a run takes, a step's numbers read one step late; it takes
    step 0 (its batch producer starting) untimed, then rounds of `steps` steps. At each round's end the
    trainer's check for work due (`_due`) keeps the time and runs the loop's rounds due there."""
    ours = trainer(shape, work)
    spec, steps, rounds = ours.prepared.spec, args.steps, args.rounds
    made = [ours.data.batch(i) for i in range(1 + rounds * steps)]  # before the producer starts: it alone reads `data`
    labels = [b.dense_mlm_labels() for b in made]
    loop_step, mine, theirs = users_loop(spec, device), Side(), Side()

    def loop_round(r: int) -> None:
        taken = range(1 + r * steps, 1 + (r + 1) * steps)
        sync(device)
        start = time.perf_counter()
        for i in taken:
            loop_step(made[i], labels[i])
        sync(device)
        theirs.add([made[i] for i in taken], time.perf_counter() - start, spec)

    for batch, dense in zip(made, labels):  # the loop's pass over every batch
        loop_step(batch, dense)
    run_trainer(ours, 1 + rounds * steps, lambda done, producer: None)  # the trainer's pass
    clock = {}

    def boundary(done: int, producer) -> None:
        sync(device)
        now, waited = time.perf_counter(), producer.waited
        if done > 1:  # round r of ours ends
            r = (done - 1) // steps - 1
            mine.add(made[1 + r * steps:done], now - clock["start"], spec, waited - clock["waited"])
            for later in (r, r + 1) if r % 2 == 0 else ():  # A B, then B A
                if later < rounds:
                    loop_round(later)
        sync(device)
        clock.update(start=time.perf_counter(), waited=producer.waited)

    ours.progress.step = 0  # the same batches again, now timed
    run_trainer(ours, 1 + rounds * steps, boundary, every=steps)
    ratios = [a / b for a, b in zip(mine.rates, theirs.rates)]
    row = {"shape": shape.name, "params_m": count(spec).total / 1e6, "optimizer": shape.optimizer,
           "albert_lab_tokens_per_s": spread(mine.rates), "loop_tokens_per_s": spread(theirs.rates),
           "ratio": spread(ratios), "albert_lab_flops": mine.flops, "loop_flops": theirs.flops,
           "wait_share": spread(mine.waits)}
    print(f"  {shape.name}: albert-lab {fmt(row['albert_lab_tokens_per_s'], ',.0f')} tok/s, "
          f"loop {fmt(row['loop_tokens_per_s'], ',.0f')} tok/s, ratio {fmt(row['ratio'], '.2f')}x, "
          f"waiting for a batch {fmt(row['wait_share'], '.1%')} of the step", flush=True)
    return row


def run_trainer(ours: Trainer, total: int, boundary, every: int = 0) -> None:
    """The trainer's loop from its current step for `total` steps: `boundary(steps done, batch producer)` after
    the first step and after every `every` more, in place of its logs, evaluations and saves; then stopped as
    a cancelled run stops."""
    first, producer = ours.progress.step, {}
    real_steps = ours._steps

    def steps(batches) -> None:  # the producer, for its waiting time
        producer["it"] = batches
        real_steps(batches)

    def due() -> bool:
        done = ours.progress.step - first
        if done == 1 or (every and (done - 1) % every == 0):
            boundary(done, producer["it"])
        if done >= total:
            ours.cancel.set()
        return False

    ours._steps, ours._due = steps, due
    try:
        ours._loop()
    except Cancelled:
        ours.cancel.clear()
    finally:
        del ours._steps, ours._due


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
    for s in result["score"]:
        lines.append(f"| score {s['pairs']:,} pairs both ways | {fmt(s['albert_lab_command_s'], '.1f')} s, the command "
                     f"({s['precision']}) | {fmt(s['loop_s'], '.2f')} s (fp32) | {fmt(s['ratio'], '.2f')}x the time | | |")
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
    parser.add_argument("--pairs", type=int, default=5000, help="pairs `score` scores, beside 40 (fixed costs)")
    args = parser.parse_args()
    if args.smoke:
        args.rounds, args.steps, args.pairs = 1, 1, 40  # each part once: every line runs, no figure means anything
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else f"CPU ({torch.get_num_threads()} threads)"
    print(f"bench_gpu on {name}{' (smoke)' if args.smoke else ''}", flush=True)
    size = 8192 if device.type == "cuda" else 128 if args.smoke else 512
    peaks = [matmul_peak(device, torch.bfloat16, size)]
    with tempfile.TemporaryDirectory() as tmp:
        training = []
        for shape in shapes(args.smoke):
            training.append(compare_training(shape, device, args, Path(tmp)))
            peaks.append(matmul_peak(device, torch.bfloat16, size))
        score = compare_scoring(Path(tmp), device, sorted({FEW_PAIRS, args.pairs}), 1 if args.smoke else 2, args.smoke)
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
