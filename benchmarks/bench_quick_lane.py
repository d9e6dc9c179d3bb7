"""A typed pair beside an upload, as the app's quick lane computes it: one pair scored by the four
default checkpoints while another thread scores batches of pairs (an upload in the heavy lane) and
`--busy` threads run Python (other visitors' scripts), in one process with the server's GIL switch
interval (app/shell/serve.py). The typed pair's torch threads: 2 (a team, as before) against 1 (the
quick lane now, albert_lab.devices.one_thread); the upload's: 2. Interleaved A B A B over --rounds,
five pairs timed per round; the median and worst seconds per pair are printed, and alone (nothing
beside) for reference.

Run: .venv/bin/python benchmarks/bench_quick_lane.py [--rounds 3] [--busy 2]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from albert_lab.analysis.pairs import pairs_frame, score_pairs  # noqa: E402
from albert_lab.checkpoint.load import load_checkpoint  # noqa: E402
from albert_lab.paths import checkpoints_dir  # noqa: E402
from app.shell.serve import SWITCH_INTERVAL  # noqa: E402

DEFAULTS = ("albert-sop-minilm", "bert-sop-minilm", "albert-nsp-minilm", "albert-sop")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--busy", type=int, default=2, help="threads running Python beside (visitors' scripts)")
    args = parser.parse_args()
    sys.setswitchinterval(SWITCH_INTERVAL)
    bundles = [load_checkpoint(checkpoints_dir() / name, device="cpu") for name in DEFAULTS]
    upload = pairs_frame([f"The river runs north past the town, mile {i}, and the old mill." for i in range(64)],
                         [f"Then it turns east toward the sea and the harbour, mile {i}." for i in range(64)])
    typed = pairs_frame(["The cat sat on the mat by the door."], ["It was warm there in the afternoon."])
    stop = threading.Event()

    def upload_loop() -> None:
        torch.set_num_threads(2)
        while not stop.is_set():
            score_pairs(bundles[:1], upload)

    def busy() -> None:
        while not stop.is_set():
            sum(i * i for i in range(20_000))

    def typed_pairs(threads: int, beside: bool) -> list[float]:
        stop.clear()
        others = ([threading.Thread(target=upload_loop)] + [threading.Thread(target=busy) for _ in range(args.busy)]
                  if beside else [])
        for thread in others:
            thread.start()
        time.sleep(1.0 if beside else 0.0)
        torch.set_num_threads(threads)
        seconds = []
        for _ in range(5):
            start = time.perf_counter()
            score_pairs(bundles, typed)
            seconds.append(time.perf_counter() - start)
        stop.set()
        for thread in others:
            thread.join()
        return seconds

    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; {args.busy} busy Python threads beside")
    typed_pairs(2, False)  # warm-up
    found: dict[str, list[float]] = {}
    for _ in range(args.rounds):
        for threads in (2, 1):
            for beside in (False, True):
                found.setdefault(f"{threads} thread{'s' if threads > 1 else ''}, {'beside an upload' if beside else 'alone'}",
                                 []).extend(typed_pairs(threads, beside))
    for what, seconds in found.items():
        print(f"  typed pair on {what}: median {statistics.median(seconds):.3f} s, worst {max(seconds):.3f} s "
              f"({len(seconds)} pairs)")
    print(f"load average after {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
