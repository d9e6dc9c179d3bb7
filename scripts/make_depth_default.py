"""Precompute the depth lab's default view and its VGG comparison at the default settings
into app/rooms/depth_lab/default.json (about 30 s on one idle core): the page's first visit and
the VGG button then draw at once instead of training three networks and four conv nets
(the four nets take half an hour on a busy 2-core machine). Run again after changing albert_lab/analysis/depth.py or the page's
defaults (app/rooms/depth_lab/cache.py); a test checks the file against a fresh run.

The file records the CPU it was made on (devices.cpu_kind); app/rooms/depth_lab/cache.py says what a
fresh run gives on other CPUs, as measured.

Run: .venv/bin/python scripts/make_depth_default.py
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    import torch

    from albert_lab.analysis.depth import VGG_NETS, train_disc, train_vgg
    from app.rooms.depth_lab.cache import DEFAULT_FILE, VGG_DEFAULTS, VGG_RECORD_EVERY, default_configs, write_default

    torch.set_num_threads(1)  # bit-for-bit what the app computes on one thread
    runs = [(cfg, *train_disc(cfg)) for cfg in default_configs()]
    vgg = [(dict(depth=depth, batchnorm=bn, **VGG_DEFAULTS),
            *train_vgg(depth, bn, record_every=VGG_RECORD_EVERY, **VGG_DEFAULTS)) for depth, bn in VGG_NETS]
    write_default(runs, vgg)
    print(f"wrote {DEFAULT_FILE.relative_to(ROOT)} ({DEFAULT_FILE.stat().st_size / 1e3:.0f} kB)")


if __name__ == "__main__":
    main()
