"""The reproducers of issue #26 for a user's files (sentence splitting in any script, pairs
files, the score command, the upload limit) and the app's folder field, one test each."""

from __future__ import annotations

import json
import time
import tomllib
from pathlib import Path

import pytest
from conftest import ROOT, one_line_error, run_cli

from albert_lab.data.corpus import parse_documents, split_sentences
from albert_lab.data.pairs_file import read_pairs
from albert_lab.data.textfile import MAX_PAIR_ROWS, MAX_UPLOAD_BYTES, MAX_UPLOAD_MB
from albert_lab.errors import DataError

HEADER = b"sentence_a,sentence_b\n"


# ---- sentences in any script ------------------------------------------------------------------------
@pytest.mark.parametrize("text, sentences", [
    ("Привет, мир. Как дела? Всё хорошо.", ["Привет, мир.", "Как дела?", "Всё хорошо."]),
    ("Élan vital. Über alles.", ["Élan vital.", "Über alles."]),
    ("مرحبا بالعالم. كيف حالك؟ أنا بخير.", ["مرحبا بالعالم.", "كيف حالك؟", "أنا بخير."]),
    ("你好。今天天气很好！我们去公园吧？", ["你好。", "今天天气很好！", "我们去公园吧？"]),
    ("Γειά σου κόσμε. Τι κάνεις σήμερα.", ["Γειά σου κόσμε.", "Τι κάνεις σήμερα."]),
    ("नमस्ते दुनिया। आप कैसे हैं? मैं ठीक हूँ।", ["नमस्ते दुनिया।", "आप कैसे हैं?", "मैं ठीक हूँ।"]),
    ("«Oui.» Non. Ça va.", ["«Oui.»", "Non.", "Ça va."]),
    # what held before still holds: initials, abbreviations, lower case after a full stop
    ("J. R. R. Tolkien wrote it. e.g. this one. Dr. Who came.", ["J. R. R. Tolkien wrote it. e.g. this one.", "Dr. Who came."]),
])
def test_sentences_split_in_any_script(text, sentences):
    assert split_sentences(text) == sentences


def test_a_non_latin_corpus_has_documents_of_several_segments():
    text = "\n\n".join(["Москва — столица России. Это большой город.", "東京は日本の首都です。人口が多いです。",
                        "القاهرة عاصمة مصر. إنها مدينة كبيرة."])
    assert [len(d.segments) for d in parse_documents(text.encode(), "c.txt")] == [2, 2, 2]


# ---- pairs files ---------------------------------------------------------------------------------------
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
    with pytest.raises(DataError, match=f"p.csv is 5.0 MB; the limit is {MAX_UPLOAD_MB} MB"):
        read_pairs(at_limit + b"\n", "p.csv")


def test_the_page_the_uploader_and_the_check_read_one_limit():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["server"]["maxUploadSize"] == MAX_UPLOAD_MB
    page = (ROOT / "app" / "pair_views.py").read_text()  # the upload tab of the Sentence pairs page
    assert "Up to {MAX_UPLOAD_MB} MB" in page and "max_upload_size=MAX_UPLOAD_MB" in page and "5 MB" not in page
    assert "1024" not in (ROOT / "app" / "ui.py").read_text()


@pytest.mark.parametrize("header", [b"sentence_a,sentence_b,sentence_a\n", b"sentence_a,sentence_b,label,label\n"])
def test_a_duplicate_header_is_refused_not_silently_the_last_column(header):
    column = header.split(b",")[-1].strip().decode()
    with pytest.raises(DataError, match=f"the header names {column} twice"):
        read_pairs(header + b"a,b,c,d\n", "p.csv")


# ---- the score command ------------------------------------------------------------------------------------
@pytest.fixture
def pairs_file(tmp_path) -> Path:
    path = tmp_path / "p.csv"
    path.write_bytes(HEADER + b"The sky is blue.,It rains often.\n")
    return path


@pytest.mark.parametrize("flags, words", [
    (("--seq-len", "-1"), "--seq-len must be at least 8, got -1"),
    (("--max-rows", "0"), "--max-rows must be at least 1, got 0"),
    (("--out", "/tmp"), "--out /tmp is a folder"),
    (("--out", "/nonexistent/x.csv"), "the folder /nonexistent does not exist"),
])
def test_score_refuses_bad_options_in_one_line(shipped, pairs_file, flags, words):
    one_line_error(run_cli("score", str(pairs_file), "--checkpoint", str(shipped / "albert-sop"), *flags), words)


def test_score_to_a_full_device_is_one_line(shipped, pairs_file):
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full")
    one_line_error(run_cli("score", str(pairs_file), "--checkpoint", str(shipped / "albert-sop"), "--out", "/dev/full"),
                   "--out /dev/full: cannot be written (No space left on device)")


def test_score_has_the_apps_size_limit_and_reports_surrogate_rows(shipped, tmp_path):
    big = tmp_path / "big.csv"
    big.write_bytes(HEADER + b"a,b\n" * (MAX_UPLOAD_BYTES // 4))
    one_line_error(run_cli("score", str(big), "--checkpoint", str(shipped / "albert-sop")), "the limit is 5 MB")
    surrogate = tmp_path / "p.jsonl"
    surrogate.write_text(json.dumps({"sentence_a": "x\ud800", "sentence_b": "y"}, ensure_ascii=True) + "\n"
                         + json.dumps({"sentence_a": "The sky is blue.", "sentence_b": "It rains."}) + "\n")
    result = run_cli("score", str(surrogate), "--checkpoint", str(shipped / "albert-sop"), "--json")
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    assert "warning: row 1: not valid Unicode" in result.stderr and len(json.loads(result.stdout)) == 1


# ---- the app's folder field -----------------------------------------------------------------------------------
@pytest.mark.parametrize("text, words", [("albert\x00sop", "control character"), ("a" * 5000, "too long for a path")])
def test_the_folder_field_answers_a_nul_byte_or_a_long_string_with_a_message(shipped, monkeypatch, text, words):
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("ALBERT_LAB_CHECKPOINTS", str(shipped))
    st.cache_data.clear()
    st.cache_resource.clear()
    app = AppTest.from_file(str(ROOT / "app" / "main.py"), default_timeout=120)
    app.run()
    app.sidebar.text_input(key="add_source").set_value(text)
    app.sidebar.button(key="add_button").click().run()
    assert not app.exception, app.exception
    errors = [e.value for e in app.error]
    assert any(words in e for e in errors) and not any("Something went wrong" in e for e in errors), errors


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
