"""Every page in a real browser opens without a Streamlit exception, a console error, or a request to another host.

The favicon, fonts and plotly are local."""

import time
from urllib.parse import urlparse

import pytest
from conftest import chromium

from app.registry import PAGES, address

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
def test_every_page_opens_cleanly_in_chromium(server):
    from playwright.sync_api import sync_playwright

    start, errors, remote = time.time(), [], []
    with sync_playwright() as p:
        browser = chromium(p)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.on("console", lambda m: errors.append(f"{page.url}: {m.text} ({m.location.get('url')})")
                    if m.type == "error" and not _probe(m.location.get("url", "")) else None)
            page.on("pageerror", lambda e: errors.append(f"{page.url}: {e}"))
            host = urlparse(server).hostname

            def request(r):
                if urlparse(r.url).hostname not in (host, None) and not r.url.startswith(("data:", "blob:")):
                    remote.append(r.url)

            page.on("request", request)
            page.on("response", lambda r: errors.append(f"{r.status} {r.url}") if r.status >= 400 and not _probe(r.url) else None)
            for room in PAGES:
                stem = room.stem
                page.goto(address(server, stem))
                page.wait_for_selector("[data-testid='stApp']", timeout=60_000)
                page.wait_for_timeout(500)  # the script starts
                page.wait_for_function(f"() => !document.querySelector(\"{BUSY}\")", timeout=60_000)
                page.wait_for_selector("h1", timeout=30_000)
                exceptions = page.locator("[data-testid='stException']")
                assert exceptions.count() == 0, f"{stem}: {exceptions.first.inner_text()[:1000]}"
        finally:
            browser.close()
    assert not errors, errors
    assert not remote, remote
    assert time.time() - start < 60
