"""The reproducers of issue #26 for training runs (run ids, --resume, options, specs no
machine holds, corpora), one test each: a result or one line naming what was wrong."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import one_line_error, run_cli

from albert_lab.data.corpus import load_file, parse_documents
from albert_lab.errors import DataError, RunError
from albert_lab.runfolder import check_run_id
from albert_lab.training.config import TrainConfig
from albert_lab.training.jobs import resume_run
from albert_lab.training.runs import read_run

CORPUS = "wiki-vital[:600]"
TINY = ("--preset", "lab-tiny", "--steps", "3", "--foreground", "--corpus", CORPUS, "--vocab-size", "1000",
        "--batch-size", "8", "--seq-len", "64", "--threads", "1")


def train(tmp_path: Path, *extra: str):
    return run_cli("train", *TINY, "--runs-dir", str(tmp_path / "runs"), *extra)


# ---- run ids ----------------------------------------------------------------------------------
@pytest.mark.parametrize("run_id, words", [
    ("../escaped_run", "outside the runs folder"),
    ("/abs/path", "outside the runs folder"),
    ("a/b", "outside the runs folder"),
    ("x" * 300, "300 characters"),
    (".hidden", "starts with '.'"),
    ("", "is empty"),
    ("a\x00b", "'\\x00'"),
])
def test_a_run_id_is_a_name_inside_the_runs_folder(tmp_path, run_id, words):
    result = train(tmp_path, "--run-id", run_id)
    one_line_error(result, "run id", words)
    assert not (tmp_path / "escaped_run").exists() and not Path("/abs/path").exists()
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_runs_show_and_cancel_take_names_only(tmp_path):
    one_line_error(run_cli("runs", "--show", "../x", "--runs-dir", str(tmp_path)), "outside the runs folder")
    one_line_error(run_cli("runs", "--cancel", "/etc", "--runs-dir", str(tmp_path)), "outside the runs folder")


def test_good_run_ids_pass():
    for run_id in ("20261125-101010-1234", "my_run.v2", "é-run", "a" * 100):
        assert check_run_id(run_id) == run_id


# ---- --resume with an edited run.json -----------------------------------------------------------------
def failed_run(tmp_path: Path, **changes) -> Path:
    run = tmp_path / "runs" / "r1"
    run.mkdir(parents=True)
    raw = {"id": "r1", "status": "failed", "created": 1.0, "pid": None, "config": TrainConfig().to_dict(), "step": 0,
           "total_steps": 3}
    raw.update(changes)
    (run / "run.json").write_text(json.dumps(raw))
    return run


@pytest.mark.parametrize("changes, words", [
    ({"step": "abc"}, "field 'step' holds 'abc', not int"),
    ({"created": "yesterday"}, "field 'created' holds 'yesterday'"),
    ({"step": -5}, "negative"),
    ({"config": "x"}, "field 'config' holds 'x', not dict"),
    ({"config": {"spec": "x"}}, "spec: 'x' is not an object"),
    ({"config": {**TrainConfig().to_dict(), "lr": "fast"}}, "lr: 'fast' is not a finite number"),
    ({"config": {**TrainConfig().to_dict(), "spec": {"dropout": "a"}}}, "dropout: 'a' is not a finite number"),
])
def test_resume_refuses_an_edited_run_json_in_one_line(tmp_path, changes, words):
    run = failed_run(tmp_path, **changes)
    with pytest.raises(RunError, match=words.replace("(", r"\(").replace(")", r"\)")):
        resume_run(run, foreground=True)
    one_line_error(run_cli("train", "--resume", str(run), "--foreground"), words)
    assert json.loads((run / "run.json").read_text())["status"] == "failed"  # untouched


def test_runs_list_skips_a_damaged_run_json(tmp_path):
    failed_run(tmp_path, step="abc")
    result = run_cli("runs", "--runs-dir", str(tmp_path / "runs"))
    assert result.returncode == 0 and "no runs" in result.stdout
    with pytest.raises(RunError, match="it was edited or damaged"):
        read_run(tmp_path / "runs" / "r1")


# ---- options refused up front, and the blame of a diverged run ----------------------------------------
@pytest.mark.parametrize("lr, words", [("inf", "must be a finite number, got inf"), ("nan", "finite"),
                                       ("1e30", "at most 1.0, got 1e+30"), ("-1", "positive")])
def test_absurd_learning_rates_are_refused_before_the_run_starts(tmp_path, lr, words):
    one_line_error(train(tmp_path, "--lr", lr), "lr:", words)
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_a_diverged_run_names_dropout_before_the_learning_rate(tmp_path):
    result = train(tmp_path, "--dropout", "0.99")
    assert result.returncode == 1 and "Traceback" not in result.stdout + result.stderr
    assert "settings that can cause it: dropout 0.99" in result.stdout
    causes = TrainConfig(lr=2e-3).divergence_causes()
    assert causes.startswith("the learning rate 0.002") and "dropout" not in causes


@pytest.mark.parametrize("flags, words", [
    (("--hidden", "65536", "--ffn", "262144", "--layers", "64"), "55,8"),
    (("--layers", "100000"), "100,000 layer applications"),
    (("--layers", "8", "--inner", "1000"), "8,000 layer applications"),
])
def test_specs_no_machine_holds_are_refused_before_allocating(tmp_path, flags, words):
    line = one_line_error(train(tmp_path, *flags), "spec:", words)
    if "applications" not in line:
        assert "parameters" in line and "GiB" in line and "available" in line


def test_the_memory_bound_comes_from_the_spec_alone():
    from albert_lab.params import count, fit_problem, memory_needed
    from albert_lab.spec import ModelSpec

    tiny = ModelSpec.from_name("lab-tiny")
    assert fit_problem(tiny, 64, 128) is None and fit_problem(ModelSpec.from_name("albert-base")) is None
    assert memory_needed(tiny) == 4 * count(tiny).total_with_heads
    assert memory_needed(tiny, 1, 128) > 16 * count(tiny).total_with_heads


# ---- corpora: lone surrogates, bad lines, non-Latin scripts ----------------------------------------------
def test_a_lone_surrogate_in_a_jsonl_corpus_is_the_line_reported(tmp_path):
    good = "".join(json.dumps({"text": f"Sentence one of {i}. Sentence two of {i}."}) + "\n" for i in range(3))
    path = tmp_path / "c.jsonl"
    path.write_text(good + '{"text": "Bad \\ud800 text. Second."}\n' + '{"body": "no text"}\n')
    corpus = load_file(path)
    assert len(corpus.train + corpus.heldout) == 3
    assert corpus.problems == ("c.jsonl: line 4: not valid Unicode (a lone surrogate, \\ud800: an escape of no character); "
                               "skipped", "c.jsonl: line 5: has no string field 'text'; skipped")
    assert "2 lines skipped" in corpus.describe()
    escaped_pair = parse_documents(b'{"text": "Smile \\ud83d\\ude00. Yes."}\n', "c.jsonl")  # a valid pair of escapes
    assert escaped_pair[0].segments == ("Smile \U0001f600.", "Yes.")
    with pytest.raises(DataError, match="no document could be read; 1 line skipped, the first line 1: not valid Unicode"):
        parse_documents(b'{"text": "\\udfff"}', "c.jsonl")


def test_training_on_a_corpus_with_a_surrogate_line_warns_and_trains(tmp_path, small_corpus, tokenizer_dir):
    lines = [json.dumps({"text": " ".join(d.segments), "title": d.title}) for d in small_corpus.train[:200]]
    path = tmp_path / "c.jsonl"
    path.write_text("\n".join([*lines, '{"text": "\\ud800 lone. Surrogate here."}']) + "\n")
    result = run_cli("train", *TINY[:5], "--corpus", str(path), "--tokenizer", str(tokenizer_dir), "--batch-size", "8",
                     "--seq-len", "64", "--threads", "1", "--runs-dir", str(tmp_path / "runs"))
    assert "Traceback" not in result.stderr and "UnicodeEncodeError" not in result.stdout + result.stderr
    assert "warning: c.jsonl: line 201: not valid Unicode" in result.stderr, result.stderr[-1500:]
    assert result.returncode == 0, result.stdout + result.stderr[-1500:]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_score_or_corpus_path_that_is_a_fifo_never_blocks(tmp_path):
    from albert_lab.data.textfile import read_user_file

    fifo = tmp_path / "p.csv"
    os.mkfifo(fifo)
    with pytest.raises(DataError, match="not a regular file"):
        read_user_file(fifo)
    with pytest.raises(DataError, match="a folder"):
        read_user_file(tmp_path)
