"""Reading an uploaded sentence-pairs file: CSV, TSV or JSONL with columns sentence_a,
sentence_b and optionally label (0 = A then B is the original order / B follows A;
1 = not). Any other column (a student, a topic) is kept as text, for slicing the results.
Problems are reported per row or column and valid rows are still scored; DataError only
when nothing can be. (data/pairs.py builds pretraining pairs instead.)
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import pandas as pd

from albert_lab.data.corpus import MAX_SEGMENT_CHARS
from albert_lab.data.textfile import MAX_PAIR_ROWS as MAX_ROWS
from albert_lab.data.textfile import check_size, decode_utf8, jsonl_records
from albert_lab.errors import DataError

COLUMNS = ("sentence_a", "sentence_b")
# Names analysis.pairs.score_pairs gives its own columns: a file's column of that name is not kept.
RESERVED = ("row", "label", "checkpoint", "head", "head_status", "tokens", "unknown", "reads", "truncated", "p_ab", "p_ba",
            "prediction", "note", "correct")
MAX_EXTRA_CHARS = 200  # an extra column's value is a name to slice by (a student, a topic), not a text


@dataclass
class PairsFile:
    pairs: pd.DataFrame  # columns: row (1-based, as in the file), sentence_a, sentence_b, label (Int64, may be NA),
    # then the file's other columns in its order (text, NA where blank)
    problems: list[str] = field(default_factory=list)


def read_pairs(data: bytes, name: str, max_rows: int = MAX_ROWS) -> PairsFile:
    """Parse an uploaded pairs file; raise DataError only when nothing can be scored. Rows
    are read one at a time and reading stops at the `max_rows` cap; files over
    MAX_UPLOAD_BYTES are refused (the browser's and the command line's one limit)."""
    check_size(len(data), name)
    text = decode_utf8(data, name)
    if not text.strip():
        raise DataError(f"{name}: the file is empty")
    lower = name.lower()
    problems: list[str] = []
    if lower.endswith(".jsonl"):
        records = _jsonl_records(text, problems)
    elif lower.endswith((".csv", ".tsv", ".txt")):
        records = _delimited_records(text, name, "\t" if lower.endswith(".tsv") else ",", problems)
    else:
        raise DataError(f"{name}: unsupported file type; use .csv, .tsv or .jsonl with columns sentence_a, sentence_b")
    return _clean(records, problems, name, max_rows)


def _delimited_records(text: str, name: str, delimiter: str, problems: list[str]) -> Iterator[dict]:
    # The csv module refuses fields over 128 KiB by default; here a long field is cut later
    # (MAX_SEGMENT_CHARS) like any other, and the whole file (at most MAX_UPLOAD_BYTES) is in memory anyway.
    csv.field_size_limit(max(csv.field_size_limit(), min(len(text) + 1, 2**31 - 1)))
    reader = csv.DictReader(io.StringIO(text), delimiter=delimiter)
    try:
        header = [h.strip() for h in (reader.fieldnames or [])]
    except csv.Error as err:
        raise DataError(f"{name}: the header row cannot be read ({err}); check the quotes in the first line") from None
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        hint = _column_hint(missing, header) or _delimiter_hint(text, delimiter)
        raise DataError(f"{name}: missing column(s) {', '.join(missing)}; found {header[:6]}{hint}")
    for column in (*COLUMNS, "label"):
        if header.count(column) > 1:
            where = " and ".join(str(i + 1) for i, h in enumerate(header) if h == column)
            raise DataError(f"{name}: the header names {column} twice (columns {where}); keep one column of that name")
    if "label" not in header and (hint := _column_hint(["label"], header)):
        problems.append(f"no column label, so the pairs are scored without labels{hint}")
    reader.fieldnames = header
    return _csv_rows(reader, io.StringIO(text).readlines(), problems)


def _csv_rows(reader: csv.DictReader, lines: list[str], problems: list[str]) -> Iterator[dict]:
    """The records of `reader` (over `lines`, the file's lines as the reader sees them), each
    with its row number; rows it cannot use are named in `problems`."""
    number = 1  # row 1 is the header
    delimiter = reader.reader.dialect.delimiter
    while True:
        number += 1
        first_line = reader.line_num + 1
        while first_line <= len(lines) and not lines[first_line - 1].strip():  # the reader skips blank lines
            first_line += 1
        try:
            record = next(reader)
        except StopIteration:
            return
        except csv.Error as err:  # the reader goes on at the next line
            problems.append(f"row {number}: cannot be read as CSV ({err}); skipped")
            continue
        if problem := _open_quote(lines[first_line - 1:reader.line_num], first_line, len(reader.fieldnames), delimiter):
            problems.append(f"row {number}: {problem}; skipped (close the quote, or write a quote inside a quoted "
                            'sentence as two: "")')
            continue
        if None in record:  # more fields than the header names: the sentences would be split at the wrong comma
            name = "tab" if delimiter == "\t" else "comma"
            problems.append(f"row {number}: {len(reader.fieldnames) + len(record[None])} fields where the header names "
                            f"{len(reader.fieldnames)} (a {name} inside a sentence? put the sentence in double "
                            "quotes); skipped")
            continue
        yield {**record, "_row": number}


def _open_quote(raw: list[str], first_line: int, fields: int, delimiter: str) -> str | None:
    """Why the record read from the `raw` lines (from `first_line` on) is a double quote left
    open, or None. The csv reader takes everything after an opening quote as one field until
    a closing one, to the end of the file if none comes: a stray quote made a 300-row file
    '4 pairs scored'. Open at the end of the file: certain. Closed lines later: when two or
    more of the lines it took read as whole rows (a quoted sentence over two lines is fine)."""
    try:
        list(csv.reader(raw, delimiter=delimiter, strict=True))
    except csv.Error as err:
        if "unexpected end of data" in str(err):
            taken = len(raw) - 1
            return (f"a double quote at line {first_line} is never closed, so "
                    + (f"the {taken:,} lines after it were" if taken > 1 else "the line after it was" if taken else
                       "the rest of its line was") + " read as one sentence")
    rows = [line for line in raw[1:] if len(next(csv.reader([line], delimiter=delimiter), [])) >= fields]
    if len(rows) >= 2:
        return (f"a double quote at line {first_line} is closed only at line {first_line + len(raw) - 1}, so "
                f"{len(rows):,} lines that look like rows were read as one sentence")
    return None


def _column_hint(missing: list[str], found: Iterable[str]) -> str:
    """'; did you mean ...' for names that are a missing column written another way
    ("Sentence A", "sentence-a", "SentenceA"), or ''."""
    def key(column: str) -> str:
        return "".join(ch for ch in column.lower() if ch.isalnum())
    spelled = {key(column): column for column in found}
    pairs = [(spelled[key(column)], column) for column in missing if key(column) in spelled]
    if not pairs:
        return ""
    return "; did you mean " + " and ".join(f"{column} (for {given!r})" for given, column in pairs) + \
        "? The names must be exactly these"


def _delimiter_hint(text: str, expected: str) -> str:
    try:
        found = csv.Sniffer().sniff(text.split("\n", 1)[0][:10_000], delimiters=",;\t|").delimiter
    except csv.Error:
        return ""
    if found != expected:
        names = {",": "comma", ";": "semicolon", "\t": "tab", "|": "pipe"}
        return (f"; the file seems to use {names[found]}s as delimiter, expected {names[expected]}s "
                "(.csv: commas, .tsv: tabs)")
    return ""


def _jsonl_records(text: str, problems: list[str]) -> Iterator[dict]:
    for number, record, problem in jsonl_records(text):
        if problem:
            problems.append(f"row {number}: {problem}; skipped")
        else:
            yield {**record, "_row": number}


def _clean(records: Iterable[dict], problems: list[str], name: str, max_rows: int) -> PairsFile:
    """Valid rows, at most `max_rows` of them (the cap counts only rows that are scored);
    `records` is read no further than the row after the cap."""
    rows, fields_seen, first_keys, extras = [], False, None, {}
    for record in records:
        number = record["_row"]
        first_keys = sorted(k for k in record if k != "_row")[:6] if first_keys is None else first_keys
        extras.update((k, None) for k in record if k not in extras and k not in (*COLUMNS, "_row"))
        fields_seen = fields_seen or any(c in record for c in COLUMNS)
        if len(rows) == max_rows:
            rows_word = "row" if max_rows == 1 else "rows"
            problems.append(f"the file has more than {max_rows:,} valid {rows_word}; only the first {max_rows:,} (the cap) "
                            f"are scored, from row {number} on nothing is read")
            break
        values = {}
        for column in COLUMNS:
            value = record.get(column)
            if isinstance(value, (dict, list, bool)):
                problems.append(f"row {number}: {column} is not text; skipped")
                break
            value = "" if value is None else str(value).strip()
            if not value:
                problems.append(f"row {number}: {column} is empty; skipped")
                break
            if len(value) > MAX_SEGMENT_CHARS:
                problems.append(f"row {number}: {column} has {len(value):,} characters; cut to {MAX_SEGMENT_CHARS:,}")
                value = value[:MAX_SEGMENT_CHARS]
            values[column] = " ".join(value.split())
        else:
            rows.append(dict(row=number, **values, label=_label(record.get("label"), number, problems),
                             **{f"_{k}": _extra(record.get(k)) for k in extras if k != "label"}))
    if first_keys is not None and not fields_seen:
        raise DataError(f"{name}: missing fields {', '.join(COLUMNS)} (found {first_keys})"
                        + _column_hint(list(COLUMNS), first_keys))
    if not rows:
        raise DataError(f"{name}: no row has both sentence_a and sentence_b" + (f" ({problems[0]})" if problems else "")
                        + _column_hint([c for c in COLUMNS if c not in (first_keys or [])], first_keys or []))
    frame = pd.DataFrame(rows)
    frame["label"] = frame["label"].astype("Int64")
    return PairsFile(_extra_columns(frame, [k for k in extras if k != "label"], problems), problems)


def _extra(value: object) -> str | None:
    """An extra column's value as text (a number as written), None where blank or not a plain value."""
    if value is None or isinstance(value, (dict, list)):
        return None
    text = " ".join(str(value).split())[:MAX_EXTRA_CHARS]
    return text or None


def _extra_columns(frame: pd.DataFrame, names: list[str], problems: list[str]) -> pd.DataFrame:
    """The file's other columns (held as `_name` while read) under their own names, as text; a name the
    scores use, or a blank one, is not kept and is named in `problems`."""
    for name in names:
        values = frame.pop(f"_{name}").astype("string") if f"_{name}" in frame else None
        if name is None or not str(name).strip():
            problems.append("a column without a name in the header is not kept")
        elif name in RESERVED:
            problems.append(f"column {name} is not kept: the scores have a column of that name; rename it to slice by it")
        elif values is not None:
            frame[name] = values
    return frame


def _label(value: object, number: int, problems: list[str]) -> int | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if not isinstance(value, (dict, list, bool)) and str(value).strip() in ("0", "1", "0.0", "1.0"):
        return int(float(value))
    shown = value if isinstance(value, (str, int, float)) and len(str(value)) <= 40 else type(value).__name__
    problems.append(f"row {number}: label {shown!r} is not 0 or 1; scored without a label")
    return None
