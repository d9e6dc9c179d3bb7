"""Whether compiling the training step pays here: eager against `torch.compile` (inductor), interleaved.

Both train the same spec from the same weights on the same batches, bucketed as a compiled run
buckets them (data/batching.py's Shapes.bucketed: 4 widths, one prediction count per width), with
LAMB (compiled too in the compiled variant, as `--compile on` runs it). First the compiled variant
meets every shape of the batches to come (the compile time, printed); then rounds of `--steps`
steps each, A B then B A, and the ratio of their step times within each round (median [min-max]).
Break-even: the steps after which the time spent compiling is paid back.

Run: .venv/bin/python benchmarks/bench_compile.py [--preset lab-albert] [--rounds 5] [--steps 4]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from bench_train import setup, spread


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="lab-albert")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args()

    from albert_lab.data.batching import Shapes
    from albert_lab.devices import fast_bf16
    from albert_lab.kernels import autocast, tune_for_training
    from albert_lab.models import build_model
    from albert_lab.objective import PretrainingLoss
    from albert_lab.paths import use_compile_folders
    from albert_lab.training.optim import build_optimizer

    spec, data, _ = setup(args.preset, args.batch_size)
    data.shapes = Shapes.bucketed(128, data.cfg)
    device, dtype = torch.device("cpu"), torch.bfloat16 if fast_bf16(torch.device("cpu")) else None
    variants = {}
    for name in ("eager", "compiled"):
        model = tune_for_training(build_model(spec, seed=0).train(), device)
        loss, optimizer = PretrainingLoss(model, spec.objective), build_optimizer(model, "lamb", 1e-3)
        if name == "compiled":
            use_compile_folders()
            loss.compile_core()
            optimizer.compile_update()
        variants[name] = (loss, optimizer)

    def run(name: str, steps: list[int]) -> float:
        loss_fn, optimizer = variants[name]
        start = time.perf_counter()
        for step in steps:
            with autocast(device, dtype):
                out = loss_fn(data.batch(step))
            out.loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        return time.perf_counter() - start

    total = args.rounds * args.steps
    shapes = {}
    for step in range(total):  # one batch of each shape the measured steps will meet
        batch = data.batch(step)
        shapes.setdefault((batch.input_ids.shape[1], batch.num_tokens == batch.input_ids.numel()), step)
    first = sorted(shapes.values())
    compile_s = run("compiled", first) - run("eager", first)
    times: dict[str, list[float]] = {"eager": [], "compiled": []}
    for r in range(args.rounds):
        steps = list(range(r * args.steps, (r + 1) * args.steps))
        for name in (("eager", "compiled") if r % 2 == 0 else ("compiled", "eager")):
            times[name].append(run(name, steps) / args.steps)
    ratio = [e / c for e, c in zip(times["eager"], times["compiled"])]
    saved = statistics.median(times["eager"]) - statistics.median(times["compiled"])
    print(f"{args.preset}: {spec.label}, batch {args.batch_size} x <=128 tokens in widths {data.shapes.widths}, "
          f"{'bf16 autocast' if dtype else 'fp32'}, {torch.get_num_threads()} threads, {args.rounds} interleaved rounds "
          f"of {args.steps} steps")
    print(f"  compiling {len(first)} shapes: {compile_s:.0f} s more than running them eagerly")
    print(f"  step: eager {spread(times['eager'], '.3f')} s, compiled {spread(times['compiled'], '.3f')} s; "
          f"eager / compiled {spread(ratio, '.2f')}x")
    print(f"  break-even: {'never' if saved <= 0 else f'{compile_s / saved:,.0f} steps'}")


if __name__ == "__main__":
    main()
