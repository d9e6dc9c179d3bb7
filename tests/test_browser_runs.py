"""Who may cancel a training run, in a real browser: its own browser after a reload; another sees it read-only.

The owner cookie the page sets on a first visit, sent back on a reload, is matched against
the run's owner record."""

import hashlib
import json
import shutil
import subprocess
import sys
import time

import pytest
from conftest import CHROMIUM_FLAGS


@pytest.mark.browser
def test_a_reload_keeps_the_cancel_button_of_ones_own_run_and_another_browser_sees_it_read_only(server, tmp_path):
    from playwright.sync_api import expect, sync_playwright

    worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(180)", "albert_lab"])  # a live 'run'
    run = tmp_path / "runs" / "20261125-000000-mine"
    run.mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({
        "id": run.name, "status": "running", "created": time.time(), "pid": worker.pid, "heartbeat": time.time(),
        "step": 1, "total_steps": 100, "config": {"objective": "sop", "name": "mine", "max_steps": 100},
        "spec_label": "ALBERT tiny", "message": ""}))
    cancel, read_only = "Cancel this run", "Started in another browser or from the command line"
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=shutil.which("chromium") or shutil.which("chromium-browser"),
                                        args=CHROMIUM_FLAGS, headless=True)
            try:
                mine = browser.new_context(viewport={"width": 1400, "height": 1000})
                page = mine.new_page()
                page.goto(f"{server}/training")
                page.get_by_role("tab", name="Runs", exact=True).click()
                expect(page.get_by_text(read_only)).to_be_visible(timeout=90_000)  # not started here
                page.wait_for_function("document.cookie.includes('albert_lab_owner=')", timeout=30_000)
                token = next(c["value"] for c in mine.cookies() if c["name"] == "albert_lab_owner")
                # what owner.claim writes when this browser starts a run from the page
                (tmp_path / "runs" / ".owners").mkdir()
                (tmp_path / "runs" / ".owners" / run.name).write_text(hashlib.sha256(token.encode()).hexdigest() + "\n")
                page.reload()
                page.get_by_role("tab", name="Runs", exact=True).click()
                expect(page.get_by_role("button", name=cancel)).to_be_visible(timeout=60_000)
                expect(page.get_by_text(read_only)).to_have_count(0)

                other = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
                other.goto(f"{server}/training")
                other.get_by_role("tab", name="Runs", exact=True).click()
                expect(other.get_by_text(read_only)).to_be_visible(timeout=60_000)
                expect(other.get_by_role("button", name=cancel)).to_have_count(0)
            finally:
                browser.close()
    finally:
        worker.kill()
        worker.wait()
