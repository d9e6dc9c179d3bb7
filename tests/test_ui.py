"""Every page in a real browser opens without a Streamlit exception, a console error, or a request to another host.

The favicon, fonts and plotly are local."""

from urllib.parse import urlparse

import pytest
from conftest import settled

from app.shell.registry import PAGES, address


def _probe(url: str) -> bool:
    """Opened at /<page>, Streamlit's frontend first asks /<page>/_stcore/... (is the app
    served under a path prefix?) and gets a 404 before it uses /_stcore/: not an error."""
    path = urlparse(url).path
    return "/_stcore/" in path and not path.startswith("/_stcore/")


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.fresh_server
def test_every_page_opens_cleanly_in_chromium(server, browser):
    """The served app before any page has been opened (conftest runs this test first: the model code
    imports in a background thread a second after the first page): the landing page opens, then every
    other page at once, each in a tab of its own, while that import runs: each draws its title with no
    exception (Sentence pairs showed "cannot import name 'AlbertConfig' from 'transformers'" when its
    script imported transformers beside the warm-up thread), no console error and no request to another
    host."""
    assert server.script_runs() == 0, "a page was opened before: the warm-up may be over (run this test first)"
    errors, remote = [], []
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

    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    first = watched(context.new_page())
    first.goto(address(server, PAGES[0].stem))
    first.wait_for_selector("h1")
    tabs = {room.stem: watched(context.new_page()) for room in PAGES[1:]}  # the warm-up starts a second after the first
    for stem, tab in tabs.items():
        tab.goto(address(server, stem), wait_until="commit")
    for stem, tab in {PAGES[0].stem: first, **tabs}.items():
        tab.wait_for_selector("h1")  # drawn by the page's script
        settled(tab)  # and the script has run to its end
        exceptions = tab.locator("[data-testid='stException']")
        assert exceptions.count() == 0, f"{stem}: {exceptions.first.inner_text()[:1000]}"
        text = tab.locator("[data-testid='stMain']").inner_text()
        assert "Something went wrong" not in text and "ImportError" not in text, f"{stem}: {text[:1000]}"
    assert not errors, errors
    assert not remote, remote
