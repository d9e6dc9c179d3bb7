"""Precompute the depth lab's default view into app/depth_default.json (about 10 s on
one core): the page's first visit then draws at once instead of training three
networks. Run again after changing albert_lab/analysis/depth.py or the page's
defaults (app/depth_cache.py); a test checks the file against a fresh run.

Run: .venv/bin/python scripts/make_depth_default.py
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    import torch

    from albert_lab.analysis.depth import train_disc
    from app.depth_cache import DEFAULT_FILE, default_configs, write_default

    torch.set_num_threads(1)  # bit-for-bit what the app computes on one thread
    runs = [(cfg, *train_disc(cfg)) for cfg in default_configs()]
    write_default(runs)
    print(f"wrote {DEFAULT_FILE.relative_to(ROOT)} ({DEFAULT_FILE.stat().st_size / 1e3:.0f} kB)")


if __name__ == "__main__":
    main()
