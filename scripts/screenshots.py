"""Screenshots of every page of the app, in the light and the dark theme:
docs/app-<page>-light.png and docs/app-<page>-dark.png (1400 x 900, the top of each page).

The app's theme follows the browser, so the dark set comes from Chromium's
prefers-color-scheme: dark. Pages are shown as a new user first sees them (the
sidebar's default checkpoints, each page's default controls). Debian's Chromium through
Playwright, as in scripts/make_figures.py and tests/test_ui.py.

A view inside a page (VIEWS) is opened by its link, computed by a click on its button or given a
class's pairs file (class_pairs), and shot with its first figure near the top:
docs/app-<view>-<scheme>.png at 1280 x 800, and docs/app-<view>-phone-<scheme>.png at 390 x 844.
Compare runs shows the runs in runs/ (ALBERT_LAB_RUNS): the docs' two are lab-tiny's, SOP and NSP
(`albert-lab train --preset lab-tiny --objective sop --steps 300 --eval-every 100 --name tiny-sop`).

Run: .venv/bin/python scripts/screenshots.py [--url http://127.0.0.1:8501] [--pages oscillation,training]
     [--views parameters-relaxed] (--pages '' for views only)
     (without --url it starts `albert-lab app` on a free port and stops it afterwards)
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.shell.registry import BY_STEM, address  # noqa: E402

DOCS = ROOT / "docs"
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-dev-shm-usage",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
VIEWPORT = {"width": 1400, "height": 900}
# Streamlit 1.67 with toolbarMode = "minimal" shows no running-status widget; a rerun marks
# the elements it has not redrawn yet as stale, and cached work shows a spinner. The app's element says
# whether its script runs (a page computing between two elements, under load, was shot half drawn).
BUSY = ("() => !document.querySelector('[data-testid=\"stApp\"][data-test-script-state=\"notRunning\"]') "
        "|| !!document.querySelector('[data-stale=\"true\"], [data-testid=\"stSpinner\"], "
        "[data-testid=\"stSkeleton\"], [data-testid=\"stStatusWidget\"]') "
        "|| [...document.querySelectorAll('button')].some(b => /(^|\\s)Stop$/.test(b.innerText.trim()))")
# The last line: a computation's bar, whose Stop button's text follows its icon's name ('stop\nStop'; an exact
# 'Stop' never matched, and the Oscillation screenshot caught the bar).


def wait_drawn(page, timeout_ms: int = 300_000) -> None:
    """Until the page has a title, nothing is stale or spinning, and the plotly charts have drawn."""
    page.wait_for_selector("h1", timeout=timeout_ms)
    page.wait_for_timeout(500)  # the script run starts
    calm = 0
    deadline = time.monotonic() + timeout_ms / 1000
    while calm < 3 and time.monotonic() < deadline:  # three quiet checks in a row
        busy = page.evaluate(BUSY) or page.evaluate(
            "() => [...document.querySelectorAll('[data-testid=\"stPlotlyChart\"]')].some(c => !c.querySelector('.main-svg'))")
        calm = 0 if busy else calm + 1
        page.wait_for_timeout(300)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_app() -> tuple[subprocess.Popen, str]:
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "albert_lab", "app", "--port", str(port), "--server.headless", "true"],
                              cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(1200):
        try:
            urllib.request.urlopen(f"{url}/_stcore/health", timeout=1)
            return server, url
        except OSError:
            time.sleep(0.1)
    server.terminate()
    raise SystemExit("the app did not start within 2 minutes")


def save_png(data: bytes, path: Path) -> None:
    """Optimised PNG (lossless) when Pillow is installed, else as Chromium wrote it."""
    try:
        from PIL import Image
    except ImportError:
        path.write_bytes(data)
        return
    Image.open(io.BytesIO(data)).save(path, optimize=True)


def shoot(browser, url: str, stems: list[str], scheme: str) -> list[Path]:
    context = browser.new_context(viewport=VIEWPORT, color_scheme=scheme)
    page = context.new_page()
    written = []
    try:
        page.goto(url)  # the first visit loads the models; later pages reuse them
        wait_drawn(page)
        for stem in stems:
            page.goto(address(url, stem))  # the default page lives at /
            wait_drawn(page)
            errors = page.locator("[data-testid='stException']")
            if errors.count():
                print(f"warning: {stem} ({scheme}) shows an exception: {errors.first.inner_text()[:300]}")
            written.append(shot(page, DOCS / f"app-{BY_STEM[stem].image}-{scheme}.png"))
    finally:
        context.close()
    return written


def shot(page, path: Path) -> Path:
    """The page as it is now, saved at `path` (said on the way)."""
    save_png(page.screenshot(), path)
    print(f"wrote {path.relative_to(ROOT)} ({path.stat().st_size / 1024:.0f} KB)", flush=True)
    return path


@dataclass(frozen=True)
class View:
    stem: str  # the page
    scroll: str  # the text scrolled to the top, just before the figure
    link: dict[str, str] = field(default_factory=dict)
    button: str | None = None  # the button that computes it
    upload: bool = False  # a class's pairs file uploaded first (class_pairs)


# bert-nsp: the shipped BERT whose curve is quickest
VIEWS = {"parameters-relaxed": View("parameters", "Parameters as", {
             "params_tab": "On real weights", "calc_real_view": "relaxed", "calc_relax_source": "bert-nsp",
             "calc_relax_ranks": "0,4,16,64,full"}, button="Compute the curve"),
         # the after-uptraining curve of the sweep docs/results.md made (albert-lab relax ... --run-id sweep-bert-nsp)
         "parameters-uptrained": View("parameters", "Parameters as", {
             "params_tab": "On real weights", "calc_real_view": "relaxed", "calc_relax_source": "bert-nsp",
             "calc_relax_ranks": "0,4,16,64", "calc_relax_sweep": "sweep-bert-nsp"}),
         "training-compare": View("training", "Metrics", {"tr_tab": "Compare runs", "metric": "loss,pair_acc"}),
         "sentence-pairs-slices": View("sentence_pairs", "Slices", {"pair_tab": "Upload pairs", "pair_slice": "student"},
                                       upload=True)}
VIEW_SIZES = {"": {"width": 1280, "height": 800}, "-phone": {"width": 390, "height": 844}}
STUDENTS = ("ann", "bob", "eve", "joe")


def class_pairs(folder: Path) -> Path:
    """A class's pairs file: consecutive sentences of the built-in held-out texts, every third pair swapped
    (label 1), each written by one of four students (the file's own column, a slice)."""
    import pandas as pd

    from albert_lab.data.samples import sample_texts

    pairs = []
    for text in sample_texts(64):  # a pair's two sentences follow each other in one text
        sentences = [s.strip().rstrip(".") + "." for s in text.split(". ")]
        pairs += [(a, b) for a, b in zip(sentences[:-1:2], sentences[1::2]) if max(len(a), len(b)) < 160]
    rows = [(b, a, 1) if i % 3 == 2 else (a, b, 0) for i, (a, b) in enumerate(pairs[:24])]
    frame = pd.DataFrame(rows, columns=["sentence_a", "sentence_b", "label"])
    path = folder / "class-pairs.csv"
    frame.assign(student=[STUDENTS[i % len(STUDENTS)] for i in range(len(frame))]).to_csv(path, index=False)
    return path


def shoot_view(browser, url: str, name: str, scheme: str) -> list[Path]:
    """The view at each of VIEW_SIZES, its first figure scrolled to the top (the computation is kept
    by the server after the first click or upload: the others draw it at once)."""
    from urllib.parse import urlencode

    view = VIEWS[name]
    written = []
    for suffix, viewport in VIEW_SIZES.items():
        context = browser.new_context(viewport=viewport, color_scheme=scheme)
        page = context.new_page()
        try:
            page.goto(f"{address(url, view.stem)}?{urlencode(view.link)}")
            wait_drawn(page)
            if view.button:
                page.get_by_role("button", name=view.button).click()
            if view.upload:
                with tempfile.TemporaryDirectory() as folder:
                    page.locator("input[type=file]").first.set_input_files(str(class_pairs(Path(folder))))
                    page.wait_for_timeout(1000)  # the upload reaches the server before its file is removed
            page.mouse.move(0, viewport["height"] - 1)  # away from the button: its tooltip is no part of the view
            wait_drawn(page)
            page.get_by_text(view.scroll, exact=True).first.evaluate("e => e.scrollIntoView()")  # just before the figure
            page.wait_for_timeout(800)
            written.append(shot(page, DOCS / f"app-{name}{suffix}-{scheme}.png"))
        finally:
            context.close()
    return written


def main(argv: list[str] | None = None) -> list[Path]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="a running app (default: start one)")
    parser.add_argument("--pages", default=",".join(BY_STEM), help="comma-separated page stems")
    parser.add_argument("--views", default=",".join(VIEWS), help="comma-separated views inside pages")
    parser.add_argument("--themes", default="light,dark")
    args = parser.parse_args(argv)
    stems, views = [s for s in args.pages.split(",") if s], [v for v in args.views.split(",") if v]
    unknown = sorted(set(stems) - set(BY_STEM)) + sorted(set(views) - set(VIEWS))
    if unknown:
        parser.error(f"unknown pages or views {unknown}; choose from {list(BY_STEM)} and {list(VIEWS)}")
    from playwright.sync_api import sync_playwright

    DOCS.mkdir(exist_ok=True)
    server, url = (None, args.url.rstrip("/")) if args.url else start_app()
    written = []
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=shutil.which("chromium") or "/usr/bin/chromium", args=FLAGS)
            try:
                for scheme in args.themes.split(","):
                    written += shoot(browser, url, stems, scheme) if stems else []
                    for name in views:
                        written += shoot_view(browser, url, name, scheme)
            finally:
                browser.close()
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=20)
    return written


if __name__ == "__main__":
    main()
