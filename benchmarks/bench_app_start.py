"""`scripts/app.sh` on an installed machine: seconds from the command to the first page drawn
in Chromium (the model card: its title, its SVG chart, nothing stale or spinning), and where
they go: the script's install checks (`_venv.sh`: the venv's stamp, `corpora --install` with
nothing to do), the server until it answers, and the page.

Each round starts the script afresh (a new server on a free port from 8600), opens the page as
soon as the server listens, and stops the server; rounds alternate between the checkouts given
(interleaved), so a busy machine slows each alike. The load average is printed beside.

Run: .venv/bin/python benchmarks/bench_app_start.py [--rounds 3] [--then oscillation] [--tree . --tree /path/to/other/checkout]
     (each checkout needs its own installed .venv; Debian's chromium, as tests/test_ui.py)
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_app import CHART, SVG, drawn_at  # noqa: E402  a page drawn: its title, its chart, nothing stale

from app.shell.registry import DEFAULT, room  # noqa: E402

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
         "--disable-sync"]


def free_port(start: int = 8600) -> int:
    for port in range(start, start + 100):
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
                return port
            except OSError:
                continue
    raise SystemExit("no free port from 8600 on")


def one_start(browser, tree: Path, then: str | None = None) -> dict[str, float]:
    """Seconds from `scripts/app.sh` to: the server answering its health check, the first page drawn,
    and (`then`) another page clicked as soon as the first is drawn, drawn in its turn."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    log = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115  the server's messages, read if it ends early; closed below
    start = time.perf_counter()
    server = subprocess.Popen([str(tree / "scripts" / "app.sh"), "--server.port", str(port), "--server.headless", "true"],
                              cwd=tree, env={**os.environ, "PYTHONPATH": str(tree)}, stdout=log, stderr=log,
                              start_new_session=True)
    try:
        stages = {}
        while True:
            if server.poll() is not None:
                log.seek(0)
                raise SystemExit(f"{tree}: app.sh ended with {server.returncode}: {log.read()[-2000:]}")
            try:
                urllib.request.urlopen(f"{url}/_stcore/health", timeout=1)
                break
            except OSError:
                time.sleep(0.05)
        stages["server answers"] = time.perf_counter() - start
        page.goto(url)
        stages["first page drawn"] = drawn_at(page, room(DEFAULT).heading, SVG, settle=0.5) - start
        if then:  # a reader who goes on at once: the first page that computes with a model
            page.get_by_role("link", name=room(then).title, exact=True).click()
            stages[f"then {then} drawn"] = drawn_at(page, room(then).heading, CHART, settle=0.5) - start
        return stages
    finally:
        context.close()
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
        log.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tree", action="append", type=Path, help="checkouts to compare (default: this one)")
    parser.add_argument("--then", default="oscillation", help="a page clicked once the first is drawn ('' for none)")
    args = parser.parse_args()
    trees = [t.resolve() for t in (args.tree or [ROOT])]
    from playwright.sync_api import sync_playwright

    results: dict[Path, list[dict[str, float]]] = {t: [] for t in trees}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=FLAGS)
        try:
            for tree in trees:  # a first start not counted: files into the page cache, a tokenizer made at install
                one_start(browser, tree)
            for round_ in range(args.rounds):
                for tree in trees:
                    load = os.getloadavg()[0]
                    stages = one_start(browser, tree, args.then or None)
                    results[tree].append(stages)
                    said = ", ".join(f"{k} {v:.1f} s" for k, v in stages.items())
                    print(f"round {round_ + 1}, {tree}: {said} (load {load:.1f} before)", flush=True)
        finally:
            browser.close()
    for tree, rounds in results.items():
        for stage in rounds[0]:
            values = [r[stage] for r in rounds]
            print(f"{tree}: {stage}: median {statistics.median(values):.1f} s [{min(values):.1f}-{max(values):.1f}]")


if __name__ == "__main__":
    main()
