"""Every CSV the app offers is safe to open in a spreadsheet (issue 67, F5): text a visitor gave that a
spreadsheet would run as a formula starts with ', numbers stay numbers; one writer does it for all."""

import ast
import csv
import io
import re

import pandas as pd
from conftest import ROOT, goto

HOSTILE_CELL = '=HYPERLINK("http://evil.example/","click")'
HOSTILE_HEADER = "=cmd|' /C calc'!A0"
HOSTILE_CSV = (b"sentence_a,sentence_b,label,\"=cmd|' /C calc'!A0\"\n"
               b"The Nile is a river in Africa.,It flows north into the Mediterranean Sea.,0,"
               b"\"=HYPERLINK(\"\"http://evil.example/\"\",\"\"click\"\")\"\n"
               b"It flows north into the Mediterranean Sea.,The Nile is a river in Africa.,1,+1+cmd\n"
               b"-Rome is the capital of Italy.,It has almost three million people.,0,@SUM(A1)\n"
               b"It has almost three million people.,Rome is the capital of Italy.,1,-2\n")


def served_csvs(monkeypatch) -> dict[str, str]:
    """The text of every download button drawn from now on, by file name, as a click would fetch it."""
    import streamlit as st

    served: dict[str, str] = {}

    def button(label, data, file_name=None, **kwargs):
        data = data() if callable(data) else data
        served[file_name] = data.decode() if isinstance(data, bytes) else data

    monkeypatch.setattr(st, "download_button", button)
    return served


def cells(text: str) -> list[str]:
    return [cell for row in csv.reader(io.StringIO(text)) for cell in row]


def test_the_scores_and_slices_downloads_are_safe_to_open_in_a_spreadsheet(app, monkeypatch):
    """F5's reproducer in the browser: an uploaded column named like a formula, holding formulas. Its header and
    cells were written as they are into the scores and the slices downloads."""
    served = served_csvs(monkeypatch)
    at = goto(app, "sentence_pairs")
    at.file_uploader(key="pair_file").set_value(("hostile.csv", HOSTILE_CSV, "text/csv")).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    at.selectbox(key="pair_slice").set_value(HOSTILE_HEADER).run()
    assert not at.exception
    scores = next(text for name, text in served.items() if name == "pair-scores-uploaded.csv")
    slices = next(text for name, text in served.items() if name.startswith("pair-slices") and "cmd" in name)
    for text in (scores, slices):
        for cell in cells(text):  # nothing a spreadsheet would run; a number stays a number
            assert not cell.startswith(("=", "+", "-", "@", "\t", "\r")) or re.fullmatch(r"[+-][\d.]+", cell), cell
        assert "'" + HOSTILE_CELL in cells(text) and "'+1+cmd" in cells(text) and "'@SUM(A1)" in cells(text)
    frame = pd.read_csv(io.StringIO(scores), dtype=str, keep_default_na=False)
    assert "'" + HOSTILE_HEADER in frame.columns and "'-Rome is the capital of Italy." in set(frame.sentence_a)
    assert set(frame["'" + HOSTILE_HEADER]) == {"'" + HOSTILE_CELL, "'+1+cmd", "'@SUM(A1)", "-2"}
    numbers = pd.read_csv(io.StringIO(slices))
    assert numbers.accuracy.between(0, 1).all() and (numbers.n >= 0).all()
    assert set(numbers.slice.astype(str)) == {"'" + HOSTILE_CELL, "'+1+cmd", "'@SUM(A1)", "-2"}  # -2: a number, as it was
    assert "pair-slices-cmd-C-calc-A0.csv" in served  # the column's name in the file's: no quote, bar, space or slash
    chart = next(c for c in at.get("plotly_chart") if "Share right by" in c.proto.spec)
    assert '"filename": "pairs-by-cmd-C-calc-A0"' in chart.proto.config.replace('":"', '": "')  # and in a chart's export


