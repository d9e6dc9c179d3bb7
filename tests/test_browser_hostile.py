"""A hostile visitor's text in a real browser: a link's run filter that would backtrack for ever,
and markdown or HTML in a link, a run name, an uploaded file's name, columns and cells. Each is
drawn as text; no pattern runs unbounded; nothing is fetched from another host."""

import json
import threading
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import quote

import pytest
from conftest import CEILING, live_run

# Bounds of a failure, not a pace: with Python's re the server answered nothing for minutes (never, on a long name).
# Quiet, the health check takes milliseconds and the other page 2-5 s; these leave a loaded CI machine room.


class Listener(ThreadingHTTPServer):
    """A local HTTP server that records every request that reaches it (none should)."""

    def __init__(self):
        self.requests: list[str] = []
        listener = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                listener.requests.append(self.path)
                self.send_response(404)
                self.end_headers()

            def log_message(self, *args):
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


def hostile(url: str) -> str:
    """Markdown and HTML that would fetch from `url`, link to it or run script, if drawn as markup."""
    return (f"zzz![x]({url}/image.png) [c](javascript:alert(1)) [d]({url}/link) <img src={url}/tag.png "
            f"onerror=alert(1)> </script> {url}/bare")


def no_markup_drawn(page, listener: Listener) -> None:
    """Nothing reached `listener`, and no link or image in the page points there or runs script."""
    hrefs = page.eval_on_selector_all("a[href]", "els => els.map(e => e.getAttribute('href'))")
    sources = page.eval_on_selector_all("img[src]", "els => els.map(e => e.getAttribute('src'))")
    bad = page.eval_on_selector_all(f"a[href*='{listener.url}']", "els => els.map(e => e.closest('[data-testid]').outerHTML.slice(0, 600))")
    assert not [h for h in hrefs if h.lower().startswith("javascript") or listener.url in h], bad
    assert not [s for s in sources if listener.url in s], sources
    assert listener.requests == []


def name_run(run, name: str) -> None:
    state = json.loads((run / "run.json").read_text())
    state["config"]["name"] = state["name"] = name
    (run / "run.json").write_text(json.dumps(state))


@pytest.mark.browser
@pytest.mark.parametrize("pattern", ["(.*.*)*#", "(a+)+$"])
def test_a_backtracking_filter_in_a_link_leaves_the_server_answering(server, browser, pattern):
    """Python's re took minutes (for ever, with the GIL held) on these against a long run name;
    the filter's page says no run matches, and the server answered everyone meanwhile."""
    from playwright.sync_api import expect

    with live_run(server.runs, "run") as (run, _):
        name_run(run, "a" * 60 + "!")
        hostile_page = browser.new_context().new_page()
        hostile_page.goto(f"{server}/training?tr_tab=Compare+runs&tr_compare_filter={quote(pattern)}", wait_until="commit")
        expect(hostile_page.get_by_text("Filter runs")).to_be_visible()  # the script reached it
        # the old filter held the GIL for good: no answer ever came (none within 200 s), so the ceiling tells them apart
        assert urllib.request.urlopen(f"{server}/_stcore/health", timeout=CEILING).read() == b"ok"
        other = browser.new_context().new_page()
        other.goto(f"{server}/parameters")
        expect(other.get_by_role("heading", name="Parameters")).to_be_visible()
        expect(hostile_page.get_by_text("No run's id or name holds")).to_be_visible()


@pytest.mark.browser
def test_markdown_and_html_from_a_link_a_run_and_an_upload_are_drawn_as_text(server, browser, tmp_path):
    from playwright.sync_api import expect

    listener = Listener()
    evil = hostile(listener.url)
    pairs = tmp_path / "pairs.csv"
    cell = evil.replace(",", " ")
    pairs.write_text(f"sentence_a,sentence_b,label,\"{cell}\"\n"
                     f"The Nile is a river in Africa.,It flows north into the sea.,0,{cell}\n"
                     f"It flows north into the sea.,The Nile is a river in Africa.,1,other\n"
                     f"A third sentence here.,{cell},{cell},other\n")
    try:
        with live_run(server.runs, "hostile") as (run, _):
            name_run(run, evil)
            page = browser.new_page(viewport={"width": 1400, "height": 1100})
            page.goto(f"{server}/training?tr_tab=Compare+runs&tr_compare_filter={quote(evil)}")
            expect(page.get_by_text("No run's id or name holds")).to_be_visible()
            page.goto(f"{server}/training")
            expect(page.locator("strong", has_text="onerror=alert(1)").first).to_be_attached()  # its name
            no_markup_drawn(page, listener)

            page.goto(f"{server}/sentence_pairs?pair_tab=Upload+pairs")  # the tab from the link: no click to miss
            expect(page.get_by_role("tab", name="Upload pairs", selected=True)).to_be_visible()
            page.locator("input[type=file]").first.set_input_files(
                {"name": "[f](javascript:alert(1)).csv", "mimeType": "text/csv", "buffer": pairs.read_bytes()})
            expect(page.get_by_text("3 pairs scored from [f](javascript:alert(1)).csv")).to_be_visible()
            expect(page.get_by_text("row 4: label").first).to_be_visible()  # the label cell's problem
            box = page.get_by_role("combobox", name="Slice the pairs by")
            box.click()
            box.fill("zzz")  # the options filtered to the file's hostile column
            expect(page.get_by_role("option", name="your column")).to_have_count(1)
            page.keyboard.press("Enter")
            expect(page.get_by_text(f"By {evil[:12]}").first).to_be_visible()
            no_markup_drawn(page, listener)
    finally:
        listener.shutdown()
