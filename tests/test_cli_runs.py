"""albert-lab runs, and the hints train prints: runs named, never paths, and told in words."""

import json

from conftest import one_line_error, run_cli


def test_runs_show_and_cancel_take_names_only(tmp_path):
    one_line_error(run_cli("runs", "--show", "../x", "--runs-dir", str(tmp_path)), "outside the runs folder")
    one_line_error(run_cli("runs", "--cancel", "/etc", "--runs-dir", str(tmp_path)), "outside the runs folder")


def _queued_run(runs, metrics: list[dict]):
    from conftest import tiny_spec

    from albert_lab.training.config import TrainConfig
    from albert_lab.training.jobs import create_run

    config = TrainConfig(spec=tiny_spec(1000).to_dict(), corpus="wiki-vital[:600]", vocab_size=1000, max_steps=5,
                         max_seq_len=64, name="walk")
    run_dir, _ = create_run(config, runs)
    (run_dir / "metrics.jsonl").write_text("".join(json.dumps(m) + "\n" for m in metrics))
    return run_dir


def test_runs_cancel_and_show_speak_in_words(tmp_path):
    """`runs --cancel` printed '...: running at step 72' and the raw dict of the last row."""
    from conftest import run_cli

    row = {"kind": "train", "step": 70, "loss": 8.9634, "mlm_loss": 8.2696, "pair_loss": 0.6937, "tokens": 267709,
           "tokens_per_s": 1899.5, "run_tokens_per_s": 2251.9, "eta_s": 6080.2}
    run_dir = _queued_run(tmp_path / "elsewhere", [row])
    shown = run_cli("runs", "--runs-dir", str(tmp_path / "elsewhere"), "--show", run_dir.name)
    assert shown.returncode == 0 and "{" not in shown.stdout, shown.stdout
    assert "last: step 70: loss 8.963 (MLM 8.270, pair 0.694), 2,252 tokens/s, 267,709 tokens seen, about 101 min left" \
        in shown.stdout
    # queued again after step 70 (a resume): the step is the metrics' (run.json lags), and why it waits is said
    assert f"{run_dir.name}: queued at step 70\nwaiting: one run trains at a time in" in shown.stdout
    cancelled = run_cli("runs", "--runs-dir", str(tmp_path / "elsewhere"), "--cancel", run_dir.name)
    assert cancelled.returncode == 0, cancelled.stderr
    assert f"{run_dir.name}: cancel requested (it was queued at step 70); it ends without training" in cancelled.stdout
    assert "{" not in cancelled.stdout


def test_resume_takes_a_run_id_and_refuses_options_it_would_ignore(tmp_path):
    """`train --resume RUN --steps 5 --lr 0.5` ran to the old budget at the old rate, silently;
    `--resume ID --runs-dir X` looked for ./ID."""
    run_dir = _queued_run(tmp_path / "elsewhere", [])
    one_line_error(run_cli("train", "--resume", str(run_dir), "--steps", "5", "--lr", "0.5"),
                   "--resume continues a run with the settings it started with; --lr, --steps would not apply")
    by_id = run_cli("train", "--resume", run_dir.name, "--runs-dir", str(tmp_path / "elsewhere"))
    one_line_error(by_id, f"run {run_dir.name} is still queued")  # found by its id (and not resumable while queued)


def test_train_hints_name_the_runs_folder_they_need(tmp_path, capsys, monkeypatch):
    """After `train --runs-dir X`, the hint 'cancel with: albert-lab runs --cancel ID' found no such run."""
    import albert_lab.training.runs as runs
    from albert_lab.cli.train import _follow

    run_dir = _queued_run(tmp_path / "elsewhere", [])
    _follow(run_dir, detach=True)
    assert f"albert-lab runs --show {run_dir.name} --runs-dir {tmp_path / 'elsewhere'}" in capsys.readouterr().out

    def interrupted(path):
        raise KeyboardInterrupt

    monkeypatch.setattr(runs, "read_run", interrupted)  # Ctrl-C while following
    _follow(run_dir, detach=False)
    assert f"albert-lab runs --cancel {run_dir.name} --runs-dir {tmp_path / 'elsewhere'}" in capsys.readouterr().err


def test_following_a_run_into_a_log_prints_a_line_per_new_step(tmp_path, capsys, monkeypatch):
    """Into a file (not a terminal) the progress bar was repeated every second with '\\r': 17
    copies of the same line during one final evaluation."""
    import albert_lab.training.runs as runs
    from albert_lab.cli.train import _follow
    from albert_lab.training.runs import update_run

    row = {"kind": "train", "step": 4, "loss": 7.5, "tokens_per_s": 900.0, "elapsed_s": 4.0, "eta_s": 1.0}
    run_dir = _queued_run(tmp_path / "elsewhere", [row])
    update_run(run_dir, status="running", pid=None)
    reads, read_run = [], runs.read_run

    def read(path):  # four polls of a run at step 4, then it has finished
        reads.append(path)
        if len(reads) == 4:
            update_run(run_dir, status="succeeded", step=4)
        return read_run(path)

    monkeypatch.setattr(runs, "read_run", read)
    monkeypatch.setattr("time.sleep", lambda s: None)
    _follow(run_dir, detach=False)
    err = capsys.readouterr().err
    assert err.count("step 4 loss 7.500") == 1 and "\r" not in err, err
