"""The one writer of the CSV files this project hands out (`score --out`, `attention --maps-out`,
every download in the app): a text cell or header a spreadsheet would read as a formula gets a
leading ' (OWASP's advice against CSV injection), so a student's `=HYPERLINK(...)` opens as text
in the teacher's spreadsheet. Numbers stay numbers: a number cell is never touched, and neither
is a text cell that is a plain decimal number ('-1', '+0.5', '-2e3'), which runs nothing."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pandas as pd

# What a spreadsheet reads as the start of a formula: = + - @ (and their full-width forms, which
# some spreadsheets fold into them), a tab or a carriage return (LibreOffice skips them and reads on).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\uff1d", "\uff0b", "\uff0d", "\uff20")
_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)  # no nesting: linear


def safe_cell(value: Any) -> Any:
    """`value` with a leading ' when it is text a spreadsheet would run; anything else as it is."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS) and not _PLAIN_NUMBER.fullmatch(value):
        return "'" + value
    return value


def spreadsheet_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of `frame` whose text cells and column names are safe_cell'd; numeric columns untouched."""
    safe = frame.copy(deep=False)
    for i in range(safe.shape[1]):
        column = safe.iloc[:, i]
        if isinstance(column.dtype, pd.CategoricalDtype):
            column = column.astype(object)  # categories made safe might collide ('=a' and "'=a"): plain cells
        if column.dtype == object or pd.api.types.is_string_dtype(column.dtype):
            safe.isetitem(i, column.map(safe_cell))
    safe.columns = [safe_cell(name) for name in safe.columns]
    return safe


def to_csv(frame: pd.DataFrame, path: str | Path | None = None, raw: bool = False) -> str | None:
    """`frame` as CSV without its index: at `path`, or returned as text when `path` is None.
    Lines end in CRLF (RFC 4180), so that the csv module quotes a cell holding a lone CR: unquoted,
    a spreadsheet starts a row there, and a header 'x<CR>=1+1' put a formula at the start of one.
    `raw=True` writes the cells as they are, one LF a line (the command line's --raw-csv)."""
    if raw:
        return frame.to_csv(path, index=False)
    return spreadsheet_safe(frame).to_csv(path, index=False, lineterminator="\r\n")
