"""What train and --resume check before anything trains: run ids, an edited run.json, learning rates, specs."""

import json
from pathlib import Path

import pytest
from conftest import CORPUS, one_line_error, run_cli

from albert_lab.errors import RunError
from albert_lab.runfolder import check_run_id
from albert_lab.training.config import TrainConfig
from albert_lab.training.jobs import cancel_run, resume_run
from albert_lab.training.runs import read_run

TINY = ("--preset", "lab-tiny", "--steps", "3", "--foreground", "--corpus", CORPUS, "--vocab-size", "1000",
        "--batch-size", "8", "--seq-len", "64", "--threads", "1")


def train(tmp_path: Path, *extra: str):
    return run_cli("train", *TINY, "--runs-dir", str(tmp_path / "runs"), *extra)


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


def test_good_run_ids_pass():
    for run_id in ("20261125-101010-1234", "my_run.v2", "é-run", "a" * 100):
        assert check_run_id(run_id) == run_id


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
    ({"pid": -1}, "field 'pid' holds -1, not a process id"),  # os.kill(-1, ...) signals every process
    ({"pid": 2 ** 70}, "field 'pid' holds 1180591620717411303424, not a process id"),  # was an OverflowError
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


def test_cancel_sends_no_signal_to_the_pid_run_json_names(tmp_path, monkeypatch):
    """run.json is only a file: its pid may be anybody's. Cancelling touches the cancel file the worker
    polls; no signal goes to the process it names (every way of sending one is watched), which lives on."""
    import os
    import signal
    import subprocess
    import sys

    sent, kill = [], os.kill

    def watched(name):
        def send(*args):
            if name == "kill" and args[1:] == (0,):  # signal 0 sends nothing: whether the process lives (runs.py)
                return kill(*args)
            sent.append((name, args))
        return send

    for name in ("kill", "killpg"):
        monkeypatch.setattr(os, name, watched(name))
    monkeypatch.setattr(signal, "pthread_kill", watched("pthread_kill"))
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", "albert_lab"])  # looks alive
    try:
        run = failed_run(tmp_path, status="running", pid=bystander.pid)
        assert read_run(run).status == "running"
        cancel_run(run)
        assert (run / "cancel").exists()
        assert sent == [] and bystander.poll() is None
    finally:
        monkeypatch.undo()
        bystander.kill()
        bystander.wait()


def test_runs_list_skips_a_damaged_run_json(tmp_path):
    failed_run(tmp_path, step="abc")
    result = run_cli("runs", "--runs-dir", str(tmp_path / "runs"))
    assert result.returncode == 0 and "no runs" in result.stdout
    with pytest.raises(RunError, match="it was edited or damaged"):
        read_run(tmp_path / "runs" / "r1")


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


def test_training_on_a_corpus_with_a_surrogate_line_warns_and_trains(tmp_path, small_corpus, tokenizer_dir):
    lines = [json.dumps({"text": " ".join(d.segments), "title": d.title}) for d in small_corpus.train[:200]]
    path = tmp_path / "c.jsonl"
    path.write_text("\n".join([*lines, '{"text": "\\ud800 lone. Surrogate here."}']) + "\n")
    result = run_cli("train", *TINY[:5], "--corpus", str(path), "--tokenizer", str(tokenizer_dir), "--batch-size", "8",
                     "--seq-len", "64", "--threads", "1", "--runs-dir", str(tmp_path / "runs"))
    assert "Traceback" not in result.stderr and "UnicodeEncodeError" not in result.stdout + result.stderr
    assert "warning: c.jsonl: line 201: not valid Unicode" in result.stderr, result.stderr[-1500:]
    assert result.returncode == 0, result.stdout + result.stderr[-1500:]


