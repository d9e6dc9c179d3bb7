"""One visitor's six tabs of heavy work against another visitor's typed pairs, on one server.

A fresh server is started as `albert-lab app` starts it (loopback, headless, a free port). Visitor B
types pairs on Sentence pairs, one every --gap seconds, first alone (the baseline), then while visitor
A, one browser (one owner cookie, app/shell/owner.py) with --tabs tabs, keeps every tab asking for heavy
work, each request new (nothing kept to reuse): gradient flow with a new seed, oscillation on texts of
its own, a Depth lab training with new settings (--heavy chooses the kinds, taken in turn by the tabs).
No browser: both visitors ask over Streamlit's websocket (benchmarks/streamlit_client.py), so a time is
the server's whole answer, from the request to the end of the script run.

Printed: B's typed pair, median, 95th percentile and worst seconds, alone and beside A's tabs; B's own
gradient flow (new seed), alone and beside A's tabs (the heavy lane takes visitors in turn, app/shell/turns.py:
a share of it, not a seventh); A's heavy requests answered per kind, with their median and worst; the errors
the pages showed. The issue's bar: the typed pair's p95 beside six heavy tabs under 10 s.

Bounded: every wait has a timeout and the whole run --timeout seconds; the server is stopped whatever
happens. Loopback only.

Run: .venv/bin/python benchmarks/bench_starvation.py [--tabs 6] [--pairs 20] [--gap 2]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import secrets
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_app import wait_healthy  # noqa: E402
from benchmarks.served import WORDS, machine, p95, start_server, typed_pair  # noqa: E402
from benchmarks.streamlit_client import Session  # noqa: E402

COOKIE = "albert_lab_owner"  # app.shell.owner.COOKIE: one browser's tabs send the same
KINDS = ("gradient_flow", "oscillation", "depth_lab")
TIMEOUT = 900.0  # seconds one request may take before its visitor gives up


def heavy_request(kind: str, n: int) -> tuple[str, dict[str, str]]:
    """The page and link of heavy request `n` of `kind`, new each time (nothing kept to reuse)."""
    if kind == "gradient_flow":
        names = ["albert-sop-minilm", "bert-sop-minilm", "albert-nsp-minilm"]
        return kind, {"ckpt": ",".join(names), "gf_checkpoint": names[n % len(names)], "gf_seed": str(1000 + n)}
    if kind == "oscillation":
        words = itertools.cycle(WORDS[n % len(WORDS):] + WORDS[:n % len(WORDS)])
        texts = ["The " + " ".join(next(words) for _ in range(60)) + f" {n}." for _ in range(16)]
        return kind, {"osc_input": "My text", "osc_text": "\n\n".join(texts)}
    if kind == "depth_lab":
        return kind, {"dl_depth": str(16 + n % 16), "dl_width": "64", "dl_steps": str(1000 + 50 * (n % 20))}
    raise ValueError(f"--heavy: no kind {kind!r}; choose from {', '.join(KINDS)}")


async def heavy_tab(url: str, cookie: str, kind: str, counter: itertools.count, stop: asyncio.Event,
                    done: dict[str, list[float]], errors: list[str]) -> None:
    """One of visitor A's tabs: heavy requests of `kind`, one after the other, until `stop`."""
    async with Session(url, {COOKIE: cookie}) as session:
        while not stop.is_set():
            page, query = heavy_request(kind, next(counter))
            answer = await session.open(page, query, TIMEOUT)
            errors += [f"{kind}: {e}" for e in answer.errors]
            if answer.done is not None:
                done.setdefault(kind, []).append(answer.done - answer.asked)


async def typed_pairs(session: Session, first: int, count: int, gap: float, errors: list[str]) -> list[float]:
    """Visitor B's typed pairs, `gap` seconds apart: the server's answer to each, seconds."""
    seconds = []
    for number in range(first, first + count):
        a, b = typed_pair(number)
        answer = await session.open("sentence_pairs", {"pair_a": a, "pair_b": b}, TIMEOUT, "Preferred order")
        errors += [f"typed pair: {e}" for e in answer.errors]
        if answer.done is not None and answer.shown:
            seconds.append(answer.done - answer.asked)
        elif answer.done is not None:
            errors.append("typed pair: its scores were not shown")
        await asyncio.sleep(gap)
    return seconds


