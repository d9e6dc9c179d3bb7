"""albert-lab score: CSV and JSON out, warnings, and one line for each bad option, file or device."""

import csv
import io
import json
import re
from pathlib import Path

import pandas as pd
import pytest
from conftest import HEADER, one_line_error, run_cli

from albert_lab.data.textfile import MAX_UPLOAD_BYTES


def test_score_writes_csv_and_warns(shipped, tmp_path):
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("sentence_a\tsentence_b\tlabel\nThe cat sat.\tIt purred.\t0\nIt purred.\tThe cat sat.\t1\n\tx\t0\n")
    out = tmp_path / "scores.csv"
    result = run_cli("score", str(pairs), "--checkpoint", str(shipped / "albert-sop"), "--checkpoint",
                     str(shipped / "hub-albert"), "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert "row 4: sentence_a is empty; skipped" in result.stderr and "SOP head weights are missing" in result.stderr
    scores = pd.read_csv(out)
    assert len(scores) == 4 and scores[scores.checkpoint == "hub-albert"].p_ab.isna().all()
    assert scores[scores.checkpoint == "albert-sop"].p_ab.between(0, 1).all()
    assert "accuracy" in result.stdout
    # the table's columns are explained under it: accuracy, order_accuracy and prefers_ab read as jargon alone
    legend = result.stdout.split("Columns (label 0: ", 1)[1]
    for column in ("accuracy", "order_accuracy", "prefers_ab"):
        assert f"\n  {column}: " in legend, legend
    assert "by the order the head prefers" in legend and "higher as given than swapped" in legend


def test_score_bad_input(shipped, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("sentence_a;sentence_b\nx;y\n")
    result = run_cli("score", str(bad), "--checkpoint", str(shipped / "albert-sop"))
    assert result.returncode == 2 and "semicolons as delimiter" in result.stderr and "Traceback" not in result.stderr
    result = run_cli("score", str(tmp_path / "missing.csv"), "--checkpoint", str(shipped / "albert-sop"))
    assert result.returncode == 2 and "no such file" in result.stderr


@pytest.mark.parametrize("flags, words", [
    (("--seq-len", "-1"), "--seq-len must be at least 8, got -1"),
    (("--max-rows", "0"), "--max-rows must be at least 1, got 0"),
    (("--out", "/tmp"), "--out /tmp is a folder"),
    (("--out", "/nonexistent/x.csv"), "the folder /nonexistent does not exist"),
])
def test_score_refuses_bad_options_in_one_line(shipped, pairs_file, flags, words):
    one_line_error(run_cli("score", str(pairs_file), "--checkpoint", str(shipped / "albert-sop"), *flags), words)


def test_score_never_writes_over_its_own_pairs_file(shipped, pairs_file):
    before = pairs_file.read_bytes()
    one_line_error(run_cli("score", str(pairs_file), "--checkpoint", str(shipped / "albert-sop"), "--out", str(pairs_file)),
                   "is an input of this command (the pairs file)")
    assert pairs_file.read_bytes() == before


@pytest.mark.parametrize("args, words", [
    (("evaluate", "--limit", "0"), "--limit must be at least 1, got 0"),
    (("evaluate", "--limit", "-3"), "--limit must be at least 1, got -3"),
    (("evaluate", "--seq-len", "0"), "--seq-len must be at least 8, got 0"),
    (("logit-lens", "--seq-len", "0"), "--seq-len must be at least 8, got 0"),
    (("extrapolate", "--seq-len", "2"), "--seq-len must be at least 8, got 2"),
    (("lens-top", "--seq-len", "-1"), "--seq-len must be at least 8"),
    (("attention", "--seq-len", "0"), "--seq-len must be at least 8"),
    (("attention", "--maps-out", "/tmp"), "--maps-out /tmp is a folder"),
    (("attention", "--maps-out", "/proc/nope.csv"), "--maps-out /proc/nope.csv cannot be written"),  # was a traceback
    (("cka", "--max-tokens", "0"), "--max-tokens: must be 2..8,192, got 0"),
])
def test_analysis_commands_refuse_bad_sizes_before_any_work(shipped, args, words):
    """--limit 0 ran the whole evaluation (0 read as 'no limit'), --limit -3 ended in a pandas
    traceback, --seq-len 0 was taken; attention wrote its maps to a folder after all the work."""
    one_line_error(run_cli(*args, "--checkpoint", str(shipped / "albert-sop")), words)


def test_score_reads_pairs_typed_on_standard_input(shipped):
    def score(text: str, isolated: bool = False):
        return run_cli("score", "-", "--checkpoint", str(shipped / "albert-sop"), "--json", input=text, isolated=isolated)

    # the entry point's real standard input once (a subprocess: 5-10 s of imports), its formats in this process
    for text, isolated in (("sentence_a\tsentence_b\nThe cat sat.\tIt purred.\n", True),
                           ("sentence_a,sentence_b\nThe cat sat.,It purred.\n", False),
                           ('{"sentence_a": "The cat sat.", "sentence_b": "It purred."}\n', False)):
        result = score(text, isolated)
        assert result.returncode == 0, result.stderr
        rows = json.loads(result.stdout)
        assert len(rows) == 1 and rows[0]["sentence_b"] == "It purred." and 0 <= rows[0]["p_ab"] <= 1
    one_line_error(score(""), "the file is empty")


def test_a_folder_given_as_text_file_is_named_a_folder(shipped, tmp_path):
    one_line_error(run_cli("oscillation", "--file", str(tmp_path), "--checkpoint", str(shipped / "albert-sop")),
                   "a folder; give a .txt file")
    one_line_error(run_cli("runs", "--runs-dir", str(tmp_path / "nowhere")), "no such folder")


def test_a_file_or_a_device_where_a_folder_or_corpus_belongs_is_named_what_it_is(shipped, tmp_path):
    """'no such folder' and 'no such corpus file' were said of a file and of a link to /dev/zero that exist."""
    (a_file := tmp_path / "runs.txt").write_text("x")
    one_line_error(run_cli("runs", "--runs-dir", str(a_file)), "a file, not a runs folder")
    one_line_error(run_cli("oscillation", "--checkpoint", str(shipped / "albert-sop"), "--file", "/dev/null"),
                   "not a regular file")
    (device := tmp_path / "corpus.txt").symlink_to("/dev/zero")
    one_line_error(run_cli("train", "--corpus", str(device), "--steps", "1", "--runs-dir", str(tmp_path / "runs")),
                   "not a regular file (a device or a pipe)")
    result = run_cli("train", "--batch-size", "1000000000", "--steps", "1", "--runs-dir", str(tmp_path / "runs"))
    assert "optimizer state" in one_line_error(result, "spec:")  # a plain word, not "--optimizer state"


def test_a_file_of_thousands_of_texts_is_refused_before_any_work(shipped, tmp_path):
    """4,000 paragraphs took 15 GB in oscillation (every state of every token kept), 200,000 more than the machine."""
    many = tmp_path / "many.txt"
    many.write_text("\n\n".join(f"The river {i} runs north. It is wide." for i in range(300)))
    for command in ("oscillation", "attention"):
        one_line_error(run_cli(command, "--file", str(many), "--checkpoint", str(shipped / "albert-sop")),
                       "many.txt: more than 256 texts", "an analysis reads at most 256 at once")


def test_score_to_a_full_device_is_one_line(shipped, pairs_file):
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full")
    one_line_error(run_cli("score", str(pairs_file), "--checkpoint", str(shipped / "albert-sop"), "--out", "/dev/full"),
                   "--out /dev/full cannot be written (No space left on device)")


def test_score_has_the_apps_size_limit_and_reports_surrogate_rows(shipped, tmp_path):
    big = tmp_path / "big.csv"
    big.write_bytes(HEADER + b"a,b\n" * (MAX_UPLOAD_BYTES // 4))
    one_line_error(run_cli("score", str(big), "--checkpoint", str(shipped / "albert-sop")), "(5 MB)")
    surrogate = tmp_path / "p.jsonl"
    surrogate.write_text(json.dumps({"sentence_a": "x\ud800", "sentence_b": "y"}, ensure_ascii=True) + "\n"
                         + json.dumps({"sentence_a": "The sky is blue.", "sentence_b": "It rains."}) + "\n")
    result = run_cli("score", str(surrogate), "--checkpoint", str(shipped / "albert-sop"), "--json")
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    assert "warning: row 1: not valid Unicode" in result.stderr and len(json.loads(result.stdout)) == 1


def test_the_out_probe_never_follows_a_link_or_blocks_on_a_pipe(tmp_path):
    """The write probe (open to append) created a dangling link's target and then deleted the
    user's link, and waited forever on a named pipe without a reader (now refused at once)."""
    import os

    from albert_lab.cli.outputs import check_out
    from albert_lab.errors import AlbertLabError

    (link := tmp_path / "out.csv").symlink_to(tmp_path / "target.csv")
    os.mkfifo(pipe := tmp_path / "pipe")
    check_out(link)
    with pytest.raises(AlbertLabError, match="a FIFO with no reader"):
        check_out(pipe)  # at once, never waiting
    reader = os.open(pipe, os.O_RDONLY | os.O_NONBLOCK)
    try:
        check_out(pipe)  # a reader is there: written as it is
    finally:
        os.close(reader)
    assert link.is_symlink() and not (tmp_path / "target.csv").exists()
    check_out(fresh := tmp_path / "fresh.csv")
    assert not fresh.exists()  # the probe leaves nothing behind


def test_a_message_quoting_a_huge_line_is_capped(shipped, tmp_path):
    """A pairs file whose only line is a 5 MB header printed a 4,999,096-character error (the app showed it too)."""
    from albert_lab.errors import MAX_MESSAGE_CHARS, AlbertLabError

    huge = tmp_path / "huge.csv"
    huge.write_bytes(b"x" * (MAX_UPLOAD_BYTES - 10) + b"\n")
    line = one_line_error(run_cli("score", str(huge), "--checkpoint", str(shipped / "albert-sop")), alone=True)
    assert len(line) < MAX_MESSAGE_CHARS + 100 and "characters left out" in line
    assert len(str(AlbertLabError("y" * 10**6))) <= MAX_MESSAGE_CHARS + 40


def test_evaluate_with_nothing_to_evaluate_says_so(shipped, tmp_path):
    """A corpus of one document holds none out: evaluate printed nothing and exit 0."""
    one = tmp_path / "t.txt"
    one.write_text("The river flows through the old town. Its bridges are old. The town is quiet.\n")
    one_line_error(run_cli("evaluate", "--checkpoint", str(shipped / "albert-sop"), "--corpus", str(one), "--no-ood"),
                   "no held-out pairs")


HOSTILE_CELL = '=HYPERLINK("http://evil.example/","click")'
HOSTILE_HEADER = "=cmd|' /C calc'!A0"


def hostile_pairs(path: Path) -> Path:
    """A student's file: a formula in a column of its own, in its header, and opening a sentence."""
    frame = pd.DataFrame({"sentence_a": ["=1+1 is two.", "The cat sat."], "sentence_b": ["It purred.", "-It left."],
                          "label": [0, 1], HOSTILE_HEADER: [HOSTILE_CELL, "@SUM(A1)"], "grade": ["-2", "+0.5"]})
    frame.to_csv(path, index=False)
    return path


def test_score_out_is_safe_to_open_in_a_spreadsheet(shipped, tmp_path):
    """F5 (issue 67): uploaded cells and headers starting with = + - @ were written as they are: live formulas in
    the teacher's spreadsheet. Now they start with ', numbers stay numbers; --raw-csv writes them as they are."""
    pairs, out, raw = hostile_pairs(tmp_path / "hostile.csv"), tmp_path / "s.csv", tmp_path / "raw.csv"
    result = run_cli("score", str(pairs), "--checkpoint", str(shipped / "albert-sop"), "--out", str(out))
    assert result.returncode == 0, result.stderr
    scores = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert "'" + HOSTILE_HEADER in scores.columns and HOSTILE_HEADER not in scores.columns
    assert list(scores["'" + HOSTILE_HEADER]) == ["'" + HOSTILE_CELL, "'@SUM(A1)"]
    assert list(scores.sentence_a) == ["'=1+1 is two.", "The cat sat."] and list(scores.sentence_b) == ["It purred.", "'-It left."]
    assert list(scores.grade) == ["-2", "+0.5"]  # text that is a plain number runs nothing: kept as a number
    numbers = pd.read_csv(out)
    assert numbers.p_ab.between(0, 1).all() and list(numbers.label) == [0, 1] and list(numbers.row) == [2, 3]
    for cells in csv.reader(io.StringIO(out.read_bytes().decode(), newline="")):  # every cell that starts so is a number
        assert all(re.fullmatch(r"[+-][\d.]+", cell) for cell in cells if cell.startswith(("=", "+", "-", "@"))), cells
    result = run_cli("score", str(pairs), "--checkpoint", str(shipped / "albert-sop"), "--out", str(raw), "--raw-csv")
    assert result.returncode == 0, result.stderr
    kept = pd.read_csv(raw, dtype=str, keep_default_na=False)
    assert list(kept[HOSTILE_HEADER]) == [HOSTILE_CELL, "@SUM(A1)"]
    assert (numbers.p_ab == pd.read_csv(raw).p_ab).all()
