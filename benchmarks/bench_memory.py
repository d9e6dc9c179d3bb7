"""The server's memory over many page loads: does it grow with every visit, or only until its caches are full?

A fresh server is started as `albert-lab app` starts it (loopback, headless, a free port). Visitors
without a browser (benchmarks/streamlit_client.py, over Streamlit's websocket) walk every page of
app/shell/registry.py in turn, each walk a new visitor (a new session, as a new tab or a reload
makes): first --warmup walks (the model code imported, the pages' results and figures computed and
kept), then --loads page loads more. The server's resident memory (RSS of its process and its
children) is read after the warm-up, after each walk, and at the end, each time once the server has
been idle for --settle seconds.

Printed: RSS after the warm-up and after the loads, the growth (the issue's bar: under 10%), the RSS
after each walk (a leak grows with every walk; a cache grows and then stays), and the errors the pages
showed. Streamlit keeps a closed tab's session for reconnection (at most 128 of them, for
`server.disconnectedSessionTTL`, 120 s): --ttl-wait also reads the RSS once those have expired.

Run: .venv/bin/python benchmarks/bench_memory.py [--loads 200] [--warmup 2]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.shell import registry  # noqa: E402
from benchmarks.bench_app import wait_healthy  # noqa: E402
from benchmarks.served import machine, start_server, tree_rss  # noqa: E402
from benchmarks.streamlit_client import Session  # noqa: E402

TIMEOUT = 300.0  # seconds one page may take before the walk gives up
MIB = 2**20


async def walk(url: str, pages: list[registry.Room], errors: list[str]) -> None:
    """One new visitor opening `pages` in turn."""
    async with Session(url) as session:
        for room in pages:
            answer = await session.open(room.url_path, timeout=TIMEOUT, text=room.heading)
            errors += [f"{room.stem}: {e}" for e in answer.errors]
            if answer.done is None:
                errors.append(f"{room.stem}: no answer")
            elif not answer.shown:
                errors.append(f"{room.stem}: its heading was not shown")


def settled_rss(pid: int, settle: float) -> int:
    time.sleep(settle)
    return tree_rss(pid)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loads", type=int, default=200, help="page loads after the warm-up")
    parser.add_argument("--warmup", type=int, default=2, help="walks over every page before the first reading")
    parser.add_argument("--settle", type=float, default=3.0, help="seconds the server is left idle before a reading")
    parser.add_argument("--ttl-wait", action="store_true",
                        help="read the RSS once more after Streamlit's disconnected sessions expired (125 s more)")
    args = parser.parse_args()
    pages = list(registry.PAGES)
    walks, extra = divmod(args.loads, len(pages))
    print(f"machine: {machine()}; {args.warmup} warm-up walks, then {args.loads} page loads "
          f"({walks} walks of {len(pages)} pages{f' and {extra} pages' if extra else ''}), each walk a new visitor")
    errors: list[str] = []
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as scratch:
        server, url = start_server(Path(scratch) / "runs", Path(scratch) / "trace.jsonl")
        try:
            wait_healthy(url)
            started = tree_rss(server.pid)
            for _ in range(args.warmup):
                asyncio.run(walk(url, pages, errors))
            warm = settled_rss(server.pid, args.settle)
            trend, begun = [], time.perf_counter()
            for i in range(walks + bool(extra)):
                asyncio.run(walk(url, pages if i < walks else pages[:extra], errors))
                trend.append(settled_rss(server.pid, args.settle if i == walks + bool(extra) - 1 else 0.5))
            loaded = trend[-1]
            took = time.perf_counter() - begun
            expired = settled_rss(server.pid, 125.0) if args.ttl_wait else None
        finally:
            server.terminate()
            server.wait(timeout=20)
    print(f"  RSS at start {started / MIB:,.0f} MiB; after the warm-up {warm / MIB:,.0f} MiB; after {args.loads} loads "
          f"({took:.0f} s) {loaded / MIB:,.0f} MiB: growth {loaded / warm - 1:+.1%} ({(loaded - warm) / MIB:+,.0f} MiB)")
    if expired is not None:
        print(f"  after the closed sessions expired: {expired / MIB:,.0f} MiB ({expired / warm - 1:+.1%} on the warm-up)")
    print("  RSS after each walk, MiB: " + ", ".join(f"{r / MIB:,.0f}" for r in trend))
    print(f"  errors: {len(errors)}")
    for error in errors[:20]:
        print(f"    {error}")


if __name__ == "__main__":
    main()
