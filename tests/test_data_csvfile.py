"""The one CSV writer (albert_lab/data/csvfile.py): text a spreadsheet would run gets a leading ', numbers stay
numbers, a cell or header stays one cell (issue 67, F5)."""

import csv
import io

import pandas as pd

from albert_lab.data.csvfile import safe_cell, spreadsheet_safe, to_csv


def test_text_a_spreadsheet_would_run_gets_a_quote_and_numbers_stay():
    for text in ("=1+1", "+cmd", "-x", "@SUM(A1)", "\t=1", "\r=1", "\uff1d1+1", "-", "+", "--1", "-1e", "-1,5", "-inf"):
        assert safe_cell(text) == "'" + text, text
    for value in ("-2", "+0.5", "-.5", "-2e3", "1", "plain", "'=1", " =1", "", -3, -2.5, None, True):
        assert safe_cell(value) is value, value
    assert safe_cell("-\u0661") == "'-\u0661"  # an Arabic-Indic one is no ASCII number: text


def test_a_frame_keeps_its_numbers_and_types():
    frame = pd.DataFrame({"=h": ["=a", "b"], "n": [-1, -2], "f": [-0.5, float("nan")], "s": pd.array(["-x", pd.NA], "string"),
                          "c": pd.Categorical(["=a", "'=a"]), "b": [True, False], "o": [-1, "=1"]})
    safe = spreadsheet_safe(frame)
    assert list(safe.columns) == ["'=h", "n", "f", "s", "c", "b", "o"]
    assert list(safe["'=h"]) == ["'=a", "b"] and list(safe.c) == ["'=a", "'=a"] and list(safe.o) == [-1, "'=1"]
    assert safe.s[0] == "'-x" and pd.isna(safe.s[1])
    assert safe.n.dtype == frame.n.dtype and list(safe.n) == [-1, -2] and safe.f[0] == -0.5 and list(safe.b) == [True, False]
    assert frame.columns[0] == "=h" and frame.c[0] == "=a"  # the frame given is unchanged


def test_a_cell_or_header_with_a_carriage_return_stays_one_cell():
    """A header 'x<CR>=1+1' was written unquoted (the csv module quotes only the line ending's characters): a
    spreadsheet starts a row at a lone CR, and the next cell, a formula, ran."""
    text = to_csv(pd.DataFrame({"x\r=1+1": ["a\r@b", "c"], "n": [-1, 2]}))
    rows = list(csv.reader(io.StringIO(text, newline="")))
    assert rows == [["x\r=1+1", "n"], ["a\r@b", "-1"], ["c", "2"]]
    raw = to_csv(pd.DataFrame({"=h": ["=a"], "n": [-1]}), raw=True)
    assert raw == "=h,n\n=a,-1\n"
