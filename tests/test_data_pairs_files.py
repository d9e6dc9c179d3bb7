"""Sentence-pair files (CSV, TSV, JSONL): every valid row read, every problem named by its row, one size limit."""

import time
import tomllib

import pytest
from conftest import HEADER, ROOT

from albert_lab.data.corpus import MAX_SEGMENT_CHARS
from albert_lab.data.pairs_file import read_pairs
from albert_lab.data.textfile import MAX_PAIR_ROWS, MAX_UPLOAD_BYTES, MAX_UPLOAD_MB, jsonl_records
from albert_lab.errors import DataError


def test_pairs_file_problems_are_named():
    good = b"sentence_a,sentence_b,label\nOne.,Two.,0\n,Missing a.,1\nThree.,Four.,maybe\n"
    parsed = read_pairs(good, "p.csv")
    assert list(parsed.pairs.row) == [2, 4]
    assert parsed.problems == ["row 3: sentence_a is empty; skipped",
                               "row 4: label 'maybe' is not 0 or 1; scored without a label"]
    with pytest.raises(DataError, match="semicolons as delimiter"):
        read_pairs(b"sentence_a;sentence_b\nx;y\n", "p.csv")
    with pytest.raises(DataError, match=r"missing column\(s\) sentence_b"):
        read_pairs(b"sentence_a,other\nx,y\n", "p.csv")
    with pytest.raises(DataError, match="empty"):
        read_pairs(b"  \n", "p.csv")
    with pytest.raises(DataError, match="not UTF-8"):
        read_pairs(b"sentence_a,sentence_b\n\xe9t\xe9,x\n", "p.csv")
    with pytest.raises(DataError, match="unsupported file type"):
        read_pairs(b"x", "p.xlsx")
    capped = read_pairs(b"sentence_a\tsentence_b\n" + b"a.\tb.\n" * 12, "p.tsv", max_rows=10)
    assert len(capped.pairs) == 10 and "only the first 10" in capped.problems[0]
    huge = read_pairs(f'{{"sentence_a": "{"word " * 2000}", "sentence_b": "x"}}\nnot json\n'.encode(), "p.jsonl")
    assert MAX_SEGMENT_CHARS - 10 <= len(huge.pairs.sentence_a[0]) <= MAX_SEGMENT_CHARS
    assert any(f"cut to {MAX_SEGMENT_CHARS:,}" in p for p in huge.problems) and any("row 2: not valid JSON" in p for p in huge.problems)


@pytest.mark.parametrize("data, name, hint", [
    (b"Sentence A,Sentence B\nx,y\n", "p.csv", "did you mean sentence_a (for 'Sentence A') and sentence_b (for 'Sentence B')?"),
    (b"sentence_a\tsentence-b\nx\ty\n", "p.tsv", "did you mean sentence_b (for 'sentence-b')?"),
    (b'{"SentenceA": "x", "sentence_b": "y"}\n', "p.jsonl", "did you mean sentence_a (for 'SentenceA')?"),
    (b'{"Sentence A": "x", "Sentence B": "y"}\n', "p.jsonl", "did you mean sentence_a (for 'Sentence A') and"),
])
def test_a_column_named_another_way_gets_did_you_mean(data, name, hint):
    with pytest.raises(DataError, match=r"missing|no row") as raised:
        read_pairs(data, name)
    assert hint in str(raised.value)


def test_a_label_column_named_another_way_is_named_not_ignored_quietly():
    parsed = read_pairs(b"sentence_a,sentence_b,Label\nx,y,0\n", "p.csv")
    assert parsed.pairs.label.isna().all()
    assert parsed.problems == ["no column label, so the pairs are scored without labels; did you mean label "
                               "(for 'Label')? The names must be exactly these"]


def test_csv_field_over_the_csv_modules_limit_is_cut_not_a_crash():
    data = HEADER + b"x" * 200_000 + b",second\nfirst,second\n"
    result = read_pairs(data, "big.csv")
    assert list(result.pairs.sentence_a) == ["x" * MAX_SEGMENT_CHARS, "first"]
    assert "row 2: sentence_a has 200,000 characters" in result.problems[0]


def rows_of(data: bytes, name: str, max_rows: int = 5000) -> list[tuple[int, str, str]]:
    frame = read_pairs(data, name, max_rows=max_rows).pairs
    return list(zip(frame.row, frame.sentence_a, frame.sentence_b))


@pytest.mark.parametrize("ending", [b"\r", b"\r\n", b"\n"])
@pytest.mark.parametrize("name, sep", [("p.csv", b","), ("p.tsv", b"\t")])
def test_cr_only_and_mixed_line_endings(ending, name, sep):
    lines = [b"sentence_a" + sep + b"sentence_b", b"A one" + sep + b"B one", b"A two" + sep + b"B two"]
    assert rows_of(ending.join(lines) + ending, name) == [(2, "A one", "B one"), (3, "A two", "B two")]
    mixed = lines[0] + b"\r\n" + lines[1] + b"\r" + lines[2] + b"\n"
    assert rows_of(mixed, name) == [(2, "A one", "B one"), (3, "A two", "B two")]


