"""Every page in a real browser opens without a Streamlit exception, a console error, or a request to another host.

The favicon, fonts and plotly are local."""

import time
from urllib.parse import urlparse

import pytest
from conftest import chromium

from app.shell.registry import PAGES, address

# Streamlit shows no running widget with toolbarMode = "minimal": a rerun marks what it has not
# redrawn yet as stale, and cached work shows a spinner.
BUSY = "[data-stale='true'], [data-testid='stSpinner'], [data-testid='stSkeleton']"


def _probe(url: str) -> bool:
    """Opened at /<page>, Streamlit's frontend first asks /<page>/_stcore/... (is the app
    served under a path prefix?) and gets a 404 before it uses /_stcore/: not an error."""
    path = urlparse(url).path
    return "/_stcore/" in path and not path.startswith("/_stcore/")


@pytest.mark.browser
@pytest.mark.slow
def test_every_page_opens_cleanly_in_chromium(shipped, tmp_path):
    """Started Streamlit's way (`streamlit run app/main.py`: the model code imports in a
    background thread after the first page), the landing page opens, then every other page
    at once, each in a tab of its own, while that import runs: each draws its title with no
    exception (Sentence pairs showed "cannot import name 'AlbertConfig' from 'transformers'"
    when its script imported transformers beside the warm-up thread), no console error and
    no request to another host."""
    from conftest import serve
    from playwright.sync_api import sync_playwright

    errors, remote = [], []
    with serve(shipped, tmp_path / "runs", streamlit_run=True) as server, sync_playwright() as p:
        host = urlparse(server).hostname

        def watched(page):
            page.on("console", lambda m: errors.append(f"{page.url}: {m.text} ({m.location.get('url')})")
                    if m.type == "error" and not _probe(m.location.get("url", "")) else None)
            page.on("pageerror", lambda e: errors.append(f"{page.url}: {e}"))
            page.on("request", lambda r: remote.append(r.url) if urlparse(r.url).hostname not in (host, None)
                    and not r.url.startswith(("data:", "blob:")) else None)
            page.on("response", lambda r: errors.append(f"{r.status} {r.url}") if r.status >= 400 and not _probe(r.url)
                    else None)
            return page

        browser = chromium(p)
        try:
            context = browser.new_context(viewport={"width": 1400, "height": 1000})
            start = time.time()
            first = watched(context.new_page())
            first.goto(address(server, PAGES[0].stem))
            first.wait_for_selector("h1", timeout=90_000)
            tabs = {room.stem: watched(context.new_page()) for room in PAGES[1:]}  # the warm-up starts a second after the first
            for stem, tab in tabs.items():
                tab.goto(address(server, stem), wait_until="commit")
            for stem, tab in {PAGES[0].stem: first, **tabs}.items():
                tab.wait_for_selector("[data-testid='stApp']", timeout=60_000)
                tab.wait_for_timeout(500)  # the script starts
                tab.wait_for_function(f"() => !document.querySelector(\"{BUSY}\")", timeout=90_000)
                tab.wait_for_selector("h1", timeout=30_000)
                exceptions = tab.locator("[data-testid='stException']")
                assert exceptions.count() == 0, f"{stem}: {exceptions.first.inner_text()[:1000]}"
                text = tab.locator("[data-testid='stMain']").inner_text()
                assert "Something went wrong" not in text and "ImportError" not in text, f"{stem}: {text[:1000]}"
            took = time.time() - start
        finally:
            browser.close()
    assert not errors, errors
    assert not remote, remote
    assert took < 60, took
