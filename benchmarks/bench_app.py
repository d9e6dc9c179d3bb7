"""App responsiveness in a real browser (Debian's Chromium via Playwright), in one run:

- cold start: from `albert-lab app` to the rendered model card (server start included);
- first visit of every page: from the click in the navigation (for the model card, from
  opening the URL on the started server) to the page drawn - target < 3 s;
- warm switch to every page: the same click once every page has been visited, median of
  --rounds rounds - target < 1 s.

"Drawn" means: the page's title is shown, its main element is visible, no element is
stale (Streamlit greys what a rerun has not redrawn yet), no spinner or skeleton is left,
and every plotly chart has drawn its SVG, all holding for --settle seconds; the time is
taken when that calm began. (With toolbarMode = "minimal" Streamlit shows no running
widget, so waiting for [data-testid=stStatusWidget] to go away waits for nothing.)

Then --cold more fresh servers, each opened once on the model card, interleaved with as
many of a floor: a bare Streamlit page with the same title and one plotly chart
(benchmarks/floor_app.py), what this machine gives any page of plotly on Streamlit, and of
the card's own elements filled with constants (benchmarks/floor_elements_app.py), which
splits the card's time into the browser's work and our Python's.

Run: .venv/bin/python benchmarks/bench_app.py [--rounds 3] [--settle 0.4] [--cold 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.shell import registry  # noqa: E402

FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-dev-shm-usage",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
FIRST_VISIT_TARGET, SWITCH_TARGET = 3.0, 1.0
CHART = "[data-testid='stPlotlyChart'] .main-svg"
SVG = "[data-testid='stMarkdown'] svg[role=img]"  # a chart drawn on the server (app/rooms/model_card/svg.py)
# The page's main element (CSS), by page; navigation links and titles come from the registry.
MAIN_ELEMENT = {"model_card": SVG, "training": "[data-testid='stFormSubmitButton'] button"}
PAGES = [(room.title, room.heading, MAIN_ELEMENT.get(room.stem, CHART)) for room in registry.PAGES]
STATE = """([title, main]) => {
  const h1 = document.querySelector('h1');
  if (!h1 || h1.innerText.trim() !== title) return 'title';
  if (document.querySelector('[data-stale="true"], [data-testid="stSpinner"], [data-testid="stSkeleton"]')) return 'busy';
  // any one shown: the first may sit in a tab not open (Sentence pairs' typed-pair chart, once the upload tab is)
  if (![...document.querySelectorAll(main)].some(el => el.getClientRects().length)) return 'main';
  if ([...document.querySelectorAll('[data-testid="stPlotlyChart"]')].some(c => !c.querySelector('.main-svg'))) return 'charts';
  if (document.querySelector('[data-testid="stException"]')) return 'exception';
  return 'drawn';
}"""


def drawn_at(page, title: str, main: str, settle: float, timeout: float = 300.0) -> float:
    """perf_counter() time at which the page became drawn and stayed so for `settle` s."""
    calm_since, deadline = None, time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        state = page.evaluate(STATE, [title, main])
        now = time.perf_counter()
        if state == "exception":
            raise SystemExit(f"{title}: the page shows an exception")
        if state == "drawn":
            calm_since = calm_since or now
            if now - calm_since >= settle:
                return calm_since
        else:
            calm_since = None
        page.wait_for_timeout(25)
    raise SystemExit(f"{title}: not drawn within {timeout:.0f} s (last state: {state})")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(command: list[str]) -> tuple[subprocess.Popen, str]:
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", *command, "--server.port", str(port), "--server.headless", "true"],
                              cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return server, f"http://127.0.0.1:{port}"


def wait_healthy(url: str) -> None:
    while True:
        try:
            urllib.request.urlopen(f"{url}/_stcore/health", timeout=1)
            return
        except OSError:
            time.sleep(0.05)


def stop(server: subprocess.Popen) -> None:
    server.terminate()
    server.wait(timeout=20)


def cold_first_visit(browser, command: list[str], settle: float, main: str = SVG) -> float:
    """Seconds from opening the URL of a just-started server (healthy) to the drawn model card."""
    server, url = start_server(command)
    try:
        wait_healthy(url)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        start = time.perf_counter()
        page.goto(url)
        seconds = drawn_at(page, "Model card", main, settle) - start
        page.close()
        return seconds
    finally:
        stop(server)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="warm rounds over every page (median reported)")
    parser.add_argument("--settle", type=float, default=0.4, help="seconds a page must stay drawn")
    parser.add_argument("--cold", type=int, default=3,
                        help="extra cold starts of the workbench, interleaved with the one-chart floor page")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    start = time.perf_counter()
    server, url = start_server(["albert_lab", "app"])
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=shutil.which("chromium") or "/usr/bin/chromium", args=FLAGS)
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            wait_healthy(url)
            up = time.perf_counter()
            page.goto(url)
            _, title, main_el = PAGES[0]
            done = drawn_at(page, title, main_el, args.settle)
            print(f"cold start, `albert-lab app` to the drawn model card: {done - start:.2f} s "
                  f"(server up in {up - start:.2f} s)")
            first = {PAGES[0][0]: done - up}
            for link, title, main_el in PAGES[1:]:
                t0 = time.perf_counter()
                page.get_by_role("link", name=link, exact=True).click()
                first[link] = drawn_at(page, title, main_el, args.settle) - t0
            warm: dict[str, list[float]] = {link: [] for link, _, _ in PAGES}
            for _ in range(args.rounds):
                for link, title, main_el in PAGES[1:] + PAGES[:1]:  # from the last page visited on
                    t0 = time.perf_counter()
                    page.get_by_role("link", name=link, exact=True).click()
                    warm[link].append(drawn_at(page, title, main_el, args.settle) - t0)
            page.close()
            stop(server)
            # The card's first visit on more fresh servers, A B A B with the floor: the same
            # title and one plotly chart on a bare Streamlit page (benchmarks/floor_app.py).
            # Between them, the card's elements filled with constants (benchmarks/floor_elements_app.py).
            cards, floors, elements = [first[PAGES[0][0]]], [], []
            for _ in range(args.cold):
                floors.append(cold_first_visit(browser, ["streamlit", "run", "benchmarks/floor_app.py"], args.settle, CHART))
                elements.append(cold_first_visit(browser, ["streamlit", "run", "benchmarks/floor_elements_app.py"],
                                                 args.settle))
                cards.append(cold_first_visit(browser, ["albert_lab", "app"], args.settle))
            browser.close()
    finally:
        if server.poll() is None:
            stop(server)

    print(f"\n{'page':30s} {'first visit':>12s} {'warm switch':>12s}   (targets: first < {FIRST_VISIT_TARGET:g} s, "
          f"warm < {SWITCH_TARGET:g} s; warm = median of {args.rounds})")
    for link, _, _ in PAGES:
        f, w = first[link], statistics.median(warm[link])
        mark = lambda value, target: f"{value:7.2f} s {'ok  ' if value < target else 'SLOW'}"
        print(f"{link:30s} {mark(f, FIRST_VISIT_TARGET)} {mark(w, SWITCH_TARGET)}   "
              f"(warm runs {', '.join(f'{v:.2f}' for v in warm[link])})")
    print("(model card: first visit from opening the URL on the started server; the others from the click)")
    if floors:
        print(f"\nfirst visit on a just-started server, interleaved (median [min-max] over servers):\n"
              f"  the model card ({len(cards)} servers)                       {spread(cards)} s\n"
              f"  the card's elements, constants only ({len(elements)} servers)  {spread(elements)} s   "
              f"(benchmarks/floor_elements_app.py: no torch, no checkpoint)\n"
              f"  floor: a title and one plotly chart ({len(floors)} servers)  {spread(floors)} s   "
              f"(benchmarks/floor_app.py on bare Streamlit)")


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} [{min(values):.2f}-{max(values):.2f}]"


if __name__ == "__main__":
    main()
