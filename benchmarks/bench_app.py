"""App responsiveness in a real browser (Debian's Chromium via Playwright).

- cold start: from `albert-lab app` to the first page rendered (the model card of the
  first shipped checkpoint, read from its files) - target < 5 s;
- page switch: clicking each page in the navigation until its title is shown and the
  script has finished - target < 1 s with the model cached.

Run: .venv/bin/python benchmarks/bench_app.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-dev-shm-usage",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
PAGES = [("Parameters", "Parameters and compute"), ("Oscillation", "Layer-wise oscillation"),
         ("Gradient flow", "Gradient flow"), ("Sentence pairs", "Sentence pairs: SOP vs NSP"),
         ("Training", "Training"), ("Depth lab", "Depth lab"), ("Model card", "Model card")]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_idle(page) -> None:
    """Until Streamlit's 'running' indicator is gone."""
    page.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=120_000)


def launch(command: list[str]) -> subprocess.Popen:
    return subprocess.Popen([*command, "--server.headless", "true"], cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


def cold_start(p, command: list[str]):
    """(seconds from launch to the rendered model card, server, browser, page)."""
    from playwright.sync_api import expect

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    start = time.perf_counter()
    server = launch([*command, "--port", str(port)])
    browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=FLAGS)
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    while True:
        try:
            urllib.request.urlopen(f"{url}/_stcore/health", timeout=1)
            break
        except OSError:
            time.sleep(0.05)
    page.goto(url)
    expect(page.get_by_role("heading", name="Model card")).to_be_visible(timeout=120_000)
    page.get_by_text("Parameters (paper's count)").wait_for(timeout=120_000)
    wait_idle(page)
    return time.perf_counter() - start, server, browser, page


def stop(server: subprocess.Popen, browser) -> None:
    browser.close()
    server.terminate()
    server.wait(timeout=20)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    from playwright.sync_api import expect, sync_playwright

    command = [sys.executable, "-m", "albert_lab", "app"]
    with sync_playwright() as p:
        cold = []
        for _ in range(2):
            seconds, server, browser, page = cold_start(p, command)
            cold.append(seconds)
            stop(server, browser)
        print(f"cold start to the rendered model card (target < 5 s): best {min(cold):.2f} s, "
              f"runs {', '.join(f'{c:.2f}' for c in cold)}")

        _, server, browser, page = cold_start(p, command)
        try:
            times: dict[str, list[float]] = {name: [] for name, _ in PAGES}
            for _ in range(args.rounds + 1):  # the first round warms the caches and is not counted
                for name, title in PAGES:
                    t0 = time.perf_counter()
                    page.get_by_role("link", name=name, exact=True).click()
                    expect(page.get_by_role("heading", name=title, exact=True)).to_be_visible(timeout=120_000)
                    wait_idle(page)
                    times[name].append(time.perf_counter() - t0)
            print(f"page switch, median of {args.rounds} rounds after a warm-up round (target < 1 s):")
            for name, values in times.items():
                warm = sorted(values[1:])
                print(f"  {name:15s} {warm[len(warm) // 2]:.2f} s   (first visit {values[0]:.2f} s)")
        finally:
            stop(server, browser)


if __name__ == "__main__":
    main()
