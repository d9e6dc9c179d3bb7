"""Parameter counting without weights: closed form and meta device against
materialising the model, for ALBERT-xxlarge (and the other Table 1 presets).

Prints seconds (including the imports each method needs, as a command pays them) and peak
memory of each method and the ratio. All three counts must
agree; the closed form is what `albert-lab params` uses.

Run: .venv/bin/python benchmarks/bench_params.py [--preset albert-xxlarge]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time


def measure(method: str, preset: str) -> dict:
    start = time.perf_counter()
    if method == "closed-form":
        from albert_lab.params import count
        from albert_lab.spec import PRESETS

        total = count(PRESETS[preset]).total
    else:
        import torch

        from albert_lab.models import Parts, build_model, unique_parameter_count
        from albert_lab.spec import PRESETS

        if method == "meta":
            with torch.device("meta"):
                model = build_model(PRESETS[preset])
        else:
            model = build_model(PRESETS[preset])
        total = unique_parameter_count(Parts.of(model).encoder)
    return dict(method=method, seconds=time.perf_counter() - start, total=total,
                peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="albert-xxlarge")
    parser.add_argument("--method", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.method:
        print(json.dumps(measure(args.method, args.preset)))
        return
    rows = {}
    for method in ("closed-form", "meta", "materialised"):  # each in a fresh process: honest memory, no warm caches
        out = subprocess.run([sys.executable, __file__, "--method", method, "--preset", args.preset],
                             capture_output=True, text=True, check=True)
        rows[method] = json.loads(out.stdout.strip().splitlines()[-1])
    assert len({r["total"] for r in rows.values()}) == 1, rows
    slow = rows["materialised"]
    print(f"{args.preset}: {slow['total']:,} parameters (all three methods agree)")
    for r in rows.values():
        print(f"  {r['method']:12s} {r['seconds'] * 1000:10.1f} ms   peak RSS {r['peak_rss_mb']:8,.0f} MB   "
              f"{slow['seconds'] / r['seconds']:10.0f}x faster than materialising")


if __name__ == "__main__":
    main()
