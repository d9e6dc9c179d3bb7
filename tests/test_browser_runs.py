"""Who may cancel a training run, in a real browser: its own browser after a reload; another sees it read-only.

The owner cookie the page sets on a first visit, sent back on a reload, is matched against
the run's owner record."""

import hashlib

import pytest
from conftest import live_run, open_tab


@pytest.mark.browser
def test_a_reload_keeps_the_cancel_button_of_ones_own_run_and_another_browser_sees_it_read_only(server, browser):
    from playwright.sync_api import expect

    cancel, read_only = "Cancel this run", "Started in another browser or from the command line"
    with live_run(server.runs, "mine", seconds=600) as (run, _):
        mine = browser.new_context(viewport={"width": 1400, "height": 1000})
        page = mine.new_page()
        page.goto(f"{server}/training")
        open_tab(page, "Runs")
        expect(page.get_by_text(read_only)).to_be_visible()  # not started here
        page.wait_for_function("document.cookie.includes('albert_lab_owner=')")  # set after the page's first run
        token = next(c["value"] for c in mine.cookies() if c["name"] == "albert_lab_owner")
        # what owner.claim writes when this browser starts a run from the page
        (server.runs / ".owners").mkdir()
        (server.runs / ".owners" / run.name).write_text(hashlib.sha256(token.encode()).hexdigest() + "\n")
        page.reload()
        open_tab(page, "Runs")
        expect(page.get_by_role("button", name=cancel)).to_be_visible()
        expect(page.get_by_text(read_only)).to_have_count(0)

        other = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
        other.goto(f"{server}/training")
        open_tab(other, "Runs")
        expect(other.get_by_text(read_only)).to_be_visible()
        expect(other.get_by_role("button", name=cancel)).to_have_count(0)