def test_a_run_scored_on_another_corpus_never_trains_on_its_held_out_documents(tmp_path, small_corpus, tokenizer_dir):
    """--eval-corpus: trained on a file, scored on the built-in corpus's held-out documents
    (as a long-mix-plus run is scored on long-mix); refused when they are in the file."""
    def corpus_file(docs) -> str:
        path = tmp_path / f"c{len(docs)}.jsonl"
        path.write_text("".join(json.dumps({"text": " ".join(d.segments)}) + "\n" for d in docs))
        return str(path)

    leaky = corpus_file(small_corpus.train[:300] + small_corpus.heldout[:3])
    result = run_cli("train", *TINY[:5], "--corpus", leaky, "--eval-corpus", CORPUS, "--tokenizer", str(tokenizer_dir),
                     *TINY[9:], "--runs-dir", str(tmp_path / "runs"))
    one_line_error(result, f"eval_corpus: 3 of the {len(small_corpus.heldout)} held-out documents of {CORPUS}",
                   "training documents of c303", "would measure memory")
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
    clean = corpus_file(small_corpus.train[:300])
    result = run_cli("train", *TINY[:5], "--corpus", clean, "--eval-corpus", CORPUS, "--tokenizer", str(tokenizer_dir),
                     *TINY[9:], "--runs-dir", str(tmp_path / "runs"), "--run-id", "scored", "--full-eval")
    assert result.returncode == 0, result.stderr[-1500:]
    card = json.loads((tmp_path / "runs" / "scored" / "checkpoint" / "albert_lab.json").read_text())
    assert card["provenance"]["corpus"] == "c300.jsonl" and card["provenance"]["eval_corpus"] == CORPUS
    assert f"(scored on {len(small_corpus.heldout)} documents of {CORPUS})" in result.stdout + result.stderr
    result = run_cli("train", *TINY[:5], "--corpus", CORPUS, "--tokenizer", str(tokenizer_dir), *TINY[9:],
                     "--runs-dir", str(tmp_path / "runs"), "--run-id", "own", "--full-eval")  # on its own held-out documents
    assert result.returncode == 0, result.stderr[-1500:]
    own = json.loads((tmp_path / "runs" / "own" / "checkpoint" / "albert_lab.json").read_text())
    assert {task: m["n"] for task, m in card["metrics"].items()} == {task: m["n"] for task, m in own["metrics"].items()}
    assert card["metrics"]["sop"]["n"] > 20 and card["evaluation"]["full"]  # every pair of the same held-out set


def test_eval_corpus_scores_what_evaluate_scores_and_refuses_one_with_nothing_held_out(tmp_path, small_corpus):
    from albert_lab.data.corpora import load_corpus
    from albert_lab.data.sources import is_installed
    from albert_lab.errors import DataError
    from albert_lab.training.prepare import eval_documents

    own = TrainConfig(corpus=CORPUS, eval_corpus=CORPUS)  # its own held-out set: nothing to check
    assert eval_documents(own, small_corpus) == small_corpus.heldout
    (one := tmp_path / "one.txt").write_text("A single document. Of two sentences.\n")
    with pytest.raises(DataError, match=r"eval_corpus: .*one\.txt has no held-out documents to score on"):
        eval_documents(TrainConfig(corpus=CORPUS, eval_corpus=str(one)), small_corpus)
    if is_installed("cfi"):  # the out-of-domain book: all of it, as `albert-lab evaluate` scores it (was 1 of 17)
        cfi = load_corpus("cfi")
        assert len(eval_documents(TrainConfig(corpus=CORPUS, eval_corpus="cfi"), small_corpus)) == len(cfi.train + cfi.heldout)


def test_two_resumes_at_the_same_instant_start_one_worker(tmp_path):
    """Check-then-set without a lock: both resumes started a worker (duplicate rows, the pid overwritten)."""
    import threading
    from unittest import mock

    run = failed_run(tmp_path)
    started, barrier, errors = [], threading.Barrier(2), []
    def read_together(path):  # both read run.json before either writes it: the race, made certain
        info = read_run(path)
        try:
            barrier.wait(timeout=2)
        except threading.BrokenBarrierError:
            pass  # the other request was already told: nothing to wait for
        return info

    def resume():
        try:
            resume_run(run)
        except RunError as err:
            errors.append(str(err))

    with mock.patch("albert_lab.training.jobs.spawn_worker", lambda run_dir: started.append(run_dir) or 1), \
            mock.patch("albert_lab.training.jobs.read_run", read_together):
        threads = [threading.Thread(target=resume) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
    assert len(started) == 1, f"{len(started)} workers started"
    assert len(errors) == 1 and ("being resumed" in errors[0] or "still queued" in errors[0]), errors