async def own_heavy(session: Session, n: int, errors: list[str]) -> float | None:
    """Visitor B's own gradient flow (new seed `n`): the server's answer, seconds."""
    page, query = heavy_request("gradient_flow", n)
    answer = await session.open(page, query, TIMEOUT)
    errors += [f"B's gradient flow: {e}" for e in answer.errors]
    return None if answer.done is None else answer.done - answer.asked


async def starve(url: str, tabs: int, kinds: list[str], pairs: int, gap: float) -> None:
    errors: list[str] = []
    async with Session(url, {COOKIE: secrets.token_urlsafe(24)}) as b:
        await b.open("sentence_pairs", timeout=TIMEOUT)  # the model code imported and the checkpoints loaded
        alone = await typed_pairs(b, 0, pairs, gap, errors)
        await own_heavy(b, 9_999, errors)  # its checkpoint loaded and torch's backward warmed up
        heavy_alone = await own_heavy(b, 10_000, errors)
        stop, done, counter, cookie = asyncio.Event(), {}, itertools.count(), secrets.token_urlsafe(24)
        heavy = [asyncio.create_task(heavy_tab(url, cookie, kinds[i % len(kinds)], counter, stop, done, errors))
                 for i in range(tabs)]
        await asyncio.sleep(5 * gap)  # every tab asking
        beside = await typed_pairs(b, pairs, pairs, gap, errors)
        heavy_beside = await own_heavy(b, 10_001, errors)
        stop.set()
        for task in heavy:
            task.cancel()
        await asyncio.gather(*heavy, return_exceptions=True)
    print(f"  {'typed pair':34s} {'n':>3s} {'median s':>9s} {'p95 s':>6s} {'worst s':>8s}")
    for what, values in (("alone", alone), (f"beside {tabs} heavy tabs of one visitor", beside)):
        if values:
            print(f"  {what:34s} {len(values):3d} {statistics.median(values):9.2f} {p95(values):6.2f} {max(values):8.2f}")
    if heavy_alone and heavy_beside:
        print(f"  visitor B's own gradient flow: alone {heavy_alone:.1f} s, beside the tabs {heavy_beside:.1f} s "
              f"({heavy_beside / heavy_alone:.1f} times)")
    print("  visitor A's heavy requests answered meanwhile (the tabs' last ones cut short):")
    for kind, values in done.items():
        print(f"    {kind:18s} {len(values):3d}, median {statistics.median(values):.1f} s, worst {max(values):.1f} s")
    print(f"  errors: {len(errors)}")
    for error in errors[:20]:
        print(f"    {error}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tabs", type=int, default=6, help="visitor A's tabs, each asking for heavy work")
    parser.add_argument("--heavy", default=",".join(KINDS), help=f"the kinds of heavy work the tabs take in turn: {KINDS}")
    parser.add_argument("--pairs", type=int, default=20, help="typed pairs visitor B asks for, alone and then beside A")
    parser.add_argument("--gap", type=float, default=2.0, help="seconds between visitor B's typed pairs")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds the whole benchmark may take")
    args = parser.parse_args()
    kinds = [k.strip() for k in args.heavy.split(",") if k.strip()]
    for kind in kinds:
        heavy_request(kind, 0)  # an unknown kind said before the server starts
    print(f"machine: {machine()}; {args.tabs} heavy tabs ({', '.join(kinds)}), {args.pairs} typed pairs {args.gap:g} s apart")
    with tempfile.TemporaryDirectory(prefix="bench-starvation-") as scratch:
        server, url = start_server(Path(scratch) / "runs", Path(scratch) / "trace.jsonl")
        try:
            wait_healthy(url)
            asyncio.run(asyncio.wait_for(starve(url, args.tabs, kinds, args.pairs, args.gap), args.timeout))
        finally:
            server.terminate()
            server.wait(timeout=20)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
