"""docs/notebook.ipynb, executed under a real Jupyter kernel (nbclient, ipykernel): no error output, a figure in
every cell tagged 'figure', numbers equal to the command line's `--json` on the same inputs; then exported to
HTML (nbconvert) and opened in Chromium with the network blocked: its charts draw from the plotly.js inside."""

from __future__ import annotations

import io
import json
import os

import numpy as np
import pandas as pd
import pytest
from conftest import ARTIFACTS, ROOT, run_cli

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("notebook")]  # one worker executes it, both tests read it
NOTEBOOK = ROOT / "docs" / "notebook.ipynb"
# Printed by a cell added after the notebook's own: its inputs and numbers, for the command line to redo.
DUMP = """import json as _json
print(_json.dumps({"my_text": my_text, "flow_texts": flow_texts, "pairs": pairs.to_dict(orient="records"),
                   "oscillation": oscillation.frame.to_json(orient="records"), "gradflow": gradflow.frame.to_json(orient="records"),
                   "scores": scores.frame.to_json(orient="records"), "relaxed": relaxed.frame.to_json(orient="records"),
                   "params": {p: c.value.to_dict() for p, c in counts.items()}, "run": run.status}))"""
_EXECUTED: dict[str, object] = {}


@pytest.fixture
def executed(tmp_path_factory):
    """The notebook executed once per session (its runs and caches in a temporary folder)."""
    if "nb" not in _EXECUTED:
        import nbformat
        from nbclient import NotebookClient

        nb = nbformat.read(NOTEBOOK, as_version=4)
        nb.cells.append(nbformat.v4.new_code_cell(DUMP))
        scratch = tmp_path_factory.mktemp("notebook")
        env = {"ALBERT_LAB_RUNS": str(scratch / "runs"), "ALBERT_LAB_CACHE": str(scratch / "cache"),
               "ALBERT_LAB_CHECKPOINTS": str(ROOT / "checkpoints"), "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1",
               "PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
        with pytest.MonkeyPatch.context() as patch:  # the kernel starts with this process's environment
            for name, value in env.items():
                patch.setenv(name, value)
            NotebookClient(nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
        _EXECUTED["nb"] = nb
    return _EXECUTED["nb"]


def outputs(cell) -> list:
    return cell.get("outputs", []) if cell.cell_type == "code" else []


def test_the_notebook_runs_under_a_kernel_draws_its_figures_and_says_the_command_lines_numbers(executed, tmp_path, monkeypatch):
    errors = [o for c in executed.cells for o in outputs(c) if o.output_type == "error"]
    assert not errors, [f"{o.ename}: {o.evalue}" for o in errors]
    tagged = [c for c in executed.cells if "figure" in c.metadata.get("tags", [])]
    assert len(tagged) >= 9
    for cell in tagged:
        html = " ".join(o.get("data", {}).get("text/html", "") for o in outputs(cell))
        assert "Plotly.newPlot" in html or 'class="alhv"' in html, f"no figure under the cell:\n{cell.source}"  # alhv: the head view
    said = json.loads(next(o.text for o in outputs(executed.cells[-1]) if o.output_type == "stream" and o.name == "stdout"))
    assert said["run"] == "succeeded"

    monkeypatch.setenv("ALBERT_LAB_CHECKPOINTS", str(ROOT / "checkpoints"))
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    texts = lambda many: [a for t in many for a in ("--text", t)]
    same(said["oscillation"], cli("oscillation", "--checkpoint", "albert-sop", "--checkpoint", "bert-nsp", *texts([said["my_text"]])))
    same(said["gradflow"], cli("gradflow", "--checkpoint", "albert-sop", *texts(said["flow_texts"])))
    pd.DataFrame(said["pairs"]).to_csv(tmp_path / "pairs.csv", index=False)
    same(said["scores"], cli("score", str(tmp_path / "pairs.csv"), "--checkpoint", "albert-sop", "--checkpoint", "albert-nsp",
                             "--checkpoint", "bert-nsp"))
    same(said["relaxed"], cli("relax", "--checkpoint", "bert-nsp", "--ranks", "0,8,full", "--pairs", "8"))
    for preset, counts in said["params"].items():
        assert counts == json.loads(cli_text("params", "--preset", preset, "--json")), preset
    assert said["params"]["albert-base"]["total"] < said["params"]["bert-base"]["total"] / 8  # the paper's 12M against 108M


def cli_text(*args: str) -> str:
    result = run_cli(*args)  # device auto, as the notebook's
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def cli(*args: str) -> pd.DataFrame:
    return pd.DataFrame(json.loads(cli_text(*args, "--json")))


def same(notebook_json: str, command_line: pd.DataFrame) -> None:
    """Every column both have: numbers equal within float32's rounding of a different run (the same code, another process),
    everything else equal."""
    notebook = pd.read_json(io.StringIO(notebook_json), orient="records")
    assert len(notebook) == len(command_line) > 0
    for column in [c for c in notebook.columns if c in command_line.columns]:
        mine, theirs = notebook[column], command_line[column]
        if pd.api.types.is_numeric_dtype(mine) and pd.api.types.is_numeric_dtype(theirs):
            assert np.allclose(mine.astype(float), theirs.astype(float), rtol=1e-5, atol=1e-7, equal_nan=True), column
        else:
            assert [str(v) for v in mine.fillna("")] == [str(v) for v in theirs.fillna("")], column


def test_the_exported_notebook_draws_its_charts_in_chromium_with_the_network_blocked(executed, browser, tmp_path):
    import nbformat
    from nbconvert import HTMLExporter

    shown = nbformat.from_dict({**executed, "cells": executed.cells[:-1]})  # as a reader has it, without the test's cell
    body, _ = HTMLExporter(template_name="lab").from_notebook_node(shown)
    page_file = tmp_path / "notebook.html"
    page_file.write_text(body, encoding="utf-8")
    figures, views = body.count("Plotly.newPlot"), body.count('class="alhv"')  # views: the head view, drawn by its own script
    asked: list[str] = []

    def only_files(route) -> None:
        if route.request.url.startswith("file://"):
            route.continue_()
        else:
            asked.append(route.request.url)
            route.abort()

    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.route("**/*", only_files)
    page.goto(page_file.as_uri(), wait_until="load")
    page.wait_for_function(f"document.querySelectorAll('.js-plotly-plot svg.main-svg').length >= {figures}")
    page.wait_for_function(f"document.querySelectorAll('.alhv svg path').length > 0 && document.querySelectorAll('.alhv svg').length == {views}")
    drawn = page.evaluate("document.querySelectorAll('.js-plotly-plot').length")
    blank = page.evaluate("[...document.querySelectorAll('[id^=albert-lab-]')].filter(e => !e.querySelector('svg.main-svg')).length")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "notebook-offline.png"), full_page=True)
    page.locator(".js-plotly-plot").first.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "notebook-offline-figure1.png"))
    assert drawn == figures >= 8 and views == 1 and blank == 0
    assert not [u for u in asked if "plot" in u.lower()], asked  # plotly.js came from the page itself