@pytest.mark.parametrize("bad, problem", [
    (b'{"sentence_a": "a", "sentence_b": "b", "label": ' + b"9" * 5000 + b"}", "a number too long to read"),
    (b"[" * 100_000, "nested too deeply"),
    (b'{"sentence_a": ' + b"[" * 100_000 + b"}", "nested too deeply"),
])
def test_jsonl_huge_integer_or_deep_nesting_skips_the_row(bad, problem):
    data = bad + b'\n{"sentence_a": "c", "sentence_b": "d"}\n'
    result = read_pairs(data, "p.jsonl")
    assert rows_of(data, "p.jsonl") == [(2, "c", "d")]
    assert result.problems == [f"row 1: {problem}; skipped"]


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\u0085"])
def test_unicode_line_separators_inside_a_jsonl_string_keep_the_row(separator):
    data = (f'{{"sentence_a": "one{separator}two", "sentence_b": "b"}}\n'
            '{"sentence_a": "x", "sentence_b": "y"}\n').encode()
    assert [r[0] for r in rows_of(data, "p.jsonl")] == [1, 2]
    assert next(jsonl_records(data.decode()))[1]["sentence_a"] == f"one{separator}two"


def test_row_cap_counts_only_valid_rows():
    bad = b'{"sentence_a": ""}\nnot json\n'
    good = b"".join(b'{"sentence_a": "a%d", "sentence_b": "b"}\n' % i for i in range(5))
    result = read_pairs(bad * 3 + good, "p.jsonl", max_rows=3)
    assert list(result.pairs.sentence_a) == ["a0", "a1", "a2"]
    assert "only the first 3" in result.problems[-1]
    assert len(read_pairs(bad * 3 + good[:-1], "p.jsonl", max_rows=5).pairs) == 5


def test_non_text_fields_and_labels_are_problems_not_crashes():
    data = (b'{"sentence_a": {"x": 1}, "sentence_b": "b"}\n{"sentence_a": "a", "sentence_b": "b", "label": [1]}\n'
            b'{"sentence_a": 5, "sentence_b": "b", "label": 1}\n')
    result = read_pairs(data, "p.jsonl")
    assert rows_of(data, "p.jsonl") == [(2, "a", "b"), (3, "5", "b")]
    assert result.problems == ["row 1: sentence_a is not text; skipped", "row 2: label 'list' is not 0 or 1; scored without a label"]


def test_unreadable_csv_row_is_skipped_and_the_rest_kept():
    data = HEADER + b'a1,b1\n"bad"x,"\n' + b"a3,b3\n"
    rows = rows_of(data, "p.csv")
    assert rows[0] == (2, "a1", "b1")


def test_a_lone_surrogate_in_a_pairs_file_is_the_row_reported():
    data = b'{"sentence_a": "ok \\ud800", "sentence_b": "b"}\n{"sentence_a": "c", "sentence_b": "d"}\n'
    result = read_pairs(data, "p.jsonl")
    assert list(result.pairs.sentence_a) == ["c"]
    assert result.problems == ["row 1: not valid Unicode (a lone surrogate, \\ud800: an escape of no character); skipped"]
    with pytest.raises(DataError, match="row 1: not valid Unicode"):
        read_pairs(data.split(b"\n")[0], "p.jsonl")


def test_the_reader_stops_at_the_row_cap():
    """A 1.3M-row CSV was parsed whole before the cap applied (1.34 GB, 15.7 s): rows after
    the cap are not read at all now (their problems would be reported if they were)."""
    rows = b"".join(b"a%d,b\n" % i for i in range(MAX_PAIR_ROWS + 1))
    junk = b",empty first sentence\n" * 200_000  # 4.4 MB of rows that would each be a problem
    start = time.perf_counter()
    result = read_pairs(HEADER + rows + junk, "p.csv")
    assert time.perf_counter() - start < 2.0
    assert len(result.pairs) == MAX_PAIR_ROWS
    assert result.problems == [f"the file has more than {MAX_PAIR_ROWS:,} valid rows; only the first {MAX_PAIR_ROWS:,} "
                               f"(the cap) are scored, from row {MAX_PAIR_ROWS + 2} on nothing is read"]


def test_one_size_limit_for_pairs_files_in_decimal_megabytes():
    body = b"a,b\n"
    at_limit = HEADER + b"x" * (MAX_UPLOAD_BYTES - len(HEADER) - len(body)) + body
    assert len(at_limit) == MAX_UPLOAD_BYTES == MAX_UPLOAD_MB * 1_000_000
    read_pairs(at_limit, "p.csv")
    # one byte over: said in bytes ("5.0 MB; the limit is 5 MB" contradicted itself)
    with pytest.raises(DataError, match=rf"p.csv is {MAX_UPLOAD_BYTES + 1:,} bytes; the limit is {MAX_UPLOAD_BYTES:,} \({MAX_UPLOAD_MB} MB\)"):
        read_pairs(at_limit + b"\n", "p.csv")


