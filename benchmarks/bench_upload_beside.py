"""A visitor's script beside an upload, as the server runs them: a fixed piece of Python work (a
stand-in for a page's script run: --work iterations of a loop) timed while 64-pair batches of an
upload are scored by albert-sop-minilm in the server's process (a thread, on one torch thread: the
heavy lane leaves the other core to the visitors), against while the same upload is scored in a
process of its own (app/shell/scorer.py, the heavy lane now). Both with the server's GIL switch
interval (app/shell/serve.py). Interleaved A B A B over --rounds, --runs timings each round; the
median and worst seconds are printed, with nothing beside for reference, and the ratio.

Run: .venv/bin/python benchmarks/bench_upload_beside.py [--rounds 3] [--runs 5] [--work 300000]
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
from app.shell.scorer import Load, Scorer  # noqa: E402
from app.shell.serve import SWITCH_INTERVAL  # noqa: E402

CHECKPOINT = "albert-sop-minilm"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=5, help="timings of the script per round and way")
    parser.add_argument("--work", type=int, default=300_000, help="loop iterations of the stand-in script")
    args = parser.parse_args()
    sys.setswitchinterval(SWITCH_INTERVAL)
    bundle = load_checkpoint(checkpoints_dir() / CHECKPOINT, device="cpu")
    load = Load(str(checkpoints_dir() / CHECKPOINT), CHECKPOINT, device="cpu")
    upload = pairs_frame([f"The river runs north past the town, mile {i}, and the old mill." for i in range(64)],
                         [f"Then it turns east toward the sea and the harbour, mile {i}." for i in range(64)])
    scorer, stop = Scorer(), threading.Event()

    def here() -> None:
        torch.set_num_threads(1)
        while not stop.is_set():
            score_pairs([bundle], upload, progress=lambda *_: None)

    def child() -> None:
        while not stop.is_set():
            scorer.score([load], upload, lambda *_: None, threads=1)

    def script() -> float:
        start = time.perf_counter()
        sum(i * i for i in range(args.work))
        return time.perf_counter() - start

    def timed(upload_loop) -> list[float]:
        stop.clear()
        thread = threading.Thread(target=upload_loop) if upload_loop else None
        if thread:
            thread.start()
            time.sleep(1.0)
        seconds = [script() for _ in range(args.runs)]
        stop.set()
        if thread:
            thread.join()
        return seconds

    ways = {"alone": None, "beside an upload in the server's process": here, "beside an upload in a process of its own": child}
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; {CHECKPOINT}, 64-pair batches")
    scorer.score([load], upload)  # the child's imports and load, before anything is timed
    for loop in ways.values():
        timed(loop)
    found: dict[str, list[float]] = {}
    for _ in range(args.rounds):
        for name, loop in ways.items():
            found.setdefault(name, []).extend(timed(loop))
    for name, seconds in found.items():
        print(f"  the script {name}: median {statistics.median(seconds):.3f} s, worst {max(seconds):.3f} s ({len(seconds)} runs)")
    alone, here_s, child_s = (statistics.median(found[name]) for name in ways)
    print(f"  beside an upload: {here_s / alone:.2f}x alone in the server's process, {child_s / alone:.2f}x in a process "
          f"of its own ({child_s / here_s:.2f}x)")
    scorer.close()
    print(f"load average after {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
