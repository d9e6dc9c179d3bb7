"""Crash safety of training, measured: SIGKILL a run at random moments, resume it each
time, and compare the end state with an uninterrupted run of the same config and seed.

Two runs of a tiny model on the built-in corpus (checkpoint every step, so a kill can
land anywhere, including inside a checkpoint save):
- straight: trained to the end in one go;
- killed:   trained in a background worker, SIGKILLed after a random delay, resumed,
            again and again until it finishes.
Prints the number of kills survived, whether every weight and every optimizer-state
tensor of the two final checkpoints is bit-identical, and the largest difference.

Run: .venv/bin/python scripts/crash_safety.py [--kills 15] [--steps 60] [--seed 0]
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=15)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0, help="seed of the kill times (the training seed is 0)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["ALBERT_LAB_RUNS"] = tmp
        from safetensors.torch import load_file

        from albert_lab.spec import ModelSpec
        from albert_lab.training.config import TrainConfig
        from albert_lab.training.jobs import create_run, resume_run, spawn_worker
        from albert_lab.training.runs import read_run
        from albert_lab.training.worker import run_worker

        spec = ModelSpec(vocab_size=1000, embedding_size=16, hidden_size=32, num_layers=3, num_heads=2, ffn_size=48, max_positions=64)
        base = dict(spec=spec.to_dict(), corpus="wiki-vital[:600]", vocab_size=1000, max_seq_len=64, batch_size=8,
                    max_steps=args.steps, warmup_steps=5, lr=2e-3, log_every=5, eval_every=10_000, eval_limit=8,
                    checkpoint_every=1, gradflow_every=10_000, seed=0, threads=1)
        straight, _ = create_run(TrainConfig(**base, name="straight"))
        assert run_worker(straight) == "succeeded"
        killed, _ = create_run(TrainConfig(**base, name="killed"))
        rng = random.Random(args.seed)
        kills, start = 0, time.time()
        spawn_worker(killed)
        while read_run(killed).status != "succeeded":
            info = read_run(killed)
            if info.status in ("failed", "cancelled"):
                resume_run(killed)
                continue
            if kills < args.kills and info.status == "running" and info.raw.get("pid"):
                time.sleep(rng.uniform(0.1, 1.0))
                try:
                    os.kill(int(read_run(killed).raw["pid"]), signal.SIGKILL)
                    kills += 1
                    print(f"kill {kills} at step {read_run(killed).step}")
                except (ProcessLookupError, TypeError):
                    pass
                while read_run(killed).active:  # the reader marks a vanished worker as failed
                    time.sleep(0.1)
            time.sleep(0.1)
            if time.time() - start > 1800:
                sys.exit("gave up after 30 minutes")
        diffs = {}
        for name in ("model.safetensors", "trainer_state.safetensors"):
            a, b = load_file(straight / "checkpoint" / name), load_file(killed / "checkpoint" / name)
            assert a.keys() == b.keys(), name
            diffs[name] = max(float((a[k].float() - b[k].float()).abs().max()) for k in a)
        equal = all(d == 0 for d in diffs.values())
        print(f"{kills} SIGKILLs survived over {args.steps} steps (checkpoint every step); the resumed run "
              f"{'is' if equal else 'is NOT'} bit-identical to the uninterrupted one: "
              + ", ".join(f"max |diff| {d:g} in {n}" for n, d in diffs.items()))


if __name__ == "__main__":
    main()
