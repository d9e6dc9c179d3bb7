"""Whether making batches slows the step that takes them: a producer thread against the worker process.

A GPU step is mostly Python launching kernels; a thread in the same process that masks the next
batches holds Python's lock for much of that time. The CPU proxy: FORWARDS forward passes of a tiny
model on a 4 x 64 corner of each batch (one torch thread, so the producer has a core of its own;
the step is mostly Python, as on a GPU) while 128 x 512-token batches are made, taken
- from `BatchesAhead` (data/batching.py: made in a worker process),
- from a thread in this process making them the same way (how batches were made before),
- ready-made (the step alone),
interleaved in rounds (each order in turn); per round the mean step time, then the median [min-max]
over rounds of each, and of the thread's and the process's over the step alone.

Run: .venv/bin/python benchmarks/bench_producer.py [--rounds 6] [--steps 20]
"""

from __future__ import annotations

import argparse
import queue
import statistics
import threading
import time

import torch
from bench_batches import VOCAB, masking, synthetic_docs

ROWS, WIDTH = 4, 64  # of each 128 x 512 batch, what the step computes on
FORWARDS = 60  # per step: a step longer than making a batch, so that no variant waits for one


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()

    from albert_lab.data.batching import BatchesAhead, PretrainingData
    from albert_lab.models import Parts, build_model
    from albert_lab.spec import ModelSpec

    torch.set_num_threads(1)
    data = PretrainingData(synthetic_docs(), "sop", masking(), (101, 102, 0), 512, 128, seed=0)
    encoder = Parts.of(build_model(ModelSpec(vocab_size=VOCAB, embedding_size=32, hidden_size=32, num_layers=2,
                                             num_heads=2, ffn_size=64), seed=0).eval()).encoder
    ready = [data.batch(step) for step in range(args.steps)]
    data.epoch_batches(0)  # built once, before any timing

    def forward(batch) -> None:  # a few rows: like a GPU step, mostly Python launching small kernels
        with torch.no_grad():
            for _ in range(FORWARDS):
                encoder(input_ids=batch.input_ids[:ROWS, :WIDTH], token_type_ids=batch.token_type_ids[:ROWS, :WIDTH])

    def alone(first: int) -> float:
        start = time.perf_counter()
        for batch in ready:
            forward(batch)
        return time.perf_counter() - start

    def process(first: int) -> float:
        with BatchesAhead(data, first, torch.device("cpu")) as ahead:
            ahead.take(first)  # the worker has started
            start = time.perf_counter()
            for step in range(first + 1, first + 1 + args.steps):
                forward(ahead.take(step))
            return time.perf_counter() - start

    def thread(first: int) -> float:
        made: queue.Queue = queue.Queue(maxsize=2)
        stop = threading.Event()

        def work() -> None:
            step = first
            while not stop.is_set():
                batch = data.batch(step)
                while not stop.is_set():
                    try:
                        made.put(batch, timeout=0.1)
                        break
                    except queue.Full:
                        continue
                step += 1

        worker = threading.Thread(target=work, daemon=True)
        worker.start()
        made.get()
        start = time.perf_counter()
        for _ in range(args.steps):
            forward(made.get())
        elapsed = time.perf_counter() - start
        stop.set()
        worker.join()
        return elapsed

    variants = {"step alone": alone, "thread": thread, "worker process": process}
    times: dict[str, list[float]] = {name: [] for name in variants}
    order = list(variants)
    for r in range(args.rounds):
        for name in order if r % 2 == 0 else order[::-1]:
            times[name].append(1000 * variants[name](1000 * r) / args.steps)

    def spread(values: list[float]) -> str:
        return f"{statistics.median(values):.1f} [{min(values):.1f}-{max(values):.1f}]"

    print(f"{FORWARDS} forwards of a 2-layer H=32 encoder on {ROWS} x {WIDTH} of each 128 x 512 batch, 1 torch thread, "
          f"{args.rounds} interleaved rounds of {args.steps} steps (ms per step, median [min-max])")
    for name in variants:
        line = f"  {name:15s} {spread(times[name])}"
        if name != "step alone":
            line += f"   / step alone: {spread([t / a for t, a in zip(times[name], times['step alone'])])}x"
        print(line)


if __name__ == "__main__":
    main()
