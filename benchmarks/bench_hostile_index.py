"""Hostile TensorBundle indexes against the release reader: each family of the adversary's passes,
built at the size that hurt, read by `read_bundle` in a process of its own: seconds, and the peak of
what Python allocated for it, until the one-line refusal, beside a real release's
index for scale. What the reader must keep: under 2 s and 256 MiB beyond the imports for each.

Run: .venv/bin/python benchmarks/bench_hostile_index.py
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

FAMILIES = ("keys growing by a byte, 344 KB", "keys growing by a byte, 584 KB", "long shared prefixes",
            "2,600 blocks each restarting a long key", "300 blocks inside one another, 8 MB", "700,000 empty blocks, empty keys",
            "a real release's index (albert_tiny)")


def build(family: str, prefix: Path) -> int:
    """Write the family's index at `prefix`.index (and an empty data file); its size in bytes."""
    import shutil

    from test_checkpoint_hostile import HEADER, _growing_keys, _long_prefix_keys, _nested, _table
    from tf_bundle import mask, write_coded_index

    from albert_lab.checkpoint.crc32c import crc32c

    index = Path(f"{prefix}.index")
    Path(f"{prefix}.data-00000-of-00001").write_bytes(b"")
    if family.startswith("keys growing"):
        write_coded_index(index, [_growing_keys(57_000 if "344" in family else 97_000)])
    elif family.startswith("long shared"):
        separator, keys = _long_prefix_keys(90_000)
        write_coded_index(index, [(separator, [(0, b"", HEADER), *keys])])
    elif family.startswith("2,600"):
        write_coded_index(index, [(b"\0", [(0, b"", HEADER)])] + [_long_prefix_keys(400, start=400 * b) for b in range(2_600)])
    elif family.startswith("300 blocks"):
        blocks, data = _nested(300, 8_000_000)
        _table(index, blocks, data)
    elif family.startswith("700,000"):
        empty = (0).to_bytes(4, "little") + (1).to_bytes(4, "little")
        trailer = b"\0" + mask(crc32c(empty + b"\0")).to_bytes(4, "little")
        _table(index, [(13 * i, 8) for i in range(700_000)], (empty + trailer) * 700_000, keys=[b""] * 700_000)
    else:
        source = ROOT / "tests" / "fixtures" / "tf_releases" / "albert_tiny"
        for f in source.glob("model.ckpt-best.*"):
            shutil.copy(f, prefix.parent / f.name)
    return index.stat().st_size


def read_one(prefix: str) -> None:
    """In the child: read the index, print seconds, the peak of what Python allocated for it (tracemalloc:
    every bytes object and list; a second read, so the timing runs without it), and what happened."""
    import tracemalloc

    from albert_lab.checkpoint.tf1 import read_bundle
    from albert_lab.errors import CheckpointError

    tracemalloc.start()
    try:
        read_bundle(Path(prefix))
    except CheckpointError:
        pass
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    start = time.perf_counter()
    try:
        bundle = read_bundle(Path(prefix))
        said = f"read: {len(bundle.entries)} entries"
    except CheckpointError as err:
        said = "refused: " + str(err).split(": ", 1)[-1][:90]
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "peak_mib": peak, "said": said}))


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--read":
        return read_one(sys.argv[2])
    print("family | index | seconds | peak allocated | outcome")
    with tempfile.TemporaryDirectory() as tmp:
        for n, family in enumerate(FAMILIES):
            folder = Path(tmp) / str(n)
            folder.mkdir()
            prefix = folder / "model.ckpt-best"
            size = build(family, prefix)
            out = subprocess.run([sys.executable, __file__, "--read", str(prefix)], capture_output=True, text=True, check=True)
            r = json.loads(out.stdout.strip().splitlines()[-1])
            print(f"{family} | {size / 1e6:,.2f} MB | {r['seconds']:.2f} | {r['peak_mib']:,.0f} MiB | {r['said']}", flush=True)


if __name__ == "__main__":
    main()