def test_the_page_the_uploader_and_the_check_read_one_limit():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["server"]["maxUploadSize"] == MAX_UPLOAD_MB
    page = (ROOT / "app" / "rooms" / "sentence_pairs" / "upload.py").read_text()  # the upload tab of the Sentence pairs page
    assert "Up to {MAX_UPLOAD_MB} MB" in page and "max_upload_size=MAX_UPLOAD_MB" in page and "5 MB" not in page
    assert "1024" not in (ROOT / "app" / "shell" / "draw.py").read_text()


@pytest.mark.parametrize("header", [b"sentence_a,sentence_b,sentence_a\n", b"sentence_a,sentence_b,label,label\n"])
def test_a_duplicate_header_is_refused_not_silently_the_last_column(header):
    column = header.split(b",")[-1].strip().decode()
    with pytest.raises(DataError, match=f"the header names {column} twice"):
        read_pairs(header + b"a,b,c,d\n", "p.csv")


def test_a_row_with_more_fields_than_the_header_is_skipped_with_a_reason_never_split_at_the_wrong_comma():
    """An unquoted comma inside a sentence: the first such row ended in a TypeError on the
    upload page (sorting the csv module's None key), later ones were scored split at that comma."""
    data = (b"sentence_a,sentence_b,label\nThe bridge was rebuilt after the flood, and it stands.,It is old.,0\n"
            b"\"The bridge, rebuilt, stands.\",It is old.,1\nShort.,Fine.,0\nOne more, with a comma.,Two.,1\n")
    result = read_pairs(data, "p.csv")
    assert result.pairs[["row", "sentence_a", "label"]].values.tolist() == [[3, "The bridge, rebuilt, stands.", 1],
                                                                              [4, "Short.", 0]]
    assert result.problems == [f"row {n}: 4 fields where the header names 3 (a comma inside a sentence? put the sentence "
                               "in double quotes); skipped" for n in (2, 5)]
    with pytest.raises(DataError, match=r"no row has both .* \(row 2: 3 fields where the header names 2 \(a tab inside"):
        read_pairs(b"sentence_a\tsentence_b\nA\tb\tc\n", "p.tsv")


def test_an_unclosed_quote_is_named_not_a_silent_loss_of_the_rows_after_it():
    """One stray quote made the csv reader take the rest of a 300-row file as one sentence:
    '4 pairs scored' and a warning about a long sentence. Now the row says what happened."""
    rows = [b"A %d.,B %d.\n" % (i, i) for i in range(300)]
    parsed = read_pairs(HEADER + b"".join(rows[:4]) + b'"' + b"".join(rows[4:]), "p.csv")
    assert len(parsed.pairs) == 4
    fix = '; skipped (close the quote, or write a quote inside a quoted sentence as two: "")'
    assert parsed.problems == ["row 6: a double quote at line 6 is never closed, so the 295 lines after it were read as "
                               "one sentence" + fix]
    last = read_pairs(b"sentence_a,sentence_b,label\nA1.,B1.,0\nA2.,\"B2.,1\n", "p.csv")  # the label went into B
    assert list(last.pairs.row) == [2] and last.problems == [
        "row 3: a double quote at line 3 is never closed, so the rest of its line was read as one sentence" + fix]
    blank = read_pairs(HEADER + b"A1.,B1.\n\n\n\"A2.,B2.\nA3.,B3.\n", "p.csv")  # line numbers count blank lines
    assert blank.problems[0].startswith("row 3: a double quote at line 5 is never closed")
    closed = read_pairs(HEADER + b"A1.,B1.\n\"A2.,B2.\nA3.,B3.\nA4.,B4.\nA5.,B\"5.\nA6.,B6.\n", "p.csv")  # by a second stray
    assert list(closed.pairs.sentence_a) == ["A1.", "A6."] and closed.problems == [
        "row 3: a double quote at line 3 is closed only at line 6, so 3 lines that look like rows were read as one "
        "sentence" + fix]
    for data, name in ((HEADER + b'"A sentence, quoted,\nover two lines.",B.\nC.,D.\n', "p.csv"),  # quotes that close
                       (b'sentence_a,sentence_b,label\n"First line,\nsecond part, with comma.","B here.",0\nC.,D.,1\n', "p.csv"),
                       (b'sentence_a\tsentence_b\n"First\tline\nsecond\tpart."\tB.\nC.\tD.\n', "p.tsv")):
        fine = read_pairs(data, name)
        assert len(fine.pairs) == 2 and not fine.problems, (data, fine.problems)
