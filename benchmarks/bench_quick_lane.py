"""A typed pair beside an upload, as the app's quick lane computes it: one pair scored by the four
default checkpoints while another thread scores batches of pairs (an upload in the heavy lane) and
`--busy` threads run Python (other visitors' scripts), in one process with the server's GIL switch
interval (app/shell/serve.py). The typed pair computed in that process on two torch threads (a team),
on one (albert_lab.devices.one_thread), and in a process of its own on one (app/shell/scorer.py, the
quick lane: its torch operations take no turns for this process's GIL); the upload's threads: 2.
Interleaved A B A B over --rounds, five pairs timed per round; the median and worst seconds per pair
are printed, and alone (nothing beside) for reference.

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
from albert_lab.devices import one_thread  # noqa: E402
from albert_lab.paths import checkpoints_dir  # noqa: E402
from app.shell.scorer import Load, Scorer  # noqa: E402
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

    scorer, loads = Scorer(), [Load(str(checkpoints_dir() / name), name, device="cpu") for name in DEFAULTS]

    def here(pairs):
        with one_thread():
            return score_pairs(bundles, pairs)

    def team(pairs):
        torch.set_num_threads(2)
        return score_pairs(bundles, pairs)

    ways = {"in the server's process, two threads": team, "in the server's process, one thread": here,
            "in a process of its own": lambda pairs: scorer.score(loads, pairs)}

    def typed_pairs(way, beside: bool) -> list[float]:
        stop.clear()
        others = ([threading.Thread(target=upload_loop)] + [threading.Thread(target=busy) for _ in range(args.busy)]
                  if beside else [])
        for thread in others:
            thread.start()
        time.sleep(1.0 if beside else 0.0)
        seconds = []
        for _ in range(5):
            start = time.perf_counter()
            way(typed)
            seconds.append(time.perf_counter() - start)
        stop.set()
        for thread in others:
            thread.join()
        return seconds

    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; {args.busy} busy Python threads beside")
    for way in ways.values():  # warm-up: the child's imports and loads, each way's first pass
        typed_pairs(way, False)
    found: dict[str, list[float]] = {}
    for _ in range(args.rounds):
        for name, way in ways.items():
            for beside in (False, True):
                found.setdefault(f"{name}, {'beside an upload' if beside else 'alone'}", []).extend(typed_pairs(way, beside))
    for what, seconds in found.items():
        print(f"  typed pair {what}: median {statistics.median(seconds):.3f} s, worst {max(seconds):.3f} s "
              f"({len(seconds)} pairs)")
    for beside in ("alone", "beside an upload"):
        _, mine, theirs = (statistics.median(found[f"{name}, {beside}"]) for name in ways)
        print(f"  {beside}: a process of its own takes {theirs / mine:.2f}x the time of one thread in the server's")
    scorer.close()
    print(f"load average after {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
