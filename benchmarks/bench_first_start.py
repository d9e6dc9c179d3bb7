"""The Training page's first Start on a fresh install: seconds from the click to the run's
folder, with the form's defaults (lab-albert, SOP, long-mix, 8,000 pieces), as the server
runs it (training.jobs.start_run, its imports already done).

Each round starts from an empty cache (a fresh install) in a temporary folder:
- 'install': `albert-lab corpora --install` (what scripts/app.sh and test.sh run), which now
  makes the tokenizer a run's defaults need, then the Start;
- 'old' (--old): the Start alone on the empty cache, which trains that tokenizer inside the
  server, as every fresh install did before.
Rounds alternate between the two (interleaved), and the load average is printed beside: on a
shared 2-core machine the same work takes twice as long at load 4 as alone.

Run: .venv/bin/python benchmarks/bench_first_start.py [--rounds 3] [--old]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def first_start(cache: Path, runs: Path) -> float:
    """Seconds that training.jobs.start_run takes for the form's defaults (the worker is stopped after)."""
    from albert_lab.data.corpora import DEFAULT
    from albert_lab.spec import PRESETS
    from albert_lab.training import jobs
    from albert_lab.training.recipe import browser_config

    os.environ["ALBERT_LAB_CACHE"], os.environ["ALBERT_LAB_RUNS"] = str(cache), str(runs)
    spec = PRESETS["lab-albert"]  # the form's default model, its fields as the form fills them
    config = browser_config("lab-albert", spec.objective, hidden=spec.hidden_size, layers=spec.num_layers,
                            embedding=spec.embedding_size, heads=spec.num_heads, sharing=spec.sharing, corpus=DEFAULT,
                            steps=200, vocab=8000, max_seq_len=128, batch_size=32, lr=3e-3, optimizer="lamb",
                            warmup_steps=50, seed=0, name="", chunk_start="document", pair_weight=1.0)
    start = time.perf_counter()
    info = jobs.start_run(config, runs)
    seconds = time.perf_counter() - start
    jobs.cancel_run(info.path)
    return seconds


def install(cache: Path) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "albert_lab", "corpora", "--install"], cwd=ROOT, check=True,
                   env={**os.environ, "ALBERT_LAB_CACHE": str(cache), "PYTHONPATH": str(ROOT)}, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def wait_for_workers(runs: Path, timeout: float = 120) -> None:
    """Until the cancelled run's worker has gone (it holds a core while it stops)."""
    from albert_lab.training.runs import list_runs

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(r.active for r in list_runs(runs)):
        time.sleep(0.5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--old", action="store_true", help="also the Start on an empty cache, interleaved")
    args = parser.parse_args()
    import albert_lab.training.jobs  # noqa: F401  the server has imported it before anyone clicks

    results: dict[str, list[float]] = {"install": [], "start after install": [], "start on an empty cache": []}
    for round_ in range(args.rounds):
        for kind in ("install", "old") if args.old else ("install",):
            with tempfile.TemporaryDirectory(prefix="first-start-") as tmp:
                cache, runs = Path(tmp) / "cache", Path(tmp) / "runs"
                load = os.getloadavg()[0]
                if kind == "install":
                    results["install"].append(install(cache))
                    seconds = first_start(cache, runs)
                    results["start after install"].append(seconds)
                else:
                    seconds = first_start(cache, runs)
                    results["start on an empty cache"].append(seconds)
                wait_for_workers(runs)
                print(f"round {round_ + 1}, {kind}: first Start {seconds:.1f} s (load {load:.1f} before)", flush=True)
    for name, values in results.items():
        if values:
            print(f"{name}: median {statistics.median(values):.1f} s [{min(values):.1f}-{max(values):.1f}], {len(values)} rounds")


if __name__ == "__main__":
    main()
