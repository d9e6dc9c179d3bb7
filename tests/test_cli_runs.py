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
    cancelled = run_cli("runs", "--runs-dir", str(tmp_path / "elsewhere"), "--cancel", run_dir.name)
    assert cancelled.returncode == 0 and f"{run_dir.name}: cancel requested (it was queued at step 0)" in cancelled.stdout
    assert "{" not in cancelled.stdout


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