def test_runs_csv_names_a_visitors_run_as_text(tmp_path, monkeypatch):
    """Run names are a visitor's: Compare runs' runs.csv wrote one named like a formula as it was."""
    import json

    from conftest import start

    run = tmp_path / "runs" / "20261122-000000-x-1"
    run.mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({
        "id": run.name, "status": "succeeded", "created": 1.0, "pid": 1, "step": 2, "total_steps": 2,
        "config": {"objective": "sop", "name": HOSTILE_CELL, "max_steps": 2}, "spec_label": "ALBERT tiny", "message": ""}))
    (run / "metrics.jsonl").write_text("".join(json.dumps(
        {"kind": "train", "step": step, "loss": -9.5, "mlm_loss": 9.0, "mlm_acc": 0.1, "tokens": 100 * step,
         "tokens_per_s": 50.0, "run_tokens_per_s": 50.0, "eta_s": 1.0, "time": 1.0}) + "\n"
        for step in (1, 2)))
    monkeypatch.setenv("ALBERT_LAB_RUNS", str(tmp_path / "runs"))
    served = served_csvs(monkeypatch)
    at = start("training")
    at.multiselect(key="tr_compare_runs").set_value([run.name]).run()
    assert not at.exception
    runs = pd.read_csv(io.StringIO(served["runs.csv"]))
    assert set(runs.run) == {"'" + HOSTILE_CELL + " (sop)"} and list(runs.loss) == [-9.5, -9.5]  # a number stays a number


def test_draw_download_writes_through_the_one_safe_writer(monkeypatch):
    from app.shell import draw

    served = served_csvs(monkeypatch)
    frame = pd.DataFrame({"token": ["=1+1", "-x", "@a", "\tb", "\rc", "ok", "-1.5"], "score": [-1.0, -2.5, 0, 1, 2, 3, 4],
                          HOSTILE_HEADER: [HOSTILE_CELL] * 7})
    draw.download(frame, "t.csv")
    back = pd.read_csv(io.StringIO(served["t.csv"]), dtype={"token": str}, keep_default_na=False)
    assert list(back.columns) == ["token", "score", "'" + HOSTILE_HEADER]
    assert list(back.token) == ["'=1+1", "'-x", "'@a", "'\tb", "'\rc", "ok", "-1.5"]
    assert list(back.score) == [-1.0, -2.5, 0, 1, 2, 3, 4] and set(back["'" + HOSTILE_HEADER]) == {"'" + HOSTILE_CELL}


def test_a_download_is_named_safely():
    from app.shell.draw import file_name

    assert file_name("pair-slices-../../x y.csv") == "pair-slices-..-..-x-y.csv"
    assert file_name("../.bashrc") == "bashrc" and file_name("gradflow-20261122-000000-a_b-1.csv") == "gradflow-20261122-000000-a_b-1.csv"
    assert file_name("x" * 500 + ".csv") == "x" * 120 + ".csv" and file_name("=|.csv") == "data.csv"


def calls(path, name: str) -> list[int]:
    """Lines of `path` that call `something.name(...)`, csvfile's own functions left out."""
    tree = ast.parse(path.read_text())
    return [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute) and node.func.attr == name
            and not (isinstance(node.func.value, ast.Name) and node.func.value.id == "csvfile")]


def test_every_csv_is_written_by_the_one_writer():
    """One home for the rule: no CSV is written outside albert_lab/data/csvfile.py, and the app's downloads all go
    through draw.download (the model card's SVG figure holds no cell)."""
    writer = ROOT / "albert_lab" / "data" / "csvfile.py"
    files = [p for folder in ("albert_lab", "app") for p in sorted((ROOT / folder).rglob("*.py"))]
    found = [f"{p.relative_to(ROOT)}:{line}" for p in files if p != writer for line in calls(p, "to_csv")]
    assert not found, found
    buttons = {str(p.relative_to(ROOT)): len(calls(p, "download_button")) for p in files if calls(p, "download_button")}
    assert buttons == {"app/shell/draw.py": 1, "app/rooms/model_card/page.py": 1}, buttons
